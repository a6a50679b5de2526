// Issue 38: where a job goes, as a Slurm user says it — `-w/--nodelist`, `-x/--exclude`,
// `--exclusive` typed or in #SBATCH lines — through the real binary on two agents; a name that
// is no node refused at submit, and a node a job holds alone taking no other job.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>

#include "harness.h"

namespace baton::testing {
namespace {

namespace json = boost::json;

class PlacementFlags : public ::testing::Test {
 protected:
  TempDir dir;
  BatonProcess server{dir.path() + "/server", {}, "server"};
  AgentProcess a1{server, "gpu01", dir.path() + "/n1", "2xH100-80GB"};
  AgentProcess a2{server, "gpu02", dir.path() + "/n2", "2xH100-80GB"};
  std::unique_ptr<net::HttpClient> c = server.Client();

  void SetUp() override { ASSERT_TRUE(NodesReady(*c, 2)); }

  // `baton submit ARGS`: the job's id (the test fails without one).
  std::string Submit(const std::vector<std::string>& args) {
    std::vector<std::string> all = {"submit"};
    all.insert(all.end(), args.begin(), args.end());
    CliResult r = RunCli(server, all);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    return FirstLine(r.out);
  }

  json::value Show(const std::string& id) {
    return json::parse(RunCli(server, {"show", id, "--json"}).out);
  }

  // The nodes of a job once it runs ("" when it did not start within 20 s).
  std::string NodesOf(const std::string& id) {
    std::string nodes;
    Within(std::chrono::seconds(20), [&] {
      json::value job = Show(id);
      if (job.at("state") != "running" && job.at("state") != "succeeded") return false;
      nodes.clear();
      for (const json::value& part : job.at("allocation").as_array())
        nodes += (nodes.empty() ? "" : ",") + json::value_to<std::string>(part.at("node"));
      return true;
    });
    return nodes;
  }
};

TEST_F(PlacementFlags, NodelistAndExcludeChooseTheNodes) {
  // Each twice: a placer left alone would pack both jobs of a kind on one node.
  for (int i = 0; i < 2; ++i) {
    std::string id = Submit({"-w", "gpu02", "-g", "1", "--", "sleep", "30"});
    EXPECT_EQ(NodesOf(id), "gpu02");
    EXPECT_EQ(Show(id).at("resources").at("nodelist"), json::parse(R"(["gpu02"])"));
  }
  std::string id = Submit({"--exclude", "gpu02", "-g", "1", "--", "sleep", "30"});
  EXPECT_EQ(NodesOf(id), "gpu01");
  // Slurm's host lists: both nodes named in one word, a job on each.
  std::string both = Submit({"--nodelist", "gpu[01-02]", "-g", "0", "--", "true"});
  EXPECT_EQ(Show(both).at("resources").at("nodes"), 2);
  std::string on = NodesOf(both);
  EXPECT_TRUE(on == "gpu01,gpu02" || on == "gpu02,gpu01") << on;
}

TEST_F(PlacementFlags, ANameThatIsNoNodeIsRefusedAtSubmitNamingTheNodes) {
  // The controller refuses them (exit 1, as any refusal of the server's).
  CliResult r = RunCli(server, {"submit", "-w", "gpu09", "--", "true"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_EQ(r.out, "baton: resources.nodelist: no node gpu09 (pool default has gpu01, gpu02)\n");
  CliResult x = RunCli(server, {"submit", "-x", "gpu01,gpu02", "--", "true"});
  EXPECT_EQ(x.exit_code, 1) << x.out;
  EXPECT_NE(x.out.find("resources.exclude: no node of pool default is left"), std::string::npos)
      << x.out;
  CliResult bad = RunCli(server, {"submit", "-w", "gpu[03-", "--", "true"});
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_EQ(bad.out.rfind("baton: --nodelist: ", 0), 0u) << bad.out;
  CliResult both = RunCli(server, {"submit", "-w", "gpu01", "-x", "gpu01", "--", "true"});
  EXPECT_EQ(both.exit_code, 2) << both.out;
  EXPECT_NE(both.out.find("gpu01 is also in resources.nodelist"), std::string::npos) << both.out;
  EXPECT_EQ(RunCli(server, {"jobs", "--all", "--json"}).out.find("\"id\""), std::string::npos)
      << "nothing was made";
}

TEST_F(PlacementFlags, AnExclusiveJobKeepsItsNodeFromOtherJobs) {
  // One GPU of two, the node to itself: a second job goes to the other node, and a third of one
  // GPU waits though a GPU is free beside the exclusive job.
  std::string alone =
      Submit({"--exclusive", "-g", "1", "-w", "gpu01", "--name", "alone", "--", "sleep", "60"});
  ASSERT_EQ(NodesOf(alone), "gpu01");
  EXPECT_EQ(Show(alone).at("resources").at("exclusive"), true);
  std::string second = Submit({"-g", "2", "--", "sleep", "60"});
  EXPECT_EQ(NodesOf(second), "gpu02");
  std::string third = Submit({"-g", "1", "--", "sleep", "60"});
  std::string waiting = WaitUntilWaiting(*c, std::stoll(third), "resources");
  EXPECT_EQ(JsonString(waiting, "state"), "pending") << waiting;
  // An exclusive job waits for a node that runs nothing.
  std::string other = Submit({"--exclusive", "-g", "1", "--", "true"});
  EXPECT_EQ(JsonString(WaitUntilWaiting(*c, std::stoll(other), "resources"), "state"), "pending");
  // The exclusive job ends: the third job takes the GPU beside where it ran.
  EXPECT_EQ(RunCli(server, {"cancel", other}).exit_code, 0);
  EXPECT_EQ(RunCli(server, {"cancel", alone}).exit_code, 0);
  EXPECT_EQ(NodesOf(third), "gpu01");
}

TEST_F(PlacementFlags, SbatchDirectivesNameTheNodes) {
  std::string work = dir.path() + "/project";
  std::filesystem::create_directories(work);
  std::ofstream(work + "/pinned.sh")
      << "#!/bin/bash\n"
         "#SBATCH --job-name=pinned\n"
         "#SBATCH --nodelist=gpu02\n"
         "#SBATCH --exclusive\n"
         "#SBATCH --gres=gpu:1\n"
         "echo on $SLURMD_NODENAME $(hostname) $SLURM_JOB_NODELIST\n";
  CliResult r = RunCliIn(server, work, {"submit", "pinned.sh"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::string id = FirstLine(r.out);
  const json::value job = Show(id);
  EXPECT_EQ(job.at("resources").at("nodelist"), json::parse(R"(["gpu02"])")) << job;
  EXPECT_EQ(job.at("resources").at("exclusive"), true) << job;
  EXPECT_EQ(RunCli(server, {"wait", id, "--timeout", "60"}).exit_code, 0);
  EXPECT_NE(ReadFile(work + "/slurm-" + id + ".out").find("gpu02"), std::string::npos);
  // Typed flags win over the script's: -x gpu02 with the script's -w gpu02 is a contradiction,
  // said as such; -w gpu01 typed replaces the script's.
  CliResult contradiction = RunCliIn(server, work, {"submit", "-x", "gpu02", "pinned.sh"});
  EXPECT_EQ(contradiction.exit_code, 2) << contradiction.out;
  EXPECT_NE(contradiction.out.find("gpu02 is also in resources.nodelist"), std::string::npos)
      << contradiction.out;
  CliResult typed = RunCliIn(server, work, {"submit", "-w", "gpu01", "pinned.sh"});
  ASSERT_EQ(typed.exit_code, 0) << typed.out;
  EXPECT_EQ(Show(FirstLine(typed.out)).at("resources").at("nodelist"), json::parse(R"(["gpu01"])"));
}

}  // namespace
}  // namespace baton::testing
