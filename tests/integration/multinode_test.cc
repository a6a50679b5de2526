// Issue 16, through the real binary: what no node can ever hold is refused at submit with what
// the cluster has; more GPUs than a node has, with no --nodes, go on the fewest whole nodes; and
// `baton logs` of a multi-node job shows every node's output, labelled, or one node's.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "harness.h"

namespace baton::testing {
namespace {

namespace json = boost::json;

TEST(Fit, WhatNoNodeCanEverHoldIsRefusedAtSubmitNamingWhatExists) {
  TempDir dir;
  BatonProcess baton(dir.path(), {"--gpus", "8xH100-80GB"});
  ASSERT_TRUE(WaitForNodes(*baton.Client()));
  CliResult ten = RunCli(baton, {"submit", "-g", "10", "--", "true"});
  EXPECT_EQ(ten.exit_code, 1) << ten.out;
  EXPECT_EQ(ten.out.rfind("baton: resources.gpus: no set of nodes can ever hold 10 GPUs", 0), 0u)
      << ten.out;
  EXPECT_NE(ten.out.find("pool default has 1 node of 8xH100-80GB"), std::string::npos) << ten.out;
  CliResult type = RunCli(baton, {"submit", "-g", "1", "--gpu-type", "H200", "--", "true"});
  EXPECT_EQ(type.exit_code, 1) << type.out;
  EXPECT_NE(type.out.find("no GPU of type H200"), std::string::npos) << type.out;
  EXPECT_NE(type.out.find("8xH100-80GB"), std::string::npos) << type.out;
  CliResult pool = RunCli(baton, {"submit", "--pool", "big", "--", "true"});
  EXPECT_EQ(pool.exit_code, 1) << pool.out;
  EXPECT_NE(pool.out.find("no node is in pool big (pools with nodes: default)"), std::string::npos)
      << pool.out;
  // Nothing was made of them.
  CliResult jobs = RunCli(baton, {"jobs", "--all", "--json"});
  EXPECT_EQ(jobs.out.find("\"id\""), std::string::npos) << jobs.out;
  // What fits still goes.
  CliResult ok = RunCli(baton, {"submit", "-g", "8", "--", "true"});
  ASSERT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_EQ(RunCli(baton, {"wait", FirstLine(ok.out)}).exit_code, 0);
}

TEST(Fit, TheSimulatorCountsAndNamesJobsThatCanNeverRun) {
  TempDir dir;
  std::string cluster = dir.path() + "/cluster.yaml";
  std::ofstream(cluster) << "nodes: [{name: n, count: 2, gpus: 4xA100-40GB}]\n";
  std::string trace = dir.path() + "/trace.csv";
  std::ofstream(trace) << "submit_time,duration,gpus,name,gpu_type\n"
                          "0,60,2,small,\n"
                          "0,60,16,huge,\n"
                          "5,60,1,wrong-type,H100\n";
  BatonProcess unused(dir.path() + "/server");  // RunCli needs a data dir; sim does not use it
  CliResult text = RunCli(unused, {"sim", "--cluster", cluster, "--trace", trace});
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("2 jobs can never run on this cluster"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("line 3 (huge)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("line 4 (wrong-type)"), std::string::npos) << text.out;
  CliResult js = RunCli(unused, {"sim", "--cluster", cluster, "--trace", trace, "--json"});
  ASSERT_EQ(js.exit_code, 0) << js.out;
  json::value v = json::parse(js.out);
  EXPECT_EQ(v.at("unrunnable"), 2) << js.out;
  EXPECT_EQ(v.at("unrunnable_jobs").as_array().at(0).at("name"), "huge") << js.out;
  EXPECT_EQ(v.at("finished"), 1) << js.out;
}

class TwoNodes : public ::testing::Test {
 protected:
  TempDir dir;
  BatonProcess server{dir.path() + "/server", {}, "server"};
  AgentProcess a1{server, "n1", dir.path() + "/n1", "8xH100-80GB"};
  AgentProcess a2{server, "n2", dir.path() + "/n2", "8xH100-80GB"};
  std::unique_ptr<net::HttpClient> c = server.Client();

  void SetUp() override { ASSERT_TRUE(NodesReady(*c, 2)); }

  // Submits through the CLI; the job's id.
  std::string SubmitCli(std::vector<std::string> args) {
    args.insert(args.begin(), "submit");
    CliResult r = RunCli(server, args);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    return FirstLine(r.out);
  }
};

TEST_F(TwoNodes, SixteenGpusWithoutNodesRunOnTwoWholeNodesAndLogsShowBoth) {
  std::string id = SubmitCli({"-g", "16", "--", "sh", "-c",
                              "echo rank $NODE_RANK of $WORLD_SIZE; "
                              "printf 'no newline'"});
  ASSERT_EQ(RunCli(server, {"wait", id}).exit_code, 0);
  std::string job = GetJob(*c, std::stoll(id));
  json::value v = json::parse(job);
  EXPECT_EQ(v.at("resources").at("nodes"), 2) << job;
  ASSERT_EQ(v.at("allocation").as_array().size(), 2u) << job;
  std::string rank0 = std::string(v.at("allocation").at(0).at("node").as_string());
  std::string rank1 = std::string(v.at("allocation").at(1).at("node").as_string());
  EXPECT_EQ(v.at("allocation").at(0).at("gpus").as_array().size(), 8u);

  CliResult logs = RunCli(server, {"logs", id});
  ASSERT_EQ(logs.exit_code, 0) << logs.out;
  EXPECT_EQ(logs.out, "[" + rank0 + " rank 0] rank 0 of 2\n[" + rank0 + " rank 0] no newline\n[" +
                          rank1 + " rank 1] rank 1 of 2\n[" + rank1 + " rank 1] no newline\n");
  CliResult one = RunCli(server, {"logs", id, "--node", rank1});
  EXPECT_EQ(one.out, "rank 1 of 2\nno newline") << one.out;
  CliResult none = RunCli(server, {"logs", id, "--node", "nosuch"});
  EXPECT_EQ(none.out, "");
}

TEST_F(TwoNodes, FollowingAMultiNodeJobPrintsEveryNodesLinesUntilItEnds) {
  std::string gate = dir.path() + "/gate";
  std::string id = SubmitCli({"-g", "2", "--nodes", "2", "--", "sh", "-c",
                              "echo before $NODE_RANK; while [ ! -e " + gate +
                                  " ]; do sleep 0.05; done; echo after $NODE_RANK"});
  ASSERT_TRUE(Within(std::chrono::seconds(20),
                     [&] { return JsonString(GetJob(*c, std::stoll(id)), "state") == "running"; }));
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    std::ofstream(gate) << "go\n";
  });
  CliResult follow = RunCli(server, {"logs", "-f", id});
  opener.join();
  ASSERT_EQ(follow.exit_code, 0) << follow.out;
  for (const char* line :
       {" rank 0] before 0\n", " rank 1] before 1\n", " rank 0] after 0\n", " rank 1] after 1\n"}) {
    EXPECT_NE(follow.out.find(line), std::string::npos) << line << " in " << follow.out;
  }
  EXPECT_EQ(JsonString(GetJob(*c, std::stoll(id)), "state"), "succeeded");
}

}  // namespace
}  // namespace baton::testing
