// The agent's MPS daemons (agent/mps.h, issue 42) against the real control daemon, Debian's
// nvidia-cuda-mps (scripts/install-deps installs it): its control daemon runs without a GPU,
// so its whole lifecycle is tested here: started for a GPU's first shared job with that job's
// limits, read back through its pipe; raised and lowered as jobs come and go; started again
// when it dies; one user's at a time; kept for live jobs and stopped as an orphan by a
// restarted agent; stopped with the GPU's last job.
#include "agent/mps.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "agent/posix_env.h"

namespace baton::agent {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kGiB = int64_t{1} << 30;

class Mps : public ::testing::Test {
 protected:
  void SetUp() override {
    signal(SIGPIPE, SIG_IGN);  // as the agent's process does
    std::string tmpl = (fs::temp_directory_path() / "baton-mps-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);  // other users reach DATA, as a real one's
  }
  void TearDown() override {
    // Whatever a test left running under its directory, stopped as a restarted agent would.
    MpsDaemons(Options(), env_).Recover({});
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  MpsDaemons::Options Options() const {
    return MpsDaemons::Options{.dir = dir_ + "/mps", .timeout = std::chrono::seconds(10)};
  }
  static MpsGpu Gpu(int index) {
    return MpsGpu{.index = index,
                  .cuda_name = "GPU-00000000-0000-4000-8000-00000000000" + std::to_string(index),
                  .memory_bytes = 80 * kGiB};
  }
  bool Alive(pid_t pid) { return pid > 0 && env_.ProcessStartTicks(pid) != 0; }
  static struct stat Stat(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
    return st;
  }
  std::string dir_;
  PosixEnv env_;
  const MpsUser root_{.uid = 0, .gid = 0, .name = "root"};
  const MpsUser nobody_{.uid = 65534, .gid = 65534, .name = "nobody"};
};

TEST_F(Mps, TheFirstSharedJobStartsTheDaemonWithItsLimitsAndTheLastStopsIt) {
  MpsDaemons mps(Options(), env_);
  const JobAttempt a{JobId{1}, 0}, b{JobId{2}, 0};
  auto pipe = mps.Join(a, Gpu(0), root_, MpsShareOf(250, 10 * kGiB));
  ASSERT_TRUE(pipe.has_value()) << pipe.error().message();
  EXPECT_EQ(*pipe, dir_ + "/mps/gpu0/pipe");
  const MpsDaemons::Daemon* d = mps.Find(0);
  ASSERT_NE(d, nullptr);
  const pid_t pid = d->pid;
  EXPECT_TRUE(Alive(pid));
  // Its limits, as the daemon holds them: read back through its own pipe.
  EXPECT_EQ(*mps.Command(0, "get_default_active_thread_percentage"), "25.0");
  auto memory = mps.Command(0, "get_default_device_pinned_mem_limit 0");
  ASSERT_TRUE(memory.has_value());
  EXPECT_TRUE(*memory == "10G" || *memory == "10240M") << *memory;
  EXPECT_TRUE(fs::exists(*pipe + "/control"));

  // A larger share on the same GPU raises the caps, on the same daemon; its end lowers them.
  ASSERT_TRUE(mps.Join(b, Gpu(0), root_, MpsShareOf(500, 20 * kGiB)).has_value());
  EXPECT_EQ(mps.Find(0)->pid, pid);
  EXPECT_EQ(*mps.Command(0, "get_default_active_thread_percentage"), "50.0");
  memory = mps.Command(0, "get_default_device_pinned_mem_limit 0");
  EXPECT_TRUE(*memory == "20G" || *memory == "20480M") << *memory;
  mps.Leave(b);
  EXPECT_EQ(*mps.Command(0, "get_default_active_thread_percentage"), "25.0");

  // The last job's end stops the daemon and clears its sockets away.
  mps.Leave(a);
  EXPECT_EQ(mps.Find(0), nullptr);
  EXPECT_FALSE(Alive(pid));
  EXPECT_FALSE(fs::exists(*pipe));
  EXPECT_TRUE(fs::exists(dir_ + "/mps/gpu0/log/control.log"));  // the log stays for a look
}

TEST_F(Mps, AJobThatAskedNoMemoryLeavesTheDefaultAtTheWholeGpu) {
  MpsDaemons mps(Options(), env_);
  ASSERT_TRUE(mps.Join({JobId{1}, 0}, Gpu(0), root_, MpsShareOf(500, 8 * kGiB)).has_value());
  ASSERT_TRUE(mps.Join({JobId{2}, 0}, Gpu(0), root_, MpsShareOf(250, 0)).has_value());
  auto memory = mps.Command(0, "get_default_device_pinned_mem_limit 0");
  ASSERT_TRUE(memory.has_value());
  EXPECT_TRUE(*memory == "80G" || *memory == "81920M") << *memory;
  EXPECT_EQ(*mps.Command(0, "get_default_active_thread_percentage"), "50.0");
}

TEST_F(Mps, ItsDirectoriesAreTheServedUsersAndTheAgentsAlone) {
  ASSERT_EQ(geteuid(), 0u) << "this test gives a pipe directory to another user";
  MpsDaemons mps(Options(), env_);
  auto pipe = mps.Join({JobId{1}, 0}, Gpu(0), nobody_, MpsShareOf(500, 0));
  ASSERT_TRUE(pipe.has_value()) << pipe.error().message();
  struct stat p = Stat(*pipe);
  EXPECT_EQ(p.st_mode & 07777, 0700u);
  EXPECT_EQ(p.st_uid, 65534u);
  struct stat l = Stat(mps.LogDir(0));
  EXPECT_EQ(l.st_mode & 07777, 0700u);
  EXPECT_EQ(l.st_uid, 0u);
  EXPECT_EQ(Stat(dir_ + "/mps/gpu0").st_mode & 07777, 0755u);
  // As the served user and as another one would try it.
  EXPECT_EQ(std::system(("setpriv --reuid=65534 --regid=65534 --clear-groups ls " + *pipe +
                         "/control >/dev/null 2>&1")
                            .c_str()),
            0);
  EXPECT_NE(std::system(("setpriv --reuid=1 --regid=1 --clear-groups ls " + *pipe +
                         "/control >/dev/null 2>&1")
                            .c_str()),
            0);
  EXPECT_NE(std::system(("setpriv --reuid=1 --regid=1 --clear-groups ls " + mps.LogDir(0) +
                         " >/dev/null 2>&1")
                            .c_str()),
            0);
}

TEST_F(Mps, ADaemonServesOneUsersJobsAtATime) {
  MpsDaemons mps(Options(), env_);
  ASSERT_TRUE(mps.Join({JobId{1}, 0}, Gpu(0), nobody_, MpsShareOf(500, 0)).has_value());
  auto other = mps.Join({JobId{2}, 0}, Gpu(0), root_, MpsShareOf(250, 0));
  ASSERT_FALSE(other.has_value());
  EXPECT_NE(other.error().message().find("serves user nobody's jobs"), std::string::npos)
      << other.error().message();
  EXPECT_EQ(mps.Find(0)->jobs.size(), 1u);  // the refused job is not counted on the GPU
  // On another GPU that user gets a daemon of their own.
  ASSERT_TRUE(mps.Join({JobId{2}, 0}, Gpu(1), root_, MpsShareOf(250, 0)).has_value());
  EXPECT_NE(mps.Find(1)->pid, mps.Find(0)->pid);
  // Once the first user's last job has ended, the GPU is the next user's.
  mps.Leave({JobId{1}, 0});
  EXPECT_TRUE(mps.Join({JobId{3}, 0}, Gpu(0), root_, MpsShareOf(250, 0)).has_value());
}

TEST_F(Mps, ADaemonThatDiesIsStartedAgainWithItsLimits) {
  MpsDaemons mps(Options(), env_);
  ASSERT_TRUE(mps.Join({JobId{1}, 0}, Gpu(0), root_, MpsShareOf(300, 4 * kGiB)).has_value());
  const pid_t first = mps.Find(0)->pid;
  ASSERT_EQ(kill(first, SIGKILL), 0);
  for (int i = 0; i < 200 && Alive(first); ++i) usleep(10'000);
  ASSERT_FALSE(Alive(first));
  mps.Check();
  const MpsDaemons::Daemon* d = mps.Find(0);
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->pid, first);
  EXPECT_TRUE(Alive(d->pid));
  EXPECT_EQ(d->restarts, 1);
  EXPECT_EQ(*mps.Command(0, "get_default_active_thread_percentage"), "30.0");
  auto memory = mps.Command(0, "get_default_device_pinned_mem_limit 0");
  EXPECT_TRUE(*memory == "4G" || *memory == "4096M") << *memory;
  // A live one is left alone.
  mps.Check();
  EXPECT_EQ(mps.Find(0)->restarts, 1);
}

TEST_F(Mps, ARestartedAgentKeepsTheDaemonsOfLiveJobsAndStopsOrphans) {
  pid_t kept = 0, orphan = 0;
  {
    MpsDaemons before(Options(), env_);
    ASSERT_TRUE(before.Join({JobId{1}, 0}, Gpu(0), root_, MpsShareOf(500, 0)).has_value());
    ASSERT_TRUE(before.Join({JobId{2}, 0}, Gpu(1), root_, MpsShareOf(250, 0)).has_value());
    kept = before.Find(0)->pid;
    orphan = before.Find(1)->pid;
  }  // the agent went away; its daemons did not
  ASSERT_TRUE(Alive(kept));
  ASSERT_TRUE(Alive(orphan));
  MpsDaemons after(Options(), env_);
  // Job 1 outlived the agent; job 2 ended while it was away.
  after.Recover({MpsDaemons::Live{
      .job = {JobId{1}, 0}, .gpu = Gpu(0), .user = root_, .share = MpsShareOf(500, 0)}});
  ASSERT_NE(after.Find(0), nullptr);
  EXPECT_EQ(after.Find(0)->pid, kept);
  EXPECT_TRUE(Alive(kept));
  EXPECT_EQ(after.Find(1), nullptr);
  for (int i = 0; i < 200 && Alive(orphan); ++i) usleep(10'000);
  EXPECT_FALSE(Alive(orphan));
  EXPECT_FALSE(fs::exists(after.PipeDir(1)));
  EXPECT_EQ(*after.Command(0, "get_default_active_thread_percentage"), "50.0");
  // The kept daemon is the job's as any other: its end stops it.
  after.Leave({JobId{1}, 0});
  EXPECT_FALSE(Alive(kept));
}

TEST_F(Mps, WithoutTheControlProgramAJobIsToldWhyAndNothingIsLeft) {
  MpsDaemons::Options o = Options();
  o.program = dir_ + "/no-such/nvidia-cuda-mps-control";
  MpsDaemons mps(o, env_);
  auto pipe = mps.Join({JobId{1}, 0}, Gpu(0), root_, MpsShareOf(500, 0));
  ASSERT_FALSE(pipe.has_value());
  EXPECT_NE(pipe.error().message().find("cannot run"), std::string::npos) << pipe.error().message();
  EXPECT_EQ(mps.Find(0), nullptr);
  MpsDaemons off(MpsDaemons::Options{.dir = dir_ + "/mps", .program = ""}, env_);
  auto refused = off.Join({JobId{1}, 0}, Gpu(0), root_, MpsShareOf(500, 0));
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message().find("MPS is off"), std::string::npos);
}

TEST(MpsShare, IsTheShareInPercentOfThreadsAndTheMemoryAsked) {
  EXPECT_EQ(MpsShareOf(250, 0), (MpsShare{.thread_percent = 25, .memory_bytes = 0}));
  EXPECT_EQ(MpsShareOf(5, kGiB), (MpsShare{.thread_percent = 1, .memory_bytes = kGiB}));
  EXPECT_EQ(MpsShareOf(999, -1), (MpsShare{.thread_percent = 99, .memory_bytes = 0}));
}

}  // namespace
}  // namespace baton::agent
