// Job arrays through the real binary (issue 16): one id for the array, BATON_ARRAY_JOB_ID and
// BATON_ARRAY_INDEX in each task, a throttle, `baton jobs` folding the array into one line
// unless --expand, and cancel, wait, show and logs of the whole array or one task (12_7).
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "harness.h"

namespace baton::testing {
namespace {

namespace json = boost::json;

TEST(Arrays, AnArrayRunsATaskPerIndexUnderOneId) {
  TempDir dir;
  BatonProcess baton(dir.path());
  CliResult sub =
      RunCli(baton, {"submit", "--array", "0-5%2", "-g", "1", "--name", "sweep", "--", "sh", "-c",
                     "echo task $BATON_ARRAY_INDEX of $BATON_ARRAY_JOB_ID"});
  ASSERT_EQ(sub.exit_code, 0) << sub.out;
  const std::string id = FirstLine(sub.out);
  EXPECT_EQ(sub.out, id + "\n");  // one id, the array's
  CliResult waiting = RunCli(baton, {"show", id + "_5", "--json"});
  json::value task = json::parse(waiting.out);
  EXPECT_EQ(task.at("array_id").as_int64(), std::stoll(id)) << waiting.out;
  EXPECT_EQ(task.at("array_index"), 5) << waiting.out;
  EXPECT_EQ(task.at("array"), "0-5%2");
  ASSERT_EQ(RunCli(baton, {"wait", id}).exit_code, 0);  // every task of the array
  CliResult logs = RunCli(baton, {"logs", id + "_3"});
  EXPECT_EQ(logs.out, "task 3 of " + id + "\n");
  CliResult folded = RunCli(baton, {"jobs", "--all"});
  EXPECT_NE(folded.out.find(id + "_[0-5%2]"), std::string::npos) << folded.out;
  EXPECT_NE(folded.out.find("6 succeeded"), std::string::npos) << folded.out;
  EXPECT_EQ(CountOf(folded.out, "sweep"), 1u) << folded.out;
  CliResult expanded = RunCli(baton, {"jobs", "--all", "--expand"});
  EXPECT_EQ(CountOf(expanded.out, "sweep"), 6u) << expanded.out;
  EXPECT_NE(expanded.out.find(id + "_4 "), std::string::npos) << expanded.out;
  CliResult text = RunCli(baton, {"show", id + "_4"});
  EXPECT_NE(text.out.find("array task    " + id + "_4 of array " + id + " (0-5%2)"),
            std::string::npos)
      << text.out;
  CliResult missing = RunCli(baton, {"show", id + "_9"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.out.find("job " + id + "_9 does not exist"), std::string::npos) << missing.out;
}

TEST(Arrays, AThrottledArrayWaitsAndCancelTakesATaskOrTheWholeArray) {
  TempDir dir;
  BatonProcess baton(dir.path());
  CliResult sub = RunCli(baton, {"submit", "--array", "1-8%3", "-g", "1", "--", "sleep", "300"});
  ASSERT_EQ(sub.exit_code, 0) << sub.out;
  const std::string id = FirstLine(sub.out);
  auto c = baton.Client();
  std::string last = WaitUntilWaiting(*c, std::stoll(id) + 7, "array_limit");
  EXPECT_NE(last.find("runs at most 3 tasks at once"), std::string::npos) << last;
  CliResult one = RunCli(baton, {"cancel", id + "_8"});
  EXPECT_EQ(one.exit_code, 0) << one.out;
  EXPECT_EQ(JsonString(GetJob(*c, std::stoll(id) + 7), "state"), "cancelled");
  EXPECT_EQ(JsonString(GetJob(*c, std::stoll(id) + 6), "state"), "pending");
  CliResult all = RunCli(baton, {"cancel", id});
  EXPECT_EQ(all.exit_code, 0) << all.out;
  EXPECT_EQ(RunCli(baton, {"wait", id}).exit_code, 1);  // they did not succeed
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(JsonString(GetJob(*c, std::stoll(id) + i), "state"), "cancelled") << i;
}

TEST(Arrays, ASweepFileBecomesAnArrayAndAJobAfterItWaitsForEveryTask) {
  TempDir dir;
  BatonProcess baton(dir.path());
  std::string file = dir.path() + "/sweep.yaml";
  std::ofstream(file) << "name: lr-sweep\n"
                         "command: [sh, -c, 'echo lr={lr} bs=$bs']\n"
                         "sweep:\n"
                         "  lr: [0.1, 0.01]\n"
                         "  bs: [32, 64]\n"
                         "array: \"%2\"\n";
  CliResult sub = RunCli(baton, {"submit", "-f", file});
  ASSERT_EQ(sub.exit_code, 0) << sub.out;
  const std::string id = FirstLine(sub.out);
  EXPECT_EQ(sub.out, id + "\n");
  CliResult after = RunCli(baton, {"submit", "--after", id, "--", "echo", "report"});
  ASSERT_EQ(after.exit_code, 0) << after.out;
  ASSERT_EQ(RunCli(baton, {"wait", id, FirstLine(after.out)}).exit_code, 0);
  std::vector<std::string> outs;
  for (int i = 0; i < 4; ++i)
    outs.push_back(RunCli(baton, {"logs", id + "_" + std::to_string(i)}).out);
  EXPECT_EQ(outs, (std::vector<std::string>{"lr=0.1 bs=32\n", "lr=0.1 bs=64\n", "lr=0.01 bs=32\n",
                                            "lr=0.01 bs=64\n"}));
  // The report started after the last task ended.
  auto c = baton.Client();
  std::string report = GetJob(*c, std::stoll(FirstLine(after.out)));
  std::string last = GetJob(*c, std::stoll(id) + 3);
  EXPECT_GE(JsonString(report, "started_at"), JsonString(last, "finished_at")) << report << last;
}

// Issue 38: `baton queue` lists, after the jobs in the scheduler's order, those that wait for
// something else, as squeue does: an array's tasks past its throttle, a job waiting for a
// dependency; they have no place ("-") and say why.
TEST(Arrays, TheQueueListsTasksPastTheThrottleAndJobsWaitingForDependencies) {
  TempDir dir;
  BatonProcess baton(dir.path(), {"--gpus", "1xH100-80GB"});
  std::string blocker = FirstLine(RunCli(baton, {"submit", "-g", "1", "--", "sleep", "60"}).out);
  std::string array =
      FirstLine(RunCli(baton, {"submit", "-g", "1", "--array", "0-2%1", "--", "true"}).out);
  std::string dep = FirstLine(RunCli(baton, {"submit", "--after", blocker, "--", "true"}).out);
  ASSERT_FALSE(array.empty());
  ASSERT_FALSE(dep.empty());
  std::string table;
  ASSERT_TRUE(Within(std::chrono::seconds(20), [&] {
    table = RunCli(baton, {"queue"}).out;
    return table.find(array + "_0") != std::string::npos &&
           table.find("waiting for 1 GPU") != std::string::npos;
  })) << table;
  for (const std::string& task : {array + "_1", array + "_2"}) {
    size_t at = table.find("\n-  " + task + " ");
    EXPECT_NE(at, std::string::npos) << task << " without a place:\n" << table;
  }
  EXPECT_NE(table.find("runs at most 1 tasks at once (%1)"), std::string::npos) << table;
  EXPECT_NE(table.find("\n-  " + dep + " "), std::string::npos) << table;
  EXPECT_NE(table.find("waiting for job " + blocker + " to succeed"), std::string::npos) << table;
  EXPECT_NE(table.find("\n1  " + array + "_0 "), std::string::npos) << "the head of the order\n"
                                                                    << table;
  RunCli(baton, {"cancel", "--all"});
}

// Issue 38: an array whose tasks all fail raised one job_failed alert per task (35 for 35);
// now one for its first failure and one when it has ended, counting them.
TEST(Arrays, AFailingArrayIsTwoAlertsNotOnePerTask) {
  TempDir dir;
  BatonProcess baton(dir.path(), {"--gpus", "2xH100-80GB"});
  std::string array = FirstLine(RunCli(baton, {"submit", "--array", "0-7", "--", "false"}).out);
  ASSERT_FALSE(array.empty());
  EXPECT_EQ(RunCli(baton, {"wait", array, "--timeout", "60"}).exit_code, 1);
  std::string events = RunCli(baton, {"events"}).out;
  EXPECT_EQ(CountOf(events, "job_failed"), 2u) << events;
  EXPECT_EQ(CountOf(events, "of array " + array + " (false) of root failed: exited with code 1"),
            1u)
      << events;
  EXPECT_NE(events.find("array " + array + " (false) of root has ended: 8 of its 8 tasks failed"),
            std::string::npos)
      << events;
}

// `baton wait ARRAY` asks the server to hold its request until the array has ended (GET
// /v1/jobs/{id}/wait): the answer comes when the last task ends, not at a poll's next tick; a
// task or a job alone is waited for the same way, and the timeout answers `"ended": false`.
TEST(Arrays, TheWaitRouteAnswersWhenTheLastTaskHasEnded) {
  TempDir dir;
  BatonProcess baton(dir.path(), {"--gpus", "2xH100-80GB"});
  auto c = baton.Client();
  // Six tasks of 0.3 s on two GPUs: three rounds, about 0.9 s in all.
  std::string array =
      FirstLine(RunCli(baton, {"submit", "--array", "0-5", "-g", "1", "--", "sleep", "0.3"}).out);
  ASSERT_FALSE(array.empty());
  auto answer =
      c->Request("GET", "/v1/jobs/" + array + "/wait?timeout=60", {}, {}, std::chrono::seconds(90));
  ASSERT_TRUE(answer.has_value()) << answer.error().message();
  EXPECT_EQ(answer->status, 200) << answer->body;
  EXPECT_EQ(json::parse(answer->body),
            json::parse("{\"job\":" + array + ",\"array\":true,\"ended\":true}"));
  // Every task had ended when it answered.
  CliResult tasks = RunCli(baton, {"jobs", "--all", "--expand"});
  EXPECT_EQ(CountOf(tasks.out, "succeeded"), 6u) << tasks.out;

  // A held task: the timeout answers, and says it has not ended; so does a held job alone.
  std::string held =
      FirstLine(RunCli(baton, {"submit", "--hold", "--array", "0-1", "-g", "1", "--", "true"}).out);
  auto timed = c->Request("GET", "/v1/jobs/" + held + "_1/wait?timeout=1");
  ASSERT_TRUE(timed.has_value());
  EXPECT_EQ(json::parse(timed->body),
            json::parse("{\"job\":" + std::to_string(std::stoll(held) + 1) +
                        ",\"array\":false,\"ended\":false}"));
  auto whole = c->Request("GET", "/v1/jobs/" + held + "/wait?timeout=0");
  ASSERT_TRUE(whole.has_value());
  EXPECT_NE(whole->body.find("\"array\":true,\"ended\":false"), std::string::npos) << whole->body;
  // Released, the whole array's wait answers once both have run.
  ASSERT_EQ(RunCli(baton, {"release", held}).exit_code, 0);
  auto done =
      c->Request("GET", "/v1/jobs/" + held + "/wait?timeout=60", {}, {}, std::chrono::seconds(90));
  ASSERT_TRUE(done.has_value());
  EXPECT_NE(done->body.find("\"ended\":true"), std::string::npos) << done->body;
  EXPECT_EQ(RunCli(baton, {"wait", held}).exit_code, 0);

  // Bad input: an unknown job, a timeout out of range.
  EXPECT_EQ(c->Request("GET", "/v1/jobs/99999/wait")->status, 404);
  auto bad = c->Request("GET", "/v1/jobs/" + array + "/wait?timeout=601");
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("timeout"), std::string::npos) << bad->body;
}

}  // namespace
}  // namespace baton::testing
