// Issue 40, "preemptible means something": through the real binaries, a spot agent
// (`baton agent --spot`) that takes only preemptible jobs and charges spot prices, a job that
// is not preemptible (`--no-preemptible`) that goes elsewhere and says why it waits, and a
// session (not preemptible by default) refused at submit where its project has no guarantee.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "harness.h"

namespace baton::testing {
namespace {

namespace json = boost::json;

// 3600 a GPU-hour is 1 a GPU-second; spot GPUs cost half.
constexpr const char* kCatalog = R"(
gpu_catalog:
  currency: EUR
  prices:
    H100: {on_demand: 3600, spot: 1800}
)";

// A controller with configuration `config`, a spot agent and an on-demand one, 2 GPUs each.
struct SpotCluster {
  explicit SpotCluster(const std::string& config_text)
      : config(Written(dir.path() + "/baton.yaml", config_text)) {}

  static std::string Written(const std::string& path, const std::string& text) {
    if (FILE* f = fopen(path.c_str(), "w")) {
      fputs(text.c_str(), f);
      fclose(f);
    }
    return path;
  }

  // `baton submit ARGS`: the job's id (the test fails without one).
  int64_t SubmitCli(const std::vector<std::string>& args) {
    std::vector<std::string> all = {"submit"};
    all.insert(all.end(), args.begin(), args.end());
    CliResult r = RunCli(server, all);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    return std::atoll(FirstLine(r.out).c_str());
  }

  // The node a job runs on once it does ("" when it did not start within 20 s).
  std::string NodeOf(int64_t id) {
    std::string node;
    Within(std::chrono::seconds(20), [&] {
      json::value job = json::parse(GetJob(*c, id));
      if (job.at("state") != "running" && job.at("state") != "succeeded") return false;
      node = json::value_to<std::string>(job.at("allocation").at(0).at("node"));
      return true;
    });
    return node;
  }

  TempDir dir;
  std::string config;
  BatonProcess server{dir.path() + "/server", {"--config", config}, "server"};
  AgentProcess spot{server, "spot01", dir.path() + "/n1", "2xH100-80GB", {"--spot"}};
  AgentProcess on_demand{server, "od01", dir.path() + "/n2", "2xH100-80GB"};
  std::unique_ptr<net::HttpClient> c = server.Client();
};

class Preemptible : public ::testing::Test, public SpotCluster {
 protected:
  Preemptible() : SpotCluster(kCatalog) {}
  void SetUp() override { ASSERT_TRUE(NodesReady(*c, 2)); }
};

// The project "vision" is guaranteed one GPU, the others none.
class Guaranteed : public ::testing::Test, public SpotCluster {
 protected:
  Guaranteed()
      : SpotCluster(std::string(kCatalog) + "projects:\n  vision: {guaranteed_gpus: 1}\n") {}
  void SetUp() override { ASSERT_TRUE(NodesReady(*c, 2)); }
};

TEST_F(Preemptible, ASpotNodeTakesOnlyPreemptibleJobsAndChargesItsSpotPrices) {
  CliResult nodes = RunCli(server, {"nodes"});
  ASSERT_EQ(nodes.exit_code, 0) << nodes.out;
  EXPECT_NE(nodes.out.find("spot"), std::string::npos) << nodes.out;
  auto listed = c->Request("GET", "/v1/nodes");
  ASSERT_TRUE(listed);
  EXPECT_NE(listed->body.find("\"spot\":true"), std::string::npos) << listed->body;

  // Not preemptible: the on-demand node, though the spot node is as free.
  int64_t steady = SubmitCli({"--gpus", "2", "--no-preemptible", "--", "sleep", "60"});
  EXPECT_EQ(NodeOf(steady), "od01");
  // Another waits for it, saying why the free spot GPUs are not for it.
  int64_t waits = SubmitCli({"--gpus", "1", "--no-preemptible", "--", "true"});
  std::string waiting = WaitUntilWaiting(*c, waits, "resources");
  EXPECT_NE(waiting.find("on nodes that are not spot (1 spot node runs only preemptible jobs: "
                         "--preemptible lets it use them)"),
            std::string::npos)
      << waiting;
  // The queue says which it is, beside why it waits.
  CliResult queue = RunCli(server, {"queue"});
  ASSERT_EQ(queue.exit_code, 0) << queue.out;
  EXPECT_NE(queue.out.find("PREEMPTIBLE"), std::string::npos) << queue.out;
  const size_t row = queue.out.find("runs only preemptible jobs");
  ASSERT_NE(row, std::string::npos) << queue.out;
  const std::string line = queue.out.substr(queue.out.rfind('\n', row) + 1, row);
  EXPECT_NE(line.find(" no "), std::string::npos) << queue.out;
  CliResult shown = RunCli(server, {"show", std::to_string(waits)});
  EXPECT_NE(shown.out.find("no (never preempted; within its project's guarantee, never on spot)"),
            std::string::npos)
      << shown.out;
  // A batch job is preemptible unless it says otherwise: the spot node, at its spot price.
  int64_t cheap = SubmitCli({"--gpus", "1", "--", "sleep", "1"});
  EXPECT_EQ(NodeOf(cheap), "spot01");
  std::string done = WaitForJob(*c, cheap);
  EXPECT_EQ(JsonField(done, "cost_per_hour"), "1.8E3") << done;
  EXPECT_EQ(JsonField(done, "preemptible"), "true") << done;
  // The on-demand node's price for the one that is not.
  EXPECT_EQ(JsonField(GetJob(*c, steady), "cost_per_hour"), "7.2E3");
  EXPECT_EQ(RunCli(server, {"cancel", std::to_string(steady)}).exit_code, 0);
  EXPECT_EQ(NodeOf(waits), "od01");
}

TEST_F(Guaranteed, AJobThatIsNotPreemptibleMayNotAskBeyondItsProjectsGuarantee) {
  // A session is not preemptible by default: with guarantees set, its project must have room.
  auto session =
      c->Request("POST", "/v1/jobs",
                 R"({"command": ["cat"], "interactive": "stdin", "resources": {"gpus": 1}})");
  ASSERT_TRUE(session);
  EXPECT_EQ(session->status, 400) << session->body;
  EXPECT_NE(session->body.find("preemptible: it is not preemptible (a session's default), so it "
                               "runs within project default's guarantee, which is none"),
            std::string::npos)
      << session->body;
  CliResult two =
      RunCli(server, {"submit", "--project", "vision", "--gpus", "2", "--no-preemptible", "true"});
  EXPECT_NE(two.exit_code, 0);
  EXPECT_NE(two.out.find("project vision's guarantee, which is 1 GPU, and it asks for 2 GPUs "
                         "(--preemptible lets it use idle GPUs, and be preempted for them)"),
            std::string::npos)
      << two.out;
  // Within the guarantee it runs; the same job preemptible borrows beyond it.
  int64_t within = SubmitCli({"--project", "vision", "--gpus", "1", "--no-preemptible", "true"});
  EXPECT_FALSE(WaitForJob(*c, within).empty());
  EXPECT_EQ(JsonField(GetJob(*c, within), "state"), "\"succeeded\"");
  int64_t borrows = SubmitCli({"--project", "vision", "--gpus", "2", "true"});
  EXPECT_EQ(JsonField(WaitForJob(*c, borrows), "state"), "\"succeeded\"");
}

}  // namespace
}  // namespace baton::testing
