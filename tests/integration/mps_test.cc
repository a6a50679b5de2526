// A fractional job under MPS, through the real binary (issue 42): `baton up`'s agent starts an
// MPS control daemon (Debian's nvidia-cuda-mps, which runs without a GPU) for the GPU the job
// shares, caps it at the job's share, points the job at it, says so in the job's allocation,
// and stops the daemon when the job ends. MPS serves one user per GPU: the node says it runs
// MPS, and the scheduler gives each user's fractions a GPU of their own (another user's wait for
// one, and are told why); each daemon's pipe is its user's alone. With `--mps-control off` the
// job runs uncapped and both its allocation and its log say so.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "harness.h"

namespace baton::testing {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using namespace std::chrono_literals;

// The line of `log` that starts with `key`=, without it.
std::string ValueIn(const std::string& log, const std::string& key) {
  size_t at = log.find(key + "=");
  if (at == std::string::npos) return "";
  at += key.size() + 1;
  return log.substr(at, log.find('\n', at) - at);
}

std::string AllocationSharing(const BatonProcess& baton, const std::string& id) {
  json::value job = json::parse(GetJob(*baton.Client(), std::stoll(id)));
  const json::array& alloc = job.at("allocation").as_array();
  if (alloc.empty() || !alloc[0].as_object().contains("gpu_sharing")) return "";
  return std::string(alloc[0].at("gpu_sharing").as_string());
}

TEST(Mps, AFractionalJobRunsUnderItsGpusDaemonWhichStopsWithIt) {
  TempDir dir;
  BatonProcess baton(dir.path() + "/server", {"--gpus", "2xH100-80GB"});
  CliResult r =
      RunCli(baton, {"submit", "-g", "0.5", "--gpu-memory", "10GiB", "--",
                     "echo PIPE=$CUDA_MPS_PIPE_DIRECTORY; echo CVD=$CUDA_VISIBLE_DEVICES; "
                     "echo THREADS=$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE; echo ready; "
                     "sleep 60"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string id = FirstLine(r.out);
  auto client = baton.Client();
  std::string log = LogsUntil(*client, std::stoll(id), "ready");
  const std::string pipe = ValueIn(log, "PIPE");
  ASSERT_FALSE(pipe.empty()) << log;
  EXPECT_EQ(pipe.rfind(baton.data_dir() + "/agent/mps/gpu", 0), 0u) << pipe;
  EXPECT_EQ(ValueIn(log, "THREADS"), "50");
  // Named by its UUID, as the daemon sees it (NVIDIA's MPS guide: not by an index).
  EXPECT_EQ(ValueIn(log, "CVD").rfind("GPU-", 0), 0u) << log;
  EXPECT_EQ(AllocationSharing(baton, id), "mps");
  std::string show = RunCli(baton, {"show", id}).out;
  EXPECT_NE(show.find("0.5 of GPU "), std::string::npos) << show;
  EXPECT_NE(show.find("capped by the GPU's MPS daemon"), std::string::npos) << show;

  // The daemon holds the job's caps, as its own front end reads them back.
  CliResult threads = RunShell(
      "echo get_default_active_thread_percentage | "
      "CUDA_MPS_PIPE_DIRECTORY=" +
      pipe + " nvidia-cuda-mps-control");
  EXPECT_EQ(threads.out, "50.0\n") << threads.out;
  CliResult memory = RunShell(
      "echo get_default_device_pinned_mem_limit 0 | "
      "CUDA_MPS_PIPE_DIRECTORY=" +
      pipe + " nvidia-cuda-mps-control");
  EXPECT_TRUE(memory.out == "10G\n" || memory.out == "10240M\n") << memory.out;
  struct stat st {};
  ASSERT_EQ(stat(pipe.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);  // the job's user's alone (root's here)

  // The job's end stops its GPU's daemon: nothing of it is left running.
  ASSERT_EQ(RunCli(baton, {"cancel", id}).exit_code, 0);
  WaitForJob(*client, std::stoll(id));
  EXPECT_TRUE(Within(10s, [&] { return !fs::exists(pipe); })) << pipe;
  CliResult gone = RunShell("echo get_server_list | CUDA_MPS_PIPE_DIRECTORY=" + pipe +
                            " nvidia-cuda-mps-control");
  EXPECT_NE(gone.exit_code, 0) << gone.out;
  EXPECT_EQ(AllocationSharing(baton, id), "mps");  // kept with the ended job
}

int AllocationGpu(const BatonProcess& baton, const std::string& id) {
  json::value job = json::parse(GetJob(*baton.Client(), std::stoll(id)));
  const json::array& alloc = job.at("allocation").as_array();
  if (alloc.empty()) return -1;
  return static_cast<int>(alloc[0].at("gpus").as_array().at(0).to_number<int64_t>());
}

// Two Unix users with tokens of their own, on a `baton up` whose directory others may enter (as
// an operator's /var/lib/baton).
struct TwoUsers {
  int alice_uid = TestUser("btn-alice");
  int bob_uid = TestUser("btn-bob");
  std::string alice, bob;
  explicit TwoUsers(const BatonProcess& baton) {
    auto token = [&](const char* user) {
      CliResult r = RunCli(baton, {"token", "create", "--user", user});
      EXPECT_EQ(r.exit_code, 0) << r.out;
      return r.out.substr(0, r.out.find('\n'));
    };
    alice = token("btn-alice");
    bob = token("btn-bob");
  }
};

// A half-GPU job that prints its pipe directory, whether it can list `probe`, and "ready".
std::vector<std::string> HalfGpuJob(const std::string& probe) {
  return {"submit",
          "-g",
          "0.5",
          "--workdir",
          "/tmp",
          "--",
          "echo PIPE=${CUDA_MPS_PIPE_DIRECTORY:-unset}; ls " + probe +
              " >/dev/null 2>&1 && echo REACHED || echo DENIED; echo ready; sleep 60"};
}

TEST(Mps, EachUsersFractionsGoToAGpuOfTheirOwnWhoseDaemonOnlyTheyReach) {
  ASSERT_EQ(geteuid(), 0u) << "jobs run as their users only under root";
  TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0711), 0);
  BatonProcess baton(dir.path() + "/server", {"--gpus", "2xH100-80GB"});
  TwoUsers users(baton);
  ASSERT_GE(users.alice_uid, 0);
  ASSERT_GE(users.bob_uid, 0);
  auto client = baton.Client();
  // The node says its GPUs' fractions go to one user at a time.
  CliResult nodes = RunCli(baton, {"nodes"});
  EXPECT_NE(nodes.out.find("MPS"), std::string::npos) << nodes.out;

  // Alice's job reaches its daemon's pipe as alice.
  CliResult r = RunCliWithToken(baton, users.alice, HalfGpuJob("$CUDA_MPS_PIPE_DIRECTORY/control"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string a = FirstLine(r.out);
  std::string log = LogsUntil(*client, std::stoll(a), "ready");
  const std::string alice_pipe = ValueIn(log, "PIPE");
  ASSERT_NE(alice_pipe, "unset") << log;
  EXPECT_NE(log.find("REACHED"), std::string::npos) << log;
  struct stat st {};
  ASSERT_EQ(stat(alice_pipe.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, static_cast<uid_t>(users.alice_uid));
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(AllocationSharing(baton, a), "mps");

  // Bob's half goes to the other GPU, under a daemon of his own; alice's he cannot reach.
  r = RunCliWithToken(baton, users.bob, HalfGpuJob(alice_pipe));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string b = FirstLine(r.out);
  log = LogsUntil(*client, std::stoll(b), "ready");
  EXPECT_NE(log.find("DENIED"), std::string::npos) << log;
  const std::string bob_pipe = ValueIn(log, "PIPE");
  ASSERT_NE(bob_pipe, "unset") << log;
  EXPECT_NE(bob_pipe, alice_pipe);
  ASSERT_EQ(stat(bob_pipe.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, static_cast<uid_t>(users.bob_uid));
  EXPECT_EQ(AllocationSharing(baton, b), "mps");
  EXPECT_NE(AllocationGpu(baton, a), AllocationGpu(baton, b));

  // Alice's second half joins her own GPU, not bob's.
  r = RunCliWithToken(baton, users.alice, HalfGpuJob("$CUDA_MPS_PIPE_DIRECTORY/control"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string a2 = FirstLine(r.out);
  log = LogsUntil(*client, std::stoll(a2), "ready");
  EXPECT_EQ(ValueIn(log, "PIPE"), alice_pipe) << log;
  EXPECT_EQ(AllocationGpu(baton, a2), AllocationGpu(baton, a));
  EXPECT_EQ(AllocationSharing(baton, a2), "mps");

  for (const std::string& id : {a, b, a2}) ASSERT_EQ(RunCli(baton, {"cancel", id}).exit_code, 0);
  for (const std::string& id : {a, b, a2}) WaitForJob(*client, std::stoll(id));
  EXPECT_TRUE(Within(10s, [&] { return !fs::exists(alice_pipe) && !fs::exists(bob_pipe); }));
}

TEST(Mps, AnotherUsersFractionWaitsForTheGpuAndSaysWhyThenGetsItsOwnDaemon) {
  ASSERT_EQ(geteuid(), 0u) << "jobs run as their users only under root";
  TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0711), 0);
  BatonProcess baton(dir.path() + "/server", {"--gpus", "1xH100-80GB"});
  TwoUsers users(baton);
  ASSERT_GE(users.bob_uid, 0);
  auto client = baton.Client();
  CliResult r = RunCliWithToken(baton, users.alice, HalfGpuJob("/"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string a = FirstLine(r.out);
  const std::string alice_pipe = ValueIn(LogsUntil(*client, std::stoll(a), "ready"), "PIPE");
  ASSERT_NE(alice_pipe, "unset");

  // Half the GPU is free, but MPS would serve bob only after alice's clients are gone: he waits,
  // and is told so.
  r = RunCliWithToken(baton, users.bob, HalfGpuJob(alice_pipe));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string b = FirstLine(r.out);
  std::string waiting = WaitUntilWaiting(*client, std::stoll(b), "resources");
  ASSERT_FALSE(waiting.empty()) << GetJob(*client, std::stoll(b));
  EXPECT_NE(waiting.find("0.5 of it on GPUs that other users' jobs share: MPS serves one user "
                         "per GPU"),
            std::string::npos)
      << waiting;
  CliResult show = RunCli(baton, {"show", b});
  EXPECT_NE(show.out.find("other users' jobs share"), std::string::npos) << show.out;

  // Alice's end gives bob the GPU, under a daemon of his own.
  ASSERT_EQ(RunCli(baton, {"cancel", a}).exit_code, 0);
  WaitForJob(*client, std::stoll(a));
  std::string log = LogsUntil(*client, std::stoll(b), "ready");
  const std::string bob_pipe = ValueIn(log, "PIPE");
  ASSERT_NE(bob_pipe, "unset") << log;
  struct stat st {};
  ASSERT_EQ(stat(bob_pipe.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, static_cast<uid_t>(users.bob_uid));
  EXPECT_EQ(AllocationSharing(baton, b), "mps");
  ASSERT_EQ(RunCli(baton, {"cancel", b}).exit_code, 0);
  WaitForJob(*client, std::stoll(b));
}

TEST(Mps, WithMpsOffAFractionalJobRunsUncappedAndSaysSo) {
  TempDir dir;
  BatonProcess baton(dir.path() + "/server", {"--gpus", "1xH100-80GB", "--mps-control", "off"});
  CliResult r =
      RunCli(baton, {"submit", "-g", "0.25", "--", "echo PIPE=${CUDA_MPS_PIPE_DIRECTORY:-unset}"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string id = FirstLine(r.out);
  ASSERT_EQ(RunCli(baton, {"wait", id}).exit_code, 0);
  std::string log = RunCli(baton, {"logs", id}).out;
  EXPECT_EQ(ValueIn(log, "PIPE"), "unset");
  EXPECT_NE(log.find("baton: no MPS daemon caps this job's share of GPU 0 (MPS is off on this "
                     "node (baton agent --mps-control off))"),
            std::string::npos)
      << log;
  EXPECT_EQ(AllocationSharing(baton, id), "none");
  EXPECT_NE(RunCli(baton, {"show", id}).out.find("0.25 of GPU 0 on "), std::string::npos);
  EXPECT_NE(RunCli(baton, {"show", id}).out.find("not capped"), std::string::npos);
  EXPECT_FALSE(fs::exists(baton.data_dir() + "/agent/mps/gpu0/pipe"));
  // A whole GPU is no one's to share: no word of MPS.
  r = RunCli(baton, {"submit", "-g", "1", "--", "true"});
  const std::string whole = FirstLine(r.out);
  ASSERT_EQ(RunCli(baton, {"wait", whole}).exit_code, 0);
  EXPECT_EQ(AllocationSharing(baton, whole), "");
  EXPECT_EQ(RunCli(baton, {"logs", whole}).out.find("MPS"), std::string::npos);
}

TEST(Mps, TheAgentRefusesAnEmptyMpsControl) {
  TempDir dir;
  CliResult r = RunShell(std::string(BATON_BINARY) + " up --data " + dir.path() +
                         " --listen 127.0.0.1:0 --mps-control '' 2>&1");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--mps-control"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace baton::testing
