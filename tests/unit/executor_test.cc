// The process executor runs real processes: these tests fork, exec /bin/sh and send signals.
#include "agent/executor.h"

#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "agent/cgroup.h"
#include "agent/posix_env.h"

namespace baton::agent {
namespace {

namespace fs = std::filesystem;

Env& TestEnv() {
  static PosixEnv env;
  return env;
}

class ExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "baton-exec-XXXXXX").string();
    dir_ = mkdtemp(tmpl.data());
  }
  void TearDown() override { fs::remove_all(dir_); }

  ProcessSpec Shell(const std::string& script) {
    ProcessSpec s;
    s.argv = {"/bin/sh", "-c", script};
    s.env = {"PATH=/usr/bin:/bin", "GREETING=hello"};
    s.workdir = dir_;
    s.log_path = dir_ + "/job.log";
    s.status_path = dir_ + "/job.status";
    s.pid_path = dir_ + "/job.pid";
    return s;
  }

  // Waits (reaping shims, as the agent does) until the status file appears.
  std::optional<ExitStatus> WaitForExit(const ProcessSpec& spec,
                                        std::chrono::seconds limit = std::chrono::seconds(20)) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
      exec_.Reap();
      if (auto st = ReadExitStatus(TestEnv(), spec.status_path)) return st;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return std::nullopt;
  }

  std::string Log() {
    std::ifstream in(dir_ + "/job.log");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  std::string dir_;
  // The job's pid, once the shim has written it.
  pid_t JobPid(const ProcessSpec& spec) {
    for (int i = 0; i < 2000; ++i) {
      if (pid_t p = ReadJobPid(TestEnv(), spec.pid_path); p != 0) return p;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return 0;
  }

  ProcessExecutor exec_{TestEnv(), BATON_SHIM};
};

TEST_F(ExecutorTest, AFencedJobsStatusSaysWhetherTheSignalOrItsOwnExitEndedIt) {
  auto read = [&](const std::string& text) {
    std::ofstream(dir_ + "/status") << text << "\n";
    return ReadExitStatus(TestEnv(), dir_ + "/status");
  };
  std::optional<ExitStatus> st = read("fenced-exit 143");  // a SIGTERM trap that exits 143
  ASSERT_TRUE(st.has_value());
  EXPECT_TRUE(st->fenced);
  EXPECT_EQ(st->exit_code, 143);
  EXPECT_EQ(st->signal, 0);
  st = read("fenced 9");  // SIGKILL after the grace
  ASSERT_TRUE(st.has_value());
  EXPECT_TRUE(st->fenced);
  EXPECT_EQ(st->signal, 9);
  // An older shim wrote its job's own exit code as "fenced N" too: past the last signal, N
  // can only be an exit code, never reported as a signal the controller refuses.
  st = read("fenced 143");
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->exit_code, 143);
  EXPECT_EQ(st->signal, 0);
  EXPECT_FALSE(read("signal 143").has_value());  // no such signal
  EXPECT_FALSE(read("signal 0").has_value());
  EXPECT_EQ(read("signal 15")->signal, 15);
}

TEST_F(ExecutorTest, ASigtermTrapThatExitsOnTheFenceIsRecordedAsItsExitCode) {
  // The fence (a lease whose deadline has passed, beside the status file): the shim sends
  // SIGTERM within a second, the job's trap exits 143.
  ProcessSpec spec = Shell("trap 'exit 143' TERM; echo up; while true; do sleep 0.05; done");
  std::ofstream(dir_ + "/lease") << "1 1000\n";
  auto started = exec_.Start(spec);
  ASSERT_TRUE(started.has_value()) << started.error().message();
  std::optional<ExitStatus> st = WaitForExit(spec);
  ASSERT_TRUE(st.has_value());
  EXPECT_TRUE(st->fenced);
  EXPECT_EQ(st->exit_code, 143);
  EXPECT_EQ(st->signal, 0);
}

TEST_F(ExecutorTest, RunsTheCommandWithItsEnvironmentAndRecordsTheExitCode) {
  ProcessSpec spec = Shell("echo $GREETING from $(pwd); echo oops >&2; exit 3");
  auto started = exec_.Start(spec);
  ASSERT_TRUE(started.has_value()) << started.error().message();
  auto st = WaitForExit(spec);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->exit_code, 3);
  EXPECT_EQ(st->signal, 0);
  EXPECT_EQ(Log(), "hello from " + fs::canonical(dir_).string() + "\noops\n");
}

TEST_F(ExecutorTest, TheJobLeadsItsOwnProcessGroup) {
  ProcessSpec spec = Shell("ps -o pgid= -p $$ > pgid; ps -o sid= -p $$ > sid");
  auto started = exec_.Start(spec);
  ASSERT_TRUE(started.has_value());
  pid_t job_pid = JobPid(spec);
  ASSERT_TRUE(WaitForExit(spec).has_value());
  std::ifstream in(dir_ + "/pgid");
  pid_t pgid = 0;
  in >> pgid;
  EXPECT_NE(job_pid, 0);
  EXPECT_EQ(pgid, job_pid);
  EXPECT_NE(pgid, getpgrp());
}

TEST_F(ExecutorTest, AProgramThatDoesNotExistFailsWith127) {
  ProcessSpec spec = Shell("");
  spec.argv = {"/nonexistent/program"};
  auto started = exec_.Start(spec);
  ASSERT_TRUE(started.has_value());
  auto st = WaitForExit(spec);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->exit_code, 127);
  EXPECT_NE(Log().find("/nonexistent/program"), std::string::npos) << Log();
}

TEST_F(ExecutorTest, SignallingTheGroupEndsTheWholeProcessTree) {
  // A job that starts grandchildren which ignore SIGTERM and outlive their parent shell.
  ProcessSpec spec =
      Shell("trap '' TERM; (trap '' TERM; sleep 300) & (sleep 300) & echo $! > child; wait");
  auto started = exec_.Start(spec);
  ASSERT_TRUE(started.has_value());
  for (int i = 0; i < 400 && !fs::exists(dir_ + "/child"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  pid_t job_pid = JobPid(spec);
  ASSERT_NE(job_pid, 0);
  exec_.Signal(job_pid, SIGKILL);
  auto st = WaitForExit(spec);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->signal, SIGKILL);
  // No process is left in the job's group.
  for (int i = 0; i < 200 && kill(-job_pid, 0) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_NE(kill(-job_pid, 0), 0) << "processes of the job's group are still alive";
}

TEST_F(ExecutorTest, TheShimIsTrackedByPidAndStartTime) {
  ProcessSpec spec = Shell("sleep 0.3");
  auto started = exec_.Start(spec);
  ASSERT_TRUE(started.has_value());
  EXPECT_TRUE(exec_.Alive(started->shim_pid, started->shim_start_ticks));
  EXPECT_FALSE(exec_.Alive(started->shim_pid, started->shim_start_ticks + 1));
  ASSERT_TRUE(WaitForExit(spec).has_value());
  exec_.Reap();
  for (int i = 0; i < 100 && exec_.Alive(started->shim_pid, started->shim_start_ticks); ++i) {
    exec_.Reap();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(exec_.Alive(started->shim_pid, started->shim_start_ticks));
}

// The parent pid of a process, from /proc/PID/stat (0 when it is gone).
pid_t ParentOf(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  size_t close_paren = line.rfind(')');
  if (close_paren == std::string::npos) return 0;
  std::istringstream rest(line.substr(close_paren + 2));
  char state = 0;
  pid_t parent = 0;
  rest >> state >> parent;
  return parent;
}

// Whether `executor.Reap()` reports `shim` within about 2 s.
bool ReapedWithin(ProcessExecutor& executor, pid_t shim) {
  for (int i = 0; i < 400; ++i) {
    for (pid_t p : executor.Reap()) {
      if (p == shim) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

TEST_F(ExecutorTest, ShimsComeFromOneZygoteAndADeadZygoteIsReplacedWhileItsShimsRunOn) {
  ProcessSpec first = Shell("sleep 0.5; echo first done");
  auto a = exec_.Start(first);
  ASSERT_TRUE(a.has_value()) << a.error().message();
  pid_t zygote = exec_.zygote_pid();
  ASSERT_GT(zygote, 0);
  EXPECT_EQ(ParentOf(a->shim_pid), zygote);
  // A second job: the same zygote, another shim.
  ProcessSpec quick = Shell("exit 4");
  quick.status_path = dir_ + "/quick.status";
  quick.pid_path = dir_ + "/quick.pid";
  auto b = exec_.Start(quick);
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(exec_.zygote_pid(), zygote);
  EXPECT_NE(b->shim_pid, a->shim_pid);
  // Its end is told by the zygote, which reaps it.
  EXPECT_TRUE(ReapedWithin(exec_, b->shim_pid));
  EXPECT_EQ(ReadExitStatus(TestEnv(), quick.status_path)->exit_code, 4);
  // The zygote dies; the first job runs on, and its end is still found.
  kill(zygote, SIGKILL);
  EXPECT_TRUE(ReapedWithin(exec_, a->shim_pid));
  ASSERT_TRUE(ReadExitStatus(TestEnv(), first.status_path).has_value());
  EXPECT_EQ(ReadExitStatus(TestEnv(), first.status_path)->exit_code, 0);
  EXPECT_NE(Log().find("first done"), std::string::npos);
  // The next job gets a new zygote.
  ProcessSpec next = Shell("exit 0");
  next.status_path = dir_ + "/next.status";
  next.pid_path = dir_ + "/next.pid";
  auto c = exec_.Start(next);
  ASSERT_TRUE(c.has_value());
  EXPECT_GT(exec_.zygote_pid(), 0);
  EXPECT_NE(exec_.zygote_pid(), zygote);
  ASSERT_TRUE(WaitForExit(next).has_value());
}

TEST_F(ExecutorTest, WithoutAZygoteEachShimIsSpawnedByTheExecutor) {
  ProcessExecutor plain(TestEnv(), BATON_SHIM, false);
  ProcessSpec spec = Shell("exit 3");
  auto started = plain.Start(spec);
  ASSERT_TRUE(started.has_value());
  EXPECT_EQ(plain.zygote_pid(), 0);
  EXPECT_EQ(ParentOf(started->shim_pid), getpid());
  EXPECT_TRUE(ReapedWithin(plain, started->shim_pid));
  EXPECT_EQ(ReadExitStatus(TestEnv(), spec.status_path)->exit_code, 3);
}

TEST_F(ExecutorTest, AMissingShimIsAClearError) {
  ProcessExecutor missing(TestEnv(), "/nonexistent/baton-shim");
  Status st = missing.Check();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("/nonexistent/baton-shim"), std::string::npos);
  EXPECT_FALSE(missing.Start(Shell("true")).has_value());
}

TEST(ReadExitStatus, ParsesOnlyWellFormedFiles) {
  std::string path =
      (fs::temp_directory_path() / ("baton-status-" + std::to_string(getpid()))).string();
  EXPECT_FALSE(ReadExitStatus(TestEnv(), path).has_value());
  std::ofstream(path) << "exit 4\n";
  EXPECT_EQ(ReadExitStatus(TestEnv(), path)->exit_code, 4);
  std::ofstream(path) << "signal 15\n";
  EXPECT_EQ(ReadExitStatus(TestEnv(), path)->signal, 15);
  std::ofstream(path) << "garbage";
  EXPECT_FALSE(ReadExitStatus(TestEnv(), path).has_value());
  std::ofstream(path) << "exit 1x\n";
  EXPECT_FALSE(ReadExitStatus(TestEnv(), path).has_value());
  std::ofstream(path) << "stopped 3\n";
  EXPECT_FALSE(ReadExitStatus(TestEnv(), path).has_value());
  // A line without its newline is not taken: it is not all there.
  std::ofstream(path) << "exit 1";
  EXPECT_FALSE(ReadExitStatus(TestEnv(), path).has_value());
  fs::remove(path);
}

TEST(ReadJobPid, TakesOnlyAWholeLine) {
  std::string path =
      (fs::temp_directory_path() / ("baton-pid-" + std::to_string(getpid()))).string();
  EXPECT_EQ(ReadJobPid(TestEnv(), path), 0);
  std::ofstream(path) << "12345\n";
  EXPECT_EQ(ReadJobPid(TestEnv(), path), 12345);
  // Part of "12345\n" must never be taken for pid 12: that would signal another process group.
  std::ofstream(path) << "12";
  EXPECT_EQ(ReadJobPid(TestEnv(), path), 0);
  std::ofstream(path) << "1\n";  // init, never a job
  EXPECT_EQ(ReadJobPid(TestEnv(), path), 0);
  std::ofstream(path) << "-5\n";
  EXPECT_EQ(ReadJobPid(TestEnv(), path), 0);
  fs::remove(path);
}

}  // namespace
}  // namespace baton::agent

namespace baton::agent {
namespace {

TEST_F(ExecutorTest, TheJobRunsOnTheCpusItIsBoundTo) {
  ProcessSpec spec = Shell("grep Cpus_allowed_list /proc/self/status");
  spec.cpus = "0";
  spec.memory_node = 0;
  ASSERT_TRUE(exec_.Start(spec).has_value());
  ASSERT_TRUE(WaitForExit(spec).has_value());
  EXPECT_NE(Log().find("Cpus_allowed_list:\t0\n"), std::string::npos) << Log();
  EXPECT_EQ(Log().find("baton:"), std::string::npos) << Log();
}

TEST_F(ExecutorTest, ABindingThatCannotBeMadeIsSaidInTheLogAndTheJobStillRuns) {
  ProcessSpec spec = Shell("echo ran");
  spec.cpus = "1000-1001";  // no such CPUs here
  spec.memory_node = 999;
  ASSERT_TRUE(exec_.Start(spec).has_value());
  auto st = WaitForExit(spec);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->exit_code, 0);
  EXPECT_NE(Log().find("baton: cannot bind the job to CPUs 1000-1001"), std::string::npos) << Log();
  EXPECT_NE(Log().find("cannot prefer the memory of NUMA node 999"), std::string::npos) << Log();
  EXPECT_NE(Log().find("ran\n"), std::string::npos) << Log();
}

// Issue #5: a job runs as its submitting Unix user and in its cgroup.

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST_F(ExecutorTest, AJobRunsAsItsUserAndJoinsItsCgroupWhileStillRoot) {
  if (geteuid() != 0) GTEST_SKIP() << "only root can run a job as another user";
  const struct passwd* nobody = getpwnam("nobody");
  if (nobody == nullptr) GTEST_SKIP() << "this machine has no user nobody";
  const uid_t uid = nobody->pw_uid;
  const gid_t gid = nobody->pw_gid;
  // A fake group in the test's directory, which is root's alone (0700): only a child that
  // joins before it drops root can write its cgroup.procs.
  std::string group = dir_ + "/cg";
  fs::create_directories(group);
  { std::ofstream procs(group + "/cgroup.procs"); }
  ProcessSpec spec = Shell("id -u; id -g");
  spec.workdir = "/";  // nobody may not enter the test's directory
  spec.run_as = "nobody";
  spec.cgroup = group;
  ASSERT_TRUE(exec_.Start(spec).has_value());
  auto st = WaitForExit(spec);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->exit_code, 0) << Log();
  EXPECT_EQ(Log(), std::to_string(uid) + "\n" + std::to_string(gid) + "\n");
  EXPECT_EQ(ReadAll(group + "/cgroup.procs"), "0");
}

TEST_F(ExecutorTest, AJobRunsAsRootWhenItsUserIsRoot) {
  if (geteuid() != 0) GTEST_SKIP() << "only root can run a job as root";
  ProcessSpec spec = Shell("id -u");
  spec.run_as = "root";
  ASSERT_TRUE(exec_.Start(spec).has_value());
  auto st = WaitForExit(spec);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->exit_code, 0) << Log();
  EXPECT_EQ(Log(), "0\n");
}

TEST_F(ExecutorTest, WithoutRootAJobForAnotherUserDoesNotRunAtAll) {
  if (geteuid() == 0) GTEST_SKIP() << "as root the switch succeeds (see the test above)";
  const struct passwd* nobody = getpwnam("nobody");
  if (nobody == nullptr || nobody->pw_uid == geteuid()) GTEST_SKIP() << "no other user nobody";
  ProcessSpec spec = Shell("echo ran");
  spec.run_as = "nobody";
  ASSERT_TRUE(exec_.Start(spec).has_value());
  auto st = WaitForExit(spec);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->exit_code, 126);
  EXPECT_NE(Log().find("baton: cannot run the job as its user"), std::string::npos) << Log();
  EXPECT_EQ(Log().find("ran\n"), std::string::npos) << Log();
}

TEST_F(ExecutorTest, AnUnknownUserIsRefusedByName) {
  ProcessSpec spec = Shell("echo ran");
  spec.run_as = "baton-no-such-user";
  auto started = exec_.Start(spec);
  ASSERT_FALSE(started.has_value());
  EXPECT_EQ(started.error().message(), "no such user 'baton-no-such-user' on this node");
}

TEST(ShimIdentity, NamesUidGidAndGroupsAndRefusesASecondNameForRoot) {
  auto root = ShimIdentity("root");
  ASSERT_TRUE(root.has_value()) << root.error().message();
  EXPECT_EQ(root->rfind("0:0:", 0), 0u) << *root;
  if (const struct passwd* nobody = getpwnam("nobody")) {
    auto id = ShimIdentity("nobody");
    ASSERT_TRUE(id.has_value());
    EXPECT_EQ(
        id->rfind(std::to_string(nobody->pw_uid) + ":" + std::to_string(nobody->pw_gid) + ":", 0),
        0u)
        << *id;
  }
  EXPECT_FALSE(ShimIdentity("baton-no-such-user").has_value());
}

TEST_F(ExecutorTest, TheJobWritesItselfIntoItsCgroup) {
  std::string group = dir_ + "/cg";
  fs::create_directories(group);
  { std::ofstream procs(group + "/cgroup.procs"); }
  ProcessSpec spec = Shell("echo ran");
  spec.cgroup = group;
  ASSERT_TRUE(exec_.Start(spec).has_value());
  auto st = WaitForExit(spec);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->exit_code, 0);
  EXPECT_EQ(Log(), "ran\n");
  EXPECT_EQ(ReadAll(group + "/cgroup.procs"), "0");  // "0": the process that writes
}

// The host's own cgroup hierarchy, as the agent uses it (v2, or v1's hierarchies on a host that
// has them, as this VM): the job is in its group from its first instruction. (The shim creates it
// there with clone3 and CLONE_INTO_CGROUP; a plain directory, as in the test above, makes it fall
// back to writing cgroup.procs.)
TEST_F(ExecutorTest, TheJobRunsInARealCgroupFromItsFirstInstruction) {
  if (geteuid() != 0) GTEST_SKIP() << "only root creates cgroups on this host";
  CgroupManager cgroups = CgroupManager::Detect();
  if (!cgroups.usable()) GTEST_SKIP() << "no writable cgroup hierarchy: " << cgroups.describe();
  std::string name = "executor-test-" + std::to_string(getpid());
  auto group = cgroups.Create(name, {});
  ASSERT_TRUE(group.has_value()) << group.error().message();
  ProcessSpec spec = Shell("cat /proc/self/cgroup");
  spec.cgroup = *group;
  ASSERT_TRUE(exec_.Start(spec).has_value());
  auto st = WaitForExit(spec);
  EXPECT_TRUE(cgroups.Remove(*group).ok());
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->exit_code, 0);
  std::string log = Log();
  EXPECT_EQ(log.find("cannot join cgroup"), std::string::npos) << log;
  if (cgroups.version() == 1) {
    // cgroup v1's lines, "N:CONTROLLER:PATH": the job's group in each hierarchy.
    for (const char* c : {"memory", "cpu", "cpuset", "pids", "devices"}) {
      if (!cgroups.Has(c)) continue;
      size_t at = log.find(std::string(":") + c + ":");
      ASSERT_NE(at, std::string::npos) << c << " in " << log;
      at += strlen(c) + 2;
      std::string path = log.substr(at, log.find('\n', at) - at);
      EXPECT_TRUE(path.ends_with("/" + name)) << c << ": " << path;
      EXPECT_NE(group->find(path), std::string::npos) << *group << " vs " << path;
    }
    return;
  }
  // cgroup v2's line, "0::PATH", PATH being the group below the cgroup2 mount point.
  size_t at = log.find("0::");
  ASSERT_NE(at, std::string::npos) << log;
  std::string path = log.substr(at + 3, log.find('\n', at) - at - 3);
  EXPECT_TRUE(path.ends_with("/" + name)) << path;
  EXPECT_TRUE(group->ends_with(path)) << *group << " vs " << path;
}

TEST_F(ExecutorTest, ACgroupThatCannotBeJoinedIsSaidInTheLogAndTheJobStillRuns) {
  ProcessSpec spec = Shell("echo ran");
  spec.cgroup = dir_ + "/no-such-group";
  ASSERT_TRUE(exec_.Start(spec).has_value());
  auto st = WaitForExit(spec);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->exit_code, 0);
  EXPECT_NE(Log().find("baton: cannot join cgroup " + dir_ + "/no-such-group: "), std::string::npos)
      << Log();
  EXPECT_NE(Log().find("the job runs without its limits\nran\n"), std::string::npos) << Log();
}

}  // namespace
}  // namespace baton::agent
