// Job isolation through the real binary: an agent running as root runs each job as its user,
// refuses root's jobs unless allowed, and puts each job in a cgroup with its limits, reporting
// an OOM kill from the group's memory.events.
#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "harness.h"

namespace baton::testing {
namespace {

namespace fs = std::filesystem;

// Sets an environment variable for the scope (the server started inside inherits it).
class ScopedEnv {
 public:
  ScopedEnv(const char* key, const char* value) : key_(key) {
    if (const char* old = std::getenv(key)) old_ = old;
    setenv(key, value, 1);
  }
  ~ScopedEnv() {
    if (old_.empty())
      unsetenv(key_);
    else
      setenv(key_, old_.c_str(), 1);
  }

 private:
  const char* key_;
  std::string old_;
};

TEST(Isolation, AnAgentRunningAsRootRunsEachJobAsItsUser) {
  if (geteuid() != 0) GTEST_SKIP() << "only an agent running as root switches users";
  const struct passwd* nobody = getpwnam("nobody");
  if (nobody == nullptr) GTEST_SKIP() << "this machine has no user nobody";
  uid_t uid = nobody->pw_uid;
  TempDir dir;
  // The admin token acts as the server's $USER: here, nobody.
  ScopedEnv user("USER", "nobody");
  BatonProcess baton(dir.path() + "/server", {"--gpus", "1xH100-80GB"});
  auto c = baton.Client();
  int64_t id = Submit(*c, R"({"command": "id -un; id -u; echo HOME=$HOME", "workdir": "/tmp"})");
  std::string job = WaitForJob(*c, id);
  ASSERT_EQ(JsonString(job, "state"), "succeeded") << job;
  std::string log = LogsUntil(*c, id, "HOME=");
  EXPECT_NE(log.find("nobody\n" + std::to_string(uid) + "\n"), std::string::npos) << log;
  EXPECT_NE(log.find("HOME=" + std::string(nobody->pw_dir)), std::string::npos) << log;
}

TEST(Isolation, RootsJobsRunOnlyWhereTheAgentAllowsIt) {
  if (geteuid() != 0) GTEST_SKIP() << "only an agent running as root refuses root's jobs";
  TempDir dir;
  ScopedEnv user("USER", "root");
  BatonProcess server(dir.path() + "/server", {}, "server");
  AgentProcess agent(server, "n1", dir.path() + "/n1", "1xH100-80GB", {}, /*allow_root=*/false);
  auto c = server.Client();
  ASSERT_TRUE(Within(std::chrono::seconds(10), [&] {
    return RunCli(server, {"nodes"}).out.find("n1") != std::string::npos;
  }));
  // The agent says it refuses root's jobs when it registers: with no other node, a job of
  // root's is refused at submit instead of failing on the node (issue 16).
  auto r = c->Request("POST", "/v1/jobs", R"({"command": ["true"]})");
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_NE(r->body.find("user root: no node in pool default runs root's jobs"), std::string::npos)
      << r->body;
  EXPECT_NE(r->body.find("--allow-root-jobs"), std::string::npos) << r->body;
  auto nodes = c->Request("GET", "/v1/nodes");
  ASSERT_TRUE(nodes);
  EXPECT_NE(nodes->body.find("\"refuses_root_jobs\":true"), std::string::npos) << nodes->body;
}

TEST(Isolation, EachJobGetsACgroupWithItsLimitsAndAnOomKillIsReported) {
  TempDir dir;
  // A stand-in for a delegated cgroup v2 directory with every controller: plain files, which
  // the agent writes as it would the kernel's.
  std::string root = dir.path() + "/cgroup";
  fs::create_directories(root);
  std::ofstream(root + "/cgroup.controllers") << "cpuset cpu io memory hugetlb pids\n";
  std::ofstream(root + "/cgroup.subtree_control") << "";
  BatonProcess baton(dir.path() + "/server",
                     {"--gpus", "1xH100-80GB", "--cgroup-root", root, "--job-pids-max", "512"});
  auto c = baton.Client();
  // The job plays the kernel: it records an OOM kill in its own group's memory.events.
  int64_t id = Submit(*c, "{\"command\": \"for d in " + root +
                              "/*-1.0; do echo 'oom_kill 1' > $d/memory.events; done; exit 137\", "
                              "\"resources\": {\"cpus\": 2, \"memory\": \"1GiB\"}}");
  std::string job = WaitForJob(*c, id);
  EXPECT_EQ(JsonString(job, "state"), "failed") << job;
  EXPECT_NE(job.find("killed by the out-of-memory killer at its memory limit of 1GiB"),
            std::string::npos)
      << job;
  std::string group;
  for (const auto& e : fs::directory_iterator(root)) {
    if (e.is_directory()) group = e.path().string();
  }
  ASSERT_FALSE(group.empty());
  EXPECT_EQ(ReadFile(group + "/memory.max"), "1073741824");
  EXPECT_EQ(ReadFile(group + "/cpu.max"), "200000 100000");
  EXPECT_EQ(ReadFile(group + "/pids.max"), "512");
  // (How the job joins its group is in executor_test.cc: a stand-in directory has no
  // cgroup.procs for it to write to.)
}

}  // namespace
}  // namespace baton::testing
