// Training that survives (issue 17), with real PyTorch (Debian's python3-torch, installed on
// first use): examples/ddp/train.py, a data-parallel job of one process per GPU on two nodes
// (gloo on CPUs: the GPUs are simulated), is preempted by a job of a higher class and, in the
// other test, loses a node with its processes. Either way it checkpoints (on its notice signal,
// or every few steps), is requeued, resumes from the shared checkpoint root, and ends with
// parameters bit-identical to an undisturbed run of the same job.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "harness.h"

namespace baton::testing {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

const std::string kPython = "/usr/bin/python3";

// The job's rendezvous port is its own free one: clusters of other tests on this machine give
// their jobs the same default ports (29500 + id).
std::vector<std::string> TrainArgs(const std::vector<std::string>& before) {
  std::vector<std::string> args = {"submit", "-g",
                                   "4",      "--nodes",
                                   "2",      "--process-per-gpu",
                                   "--env",  "MASTER_PORT=" + std::to_string(MasterPort())};
  args.insert(args.end(), before.begin(), before.end());
  for (const std::string& a :
       {std::string("--"), kPython, std::string(BATON_SOURCE_DIR) + "/examples/ddp/train.py",
        std::string("--steps"), std::string("300"), std::string("--step-time"),
        std::string("0.03")})
    args.push_back(a);
  return args;
}

json::value Show(const BatonProcess& b, const std::string& id) {
  return json::parse(RunCli(b, {"show", id, "--json"}).out);
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Submits the training job, waits for it, and returns its parameters' digest.
// A job's checkpoint directory under the shared root: ROOT/USER/ID.
std::string CheckpointsOf(const BatonProcess& server, const std::string& root,
                          const std::string& id) {
  return root + "/" + std::string(Show(server, id).at("user").as_string()) + "/" + id;
}

std::string UndisturbedDigest(const BatonProcess& server, const std::string& root) {
  CliResult r = RunCli(server, TrainArgs({"--name", "undisturbed"}));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  std::string id = FirstLine(r.out);
  CliResult waited = RunCli(server, {"wait", id});
  EXPECT_EQ(waited.exit_code, 0) << waited.out << RunCli(server, {"logs", id}).out;
  EXPECT_EQ(Show(server, id).at("restarts").as_int64(), 0);
  return Trimmed(ReadFile(CheckpointsOf(server, root, id) + "/final.sha256"));
}

// Writes the configuration (a shared checkpoint root under `dir`); its path.
std::string SharedRootConfig(const std::string& dir) {
  std::ofstream(dir + "/baton.yaml") << "checkpoint_root: " << dir << "/shared-ckpt\n";
  return dir + "/baton.yaml";
}

// A controller and `nodes` agents of 2 GPUs each, with a shared checkpoint root.
struct Cluster {
  explicit Cluster(const std::string& dir, int nodes)
      : root(dir + "/shared-ckpt"),
        config(SharedRootConfig(dir)),
        server(dir + "/server", {"--config", config, "--node-timeout", "5s"}, "server") {
    for (int i = 1; i <= nodes; ++i) {
      std::string name = "n" + std::to_string(i);
      agents.push_back(
          std::make_unique<AgentProcess>(server, name, dir + "/" + name, "2xA100-40GB"));
    }
  }
  std::string root, config;
  BatonProcess server;
  std::vector<std::unique_ptr<AgentProcess>> agents;
};

TEST(Training, APreemptedDataParallelRunResumesAndEndsBitIdentical) {
  if (!TorchThere()) GTEST_FAIL() << "python3-torch could not be installed or imported";
  TempDir dir;
  Cluster c(dir.path(), 2);
  auto client = c.server.Client();
  ASSERT_TRUE(NodesReady(*client, 2));
  std::string reference = UndisturbedDigest(c.server, c.root);
  ASSERT_EQ(reference.size(), 64u) << reference;

  CliResult r = RunCli(c.server, TrainArgs({"--name", "preempted", "-p", "low"}));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::string id = FirstLine(r.out);
  // It has checkpointed once (every 10 steps): well into its run.
  const std::string ckpt = CheckpointsOf(c.server, c.root, id);
  ASSERT_TRUE(Within(60s, [&] { return access((ckpt + "/ckpt.pt").c_str(), 0) == 0; }))
      << RunCli(c.server, {"logs", id}).out;
  // A job of a higher class needs every GPU: the training job gets SIGTERM, agrees on a step
  // to stop at, saves it and exits; it is requeued and resumes once the GPUs are free.
  CliResult high = RunCli(c.server, {"submit", "-g", "4", "--nodes", "2", "-p", "high", "--name",
                                     "urgent", "--", "sleep", "2"});
  ASSERT_EQ(high.exit_code, 0) << high.out;
  EXPECT_EQ(RunCli(c.server, {"wait", FirstLine(high.out)}).exit_code, 0);
  CliResult waited = RunCli(c.server, {"wait", id});
  std::string log = RunCli(c.server, {"logs", id}).out;
  EXPECT_EQ(waited.exit_code, 0) << waited.out << log;
  json::value job = Show(c.server, id);
  EXPECT_GE(job.at("restarts").as_int64(), 1) << job;
  EXPECT_NE(log.find("stopping at step"), std::string::npos) << log;
  EXPECT_NE(log.find("resumed from step"), std::string::npos) << log;
  EXPECT_EQ(Trimmed(ReadFile(ckpt + "/final.sha256")), reference) << log;
}

// Kills a node: its agent (kill -9) and the job's processes there, as a machine that dies.
void KillNode(const std::string& agent_dir, AgentProcess& agent, const std::string& id,
              int attempt) {
  agent.Kill9();
  std::string run = agent_dir + "/run/" + id + "." + std::to_string(attempt) + ".run";
  pid_t shim = 0, pid = 0;
  std::ifstream(run) >> shim >> pid;
  if (pid == 0) std::ifstream(run + ".pid") >> pid;
  if (shim > 0) kill(shim, SIGKILL);
  if (pid > 0) kill(-pid, SIGKILL);
}

TEST(Training, ADataParallelRunThatLosesANodeResumesElsewhereBitIdentical) {
  if (!TorchThere()) GTEST_FAIL() << "python3-torch could not be installed or imported";
  TempDir dir;
  Cluster c(dir.path(), 3);
  auto client = c.server.Client();
  ASSERT_TRUE(NodesReady(*client, 3));
  std::string reference = UndisturbedDigest(c.server, c.root);
  ASSERT_EQ(reference.size(), 64u) << reference;

  CliResult r = RunCli(c.server, TrainArgs({"--name", "node-loss"}));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::string id = FirstLine(r.out);
  const std::string ckpt = CheckpointsOf(c.server, c.root, id);
  ASSERT_TRUE(Within(60s, [&] { return access((ckpt + "/ckpt.pt").c_str(), 0) == 0; }))
      << RunCli(c.server, {"logs", id}).out;
  json::value job = Show(c.server, id);
  std::string lost = std::string(job.at("allocation").at(1).at("node").as_string());
  int index = lost[1] - '1';
  KillNode(dir.path() + "/" + lost, *c.agents.at(static_cast<size_t>(index)), id, 0);

  CliResult waited = RunCli(c.server, {"wait", id});
  std::string log = RunCli(c.server, {"logs", id}).out;
  EXPECT_EQ(waited.exit_code, 0) << waited.out << log;
  job = Show(c.server, id);
  EXPECT_GE(job.at("restarts").as_int64(), 1) << job;
  for (const json::value& part : job.at("allocation").as_array())
    EXPECT_NE(part.at("node").as_string(), lost) << job;
  EXPECT_NE(log.find("resumed from step"), std::string::npos) << log;
  EXPECT_EQ(Trimmed(ReadFile(ckpt + "/final.sha256")), reference) << log;
}

}  // namespace
}  // namespace baton::testing
