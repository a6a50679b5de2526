// Issue 16, through the real binary: a job that never started on a node (a launch failure) is
// requeued elsewhere without spending a retry; a node where jobs in a row could not start is
// drained, so that it cannot fail the whole queue in a second; a job whose program does not
// exist fails with the reason; and root's jobs are never placed on an agent that refuses them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include "harness.h"

namespace baton::testing {
namespace {

namespace json = boost::json;

TEST(LaunchFailures, AProgramThatDoesNotExistFailsWithTheReasonAndNoRetry) {
  TempDir dir;
  BatonProcess baton(dir.path());
  CliResult sub =
      RunCli(baton, {"submit", "--retries", "3", "--", "/no/such/program", "--lr", "1"});
  ASSERT_EQ(sub.exit_code, 0) << sub.out;
  std::string id = FirstLine(sub.out);
  EXPECT_EQ(RunCli(baton, {"wait", id}).exit_code, 1);
  CliResult show = RunCli(baton, {"show", id, "--json"});
  json::value v = json::parse(show.out);
  EXPECT_EQ(v.at("state"), "failed") << show.out;
  EXPECT_EQ(v.at("exit_code"), 127) << show.out;
  EXPECT_EQ(v.at("restarts"), 0) << show.out;  // one node only: nowhere else to try
  std::string reason(v.at("reason_detail").as_string());
  EXPECT_NE(reason.find("could not start on node"), std::string::npos) << show.out;
  EXPECT_NE(reason.find("cannot execute '/no/such/program'"), std::string::npos) << show.out;
  EXPECT_TRUE(v.at("started_at").is_null()) << show.out;
  // A program that starts and then fails is the job's own failure, retried as asked.
  CliResult fails = RunCli(baton, {"submit", "--retries", "1", "--", "sh", "-c", "exit 127"});
  std::string fid = FirstLine(fails.out);
  EXPECT_EQ(RunCli(baton, {"wait", fid}).exit_code, 1);
  json::value f = json::parse(RunCli(baton, {"show", fid, "--json"}).out);
  EXPECT_EQ(f.at("restarts"), 1);
  EXPECT_FALSE(f.as_object().contains("launch_failed_on"));
}

// Node "hole" cannot make the directories of jobs 2 to 4 (files stand where they would go): its
// agent fails each launch. Node "a100" is busy with job 1, so the three are offered to "hole"
// first; each is requeued, runs on "a100" when job 1 ends, and "hole" is drained.
TEST(LaunchFailures, ANodeWhereJobsInARowCouldNotStartIsDrainedAndTheJobsRunElsewhere) {
  TempDir dir;
  BatonProcess server(dir.path() + "/server", {}, "server");
  std::filesystem::create_directories(dir.path() + "/hole/jobs");
  for (int id : {2, 3, 4}) std::ofstream(dir.path() + "/hole/jobs/" + std::to_string(id)) << "x";
  AgentProcess a100(server, "a100", dir.path() + "/a100", "1xA100-40GB");
  AgentProcess hole(server, "hole", dir.path() + "/hole", "1xH100-80GB");
  auto c = server.Client();
  ASSERT_TRUE(NodesReady(*c, 2));
  std::string gate = dir.path() + "/gate";
  CliResult blocker = RunCli(server, {"submit", "-g", "1", "--gpu-type", "A100", "--", "sh", "-c",
                                      "while [ ! -e " + gate + " ]; do sleep 0.05; done"});
  ASSERT_EQ(FirstLine(blocker.out), "1") << blocker.out;
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    CliResult r = RunCli(server, {"submit", "-g", "1", "--", "echo", "ran"});
    ASSERT_EQ(r.exit_code, 0) << r.out;
    ids.push_back(FirstLine(r.out));
    // Each is offered to "hole", cannot start, and waits for "a100".
    ASSERT_TRUE(Within(std::chrono::seconds(10), [&] {
      std::string j = GetJob(*c, std::stoll(ids.back()));
      return j.find("\"launch_failed_on\":[\"hole\"]") != std::string::npos &&
             JsonString(j, "state") == "pending";
    })) << GetJob(*c, std::stoll(ids.back()));
  }
  std::ofstream(gate) << "go\n";
  for (const std::string& id : ids) {
    EXPECT_EQ(RunCli(server, {"wait", id}).exit_code, 0) << id;
    json::value v = json::parse(RunCli(server, {"show", id, "--json"}).out);
    EXPECT_EQ(v.at("state"), "succeeded") << v;
    EXPECT_EQ(v.at("restarts"), 1) << v;  // and no retry spent: it had none
    EXPECT_EQ(v.at("allocation").at(0).at("node"), "a100") << v;
  }
  CliResult nodes = RunCli(server, {"nodes"});
  EXPECT_NE(nodes.out.find("drained"), std::string::npos) << nodes.out;
  json::value list = json::parse(RunCli(server, {"nodes", "--json"}).out);
  bool drained = false;
  for (const auto& n : list.at("nodes").as_array()) {
    if (n.at("name") != "hole") continue;
    drained = n.at("state") == "drained";
    EXPECT_NE(std::string(n.at("drain_reason").as_string()).find("3 jobs in a row could not start"),
              std::string::npos)
        << n;
  }
  EXPECT_TRUE(drained) << list;
  CliResult events = RunCli(server, {"events"});
  EXPECT_NE(events.out.find("node_drained"), std::string::npos) << events.out;
  // An admin returns it.
  EXPECT_EQ(RunCli(server, {"undrain", "hole"}).exit_code, 0);
}

TEST(LaunchFailures, RootsJobsAreNeverPlacedOnAnAgentThatRefusesThem) {
  if (geteuid() != 0) GTEST_SKIP() << "an agent refuses root's jobs only when it runs as root";
  TempDir dir;
  BatonProcess server(dir.path() + "/server", {}, "server");
  AgentProcess strict(server, "strict", dir.path() + "/strict", "2xH100-80GB", {},
                      /*allow_root=*/false);
  auto c = server.Client();
  ASSERT_TRUE(NodesReady(*c, 1));
  // The admin token acts as root: no node runs its jobs, so the submit is refused.
  CliResult refused = RunCli(server, {"submit", "--", "true"});
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_NE(refused.out.find("no node in pool default runs root's jobs"), std::string::npos)
      << refused.out;
  EXPECT_NE(refused.out.find("--allow-root-jobs"), std::string::npos) << refused.out;
  AgentProcess open(server, "open", dir.path() + "/open", "1xH100-80GB");
  ASSERT_TRUE(NodesReady(*c, 2));
  std::string gate = dir.path() + "/gate";
  CliResult first = RunCli(server, {"submit", "-g", "1", "--", "sh", "-c",
                                    "while [ ! -e " + gate + " ]; do sleep 0.05; done"});
  ASSERT_EQ(first.exit_code, 0) << first.out;
  ASSERT_TRUE(Within(std::chrono::seconds(10), [&] {
    return JsonString(GetJob(*c, std::stoll(FirstLine(first.out))), "state") == "running";
  }));
  // "open" is full and "strict" has two free GPUs: the next root job waits for "open".
  CliResult second = RunCli(server, {"submit", "-g", "1", "--", "true"});
  ASSERT_EQ(second.exit_code, 0) << second.out;
  std::string waiting = WaitUntilWaiting(*c, std::stoll(FirstLine(second.out)), "resources");
  EXPECT_EQ(JsonString(waiting, "state"), "pending") << waiting;
  std::ofstream(gate) << "go\n";
  EXPECT_EQ(RunCli(server, {"wait", FirstLine(second.out)}).exit_code, 0);
  json::value v = json::parse(RunCli(server, {"show", FirstLine(second.out), "--json"}).out);
  EXPECT_EQ(v.at("allocation").at(0).at("node"), "open") << v;
  EXPECT_EQ(v.at("restarts"), 0) << v;
}

}  // namespace
}  // namespace baton::testing
