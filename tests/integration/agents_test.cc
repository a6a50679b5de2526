// Agents on their own (`baton agent` joining `baton server`): a job across three nodes whose
// ranks meet over TCP, a rank that fails tearing its gang down, and agents killed with -9 whose
// jobs are re-adopted (or requeued when they vanished with it).
#include <gtest/gtest.h>
#include <signal.h>

#include <boost/json.hpp>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace baton::testing {
namespace {

namespace json = boost::json;

json::value Get(net::HttpClient& c, const std::string& target) {
  auto r = c.Request("GET", target);
  if (!r || r->status != 200) return nullptr;
  return json::parse(r->body);
}

std::string Log(net::HttpClient& c, int64_t id, const std::string& node) {
  auto r = c.Request("GET", "/v1/jobs/" + std::to_string(id) + "/logs?node=" + node);
  return r ? r->body : "";
}

TEST(Agents, ThreeAgentsRunATwelveGpuJobWhoseRanksMeetOverTcp) {
  TempDir dir;
  // Four threads serve HTTP: the agents' polls and reports and the client's requests come
  // in on any of them.
  BatonProcess server(dir.path() + "/server", {"--http-threads", "4"}, "server");
  std::vector<std::unique_ptr<AgentProcess>> agents;
  for (int i = 1; i <= 3; ++i) {
    std::string name = "n" + std::to_string(i);
    agents.push_back(
        std::make_unique<AgentProcess>(server, name, dir.path() + "/" + name, "4xA100-40GB"));
  }
  auto c = server.Client();
  ASSERT_TRUE(NodesReady(*c, 3));
  std::string port = std::to_string(MasterPort());
  int64_t id = Submit(*c, std::string(R"({"command": [")") + BATON_RENDEZVOUS +
                              R"("], "resources": {"gpus": 12, "nodes": 3}, "process_per_gpu": true,
                                 "grace_period": 1, "env": {"MASTER_PORT": ")" +
                              port + R"("}})");
  std::string job = WaitForJob(*c, id, 60000);
  ASSERT_EQ(JsonString(job, "state"), "succeeded") << job;
  json::value j = json::parse(job);
  const json::array& alloc = j.at("allocation").as_array();
  ASSERT_EQ(alloc.size(), 3u);
  std::string first = std::string(alloc[0].at("node").as_string());
  std::string all;
  for (const auto& part : alloc) {
    EXPECT_EQ(part.at("gpus").as_array().size(), 4u) << job;
    std::string node = std::string(part.at("node").as_string());
    std::string log;
    Within(std::chrono::seconds(5), [&] {
      log = Log(*c, id, node);
      return CountOf(log, " ok") + CountOf(log, "rendezvous ok") >= 4;
    });
    // Four processes on each node, local ranks 0-3.
    for (int local = 0; local < 4; ++local) {
      bool rank0 = node == first && local == 0;
      if (rank0) continue;
      EXPECT_NE(log.find("(local " + std::to_string(local) + " of 4 on " + node + ") ok"),
                std::string::npos)
          << log;
    }
    all += log;
  }
  EXPECT_NE(all.find("rendezvous ok: world 12, 3 nodes, master 127.0.0.1:" + port),
            std::string::npos)
      << all;
  for (int rank = 1; rank < 12; ++rank)
    EXPECT_EQ(CountOf(all, "rank " + std::to_string(rank) + " of 12 "), 1u) << all;
}

TEST(Agents, ARankThatFailsTearsItsGangDownEverywhereAndTheJobIsRequeued) {
  TempDir dir;
  BatonProcess server(dir.path() + "/server", {}, "server");
  AgentProcess a1(server, "n1", dir.path() + "/n1", "2xA100-40GB");
  AgentProcess a2(server, "n2", dir.path() + "/n2", "2xA100-40GB");
  auto c = server.Client();
  ASSERT_TRUE(NodesReady(*c, 2));
  // Rank 3 fails at once; rank 0 would wait for it forever: only a teardown ends the others.
  int64_t id =
      Submit(*c, std::string(R"({"command": [")") + BATON_RENDEZVOUS +
                     R"("], "resources": {"gpus": 4, "nodes": 2}, "process_per_gpu": true,
                                 "env": {"FAIL_RANK": "3", "MASTER_PORT": ")" +
                     std::to_string(MasterPort()) + R"("}, "retries": 1, "grace_period": 1})");
  std::string job = WaitForJob(*c, id, 30000);
  ASSERT_EQ(JsonString(job, "state"), "failed") << job;
  EXPECT_EQ(JsonField(job, "restarts"), "1") << job;  // torn down, requeued once, then failed
  EXPECT_EQ(JsonField(job, "exit_code"), "3") << job;
}

TEST(Agents, AnAgentKilledWithSigkillReadoptsItsRunningJobsInsteadOfRerunningThem) {
  TempDir dir;
  BatonProcess server(dir.path() + "/server", {}, "server");
  AgentProcess agent(server, "n1", dir.path() + "/n1", "2xH100-80GB");
  auto c = server.Client();
  ASSERT_TRUE(NodesReady(*c, 1));
  std::string starts = dir.path() + "/starts";
  std::string gate = dir.path() + "/gate";
  // It runs until the test opens the gate, and notes every start.
  int64_t id =
      Submit(*c, R"({"command": "echo started >> )" + starts + R"(; while [ ! -e )" + gate +
                     R"( ]; do sleep 0.05; done; echo finished", "resources": {"gpus": 1}})");
  ASSERT_TRUE(Within(std::chrono::seconds(10), [&] { return ReadFile(starts) == "started\n"; }));

  agent.Kill9();
  // The job runs on without its agent; the controller, not hearing from it yet, keeps it.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(Get(*c, "/v1/jobs/" + std::to_string(id)).at("state"), "running");
  agent.Start();
  ASSERT_TRUE(NodesReady(*c, 1));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  std::ofstream(gate) << "open\n";
  std::string job = WaitForJob(*c, id, 30000);
  EXPECT_EQ(JsonString(job, "state"), "succeeded") << job;
  EXPECT_EQ(JsonField(job, "restarts"), "0") << job;
  EXPECT_EQ(ReadFile(starts), "started\n");  // re-adopted, never run again
  std::string log;
  Within(std::chrono::seconds(5),
         [&] { return (log = Log(*c, id, "n1")).find("finished") != std::string::npos; });
  EXPECT_NE(log.find("finished"), std::string::npos) << log;
}

TEST(Agents, AJobThatVanishedWithItsAgentIsRequeued) {
  TempDir dir;
  BatonProcess server(dir.path() + "/server", {}, "server");
  std::string agent_dir = dir.path() + "/n1";
  AgentProcess agent(server, "n1", agent_dir, "1xH100-80GB");
  auto c = server.Client();
  ASSERT_TRUE(NodesReady(*c, 1));
  std::string starts = dir.path() + "/starts";
  int64_t id = Submit(*c, R"({"command": "echo started >> )" + starts +
                              R"(; sleep 300", "resources": {"gpus": 1}})");
  ASSERT_TRUE(Within(std::chrono::seconds(10), [&] { return ReadFile(starts) == "started\n"; }));

  // The agent, the job's shim and the job all die (a crash that takes the processes along).
  agent.Kill9();
  std::string run = agent_dir + "/run/" + std::to_string(id) + ".0.run";
  pid_t shim = 0, job_pid = 0;
  std::ifstream(run) >> shim >> job_pid;
  ASSERT_GT(shim, 0);
  if (job_pid == 0) std::ifstream(run + ".pid") >> job_pid;
  ASSERT_GT(job_pid, 0);
  kill(shim, SIGKILL);
  kill(-job_pid, SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));

  agent.Start();
  // Nothing says how it ended: it is requeued (without spending a retry) and runs again.
  ASSERT_TRUE(Within(std::chrono::seconds(15), [&] {
    return ReadFile(starts) == "started\nstarted\n";
  })) << ReadFile(starts);
  json::value j = Get(*c, "/v1/jobs/" + std::to_string(id));
  EXPECT_EQ(j.at("restarts"), 1) << j;
  EXPECT_EQ(j.at("state"), "running") << j;
  RunCli(server, {"cancel", std::to_string(id)});
  EXPECT_EQ(JsonString(WaitForJob(*c, id), "state"), "cancelled");  // while its agent still runs
}

// Issue 16: restarting `baton up --listen 127.0.0.1:0` moved the port and stranded agents. A
// restart keeps the port of the previous start; the agent finds the controller again and its
// jobs go on.
TEST(Agents, ARestartedControllerKeepsItsPortAndItsAgentComesBack) {
  TempDir dir;
  BatonProcess server(dir.path() + "/server", {}, "server");
  AgentProcess agent(server, "n1", dir.path() + "/n1", "1xH100-80GB");
  auto c = server.Client();
  ASSERT_TRUE(NodesReady(*c, 1));
  std::string first = server.url();
  server.Stop();
  // The agent keeps trying the address it was given, and says so in its log (at once, then
  // once a minute while it lasts).
  ASSERT_TRUE(Within(std::chrono::seconds(10), [&] {
    return ReadFile(dir.path() + "/n1.out").find("cannot reach the controller at " + first) !=
           std::string::npos;
  })) << ReadFile(dir.path() + "/n1.out");
  server.Start();
  EXPECT_EQ(server.url(), first);
  EXPECT_TRUE(Within(std::chrono::seconds(40), [&] {
    return ReadFile(dir.path() + "/n1.out").find("reached the controller at " + first) !=
           std::string::npos;
  })) << ReadFile(dir.path() + "/n1.out");
  server.Kill9();  // a crash keeps it too
  server.Start();
  EXPECT_EQ(server.url(), first);
  auto again = server.Client();
  ASSERT_TRUE(NodesReady(*again, 1));
  int64_t id = Submit(*again, R"({"command": ["true"], "resources": {"gpus": 1}})");
  EXPECT_EQ(JsonString(WaitForJob(*again, id), "state"), "succeeded");
}

// Two agents on one data directory would each adopt and report the other's jobs: the second
// is refused, as a second server on a server's directory is (issue 37).
TEST(Agents, ASecondAgentOnTheSameDataDirectoryIsRefused) {
  TempDir dir;
  BatonProcess server(dir.path() + "/server", {}, "server");
  AgentProcess n1(server, "n1", dir.path() + "/n1", "1xH100-80GB");
  auto c = server.Client();
  ASSERT_TRUE(NodesReady(*c, 1));
  std::string token = ReadFile(server.data_dir() + "/agent.token");
  token = token.substr(0, token.find('\n'));
  CliResult second = RunShell(std::string(BATON_BINARY) + " agent --server " + server.url() +
                              " --tls-ca " + server.ca_file() + " --token " + token +
                              " --name n2 --gpus 1xH100-80GB --data " + dir.path() + "/n1");
  EXPECT_EQ(second.exit_code, 1) << second.out;
  EXPECT_NE(second.out.find("another baton already runs the agent of " + dir.path() + "/n1 (" +
                            dir.path() + "/n1/lock is held)"),
            std::string::npos)
      << second.out;
  EXPECT_EQ(RunCli(server, {"nodes"}).out.find("n2"), std::string::npos);
}

}  // namespace
}  // namespace baton::testing
