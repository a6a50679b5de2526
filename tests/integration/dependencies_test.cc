// Dependencies as Slurm users type them (issue 16), through the real binary: --after-any,
// --after-notok, --singleton and --begin, with their pending reasons.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "core/time.h"
#include "harness.h"

namespace baton::testing {
namespace {

namespace json = boost::json;

std::string SubmitCli(const BatonProcess& b, std::vector<std::string> args) {
  args.insert(args.begin(), "submit");
  CliResult r = RunCli(b, args);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return FirstLine(r.out);
}

json::value Show(const BatonProcess& b, const std::string& id) {
  return json::parse(RunCli(b, {"show", id, "--json"}).out);
}

TimePoint TimeOf(const json::value& job, const char* field) {
  return *ParseRfc3339(std::string(job.at(field).as_string()));
}

TEST(Dependencies, AfterAnyAndAfterNotOkRunWhenTheOtherJobFailed) {
  TempDir dir;
  BatonProcess baton(dir.path());
  std::string gate = dir.path() + "/gate";
  std::string failing = SubmitCli(
      baton, {"--", "sh", "-c", "while [ ! -e " + gate + " ]; do sleep 0.05; done; exit 3"});
  std::string any = SubmitCli(baton, {"--after-any", failing, "--", "echo", "any"});
  std::string notok = SubmitCli(baton, {"--after-notok", failing, "--", "echo", "cleanup"});
  std::string ok = SubmitCli(baton, {"--after", failing, "--", "echo", "never"});
  json::value waiting = Show(baton, any);
  EXPECT_EQ(waiting.at("reason"), "dependency") << waiting;
  EXPECT_EQ(waiting.at("reason_detail").as_string(), "waiting for job " + failing + " to end")
      << waiting;
  CliResult text = RunCli(baton, {"show", notok});
  EXPECT_NE(text.out.find("to end other than succeeded"), std::string::npos) << text.out;
  std::ofstream(gate) << "go\n";
  EXPECT_EQ(RunCli(baton, {"wait", any, notok}).exit_code, 0);
  EXPECT_EQ(RunCli(baton, {"wait", ok}).exit_code, 1);
  EXPECT_NE(std::string(Show(baton, ok).at("reason_detail").as_string()).find("can never run"),
            std::string::npos);
  CliResult missing = RunCli(baton, {"submit", "--after-any", "999", "--", "true"});
  EXPECT_EQ(missing.exit_code, 1) << missing.out;
  EXPECT_NE(missing.out.find("after_any: job 999 does not exist"), std::string::npos)
      << missing.out;
}

TEST(Dependencies, SingletonsOfOneNameRunOneAfterTheOther) {
  TempDir dir;
  BatonProcess baton(dir.path());
  // The first runs until the test opens its gate (a fixed sleep could end before the second
  // is looked at on a loaded machine).
  std::string gate = dir.path() + "/gate";
  std::vector<std::string> ids;
  ids.push_back(SubmitCli(baton, {"--name", "nightly", "--singleton", "-g", "1", "--", "sh", "-c",
                                  "while [ ! -e " + gate + " ]; do sleep 0.05; done"}));
  ids.push_back(SubmitCli(baton, {"--name", "nightly", "--singleton", "-g", "1", "--", "true"}));
  json::value second = Show(baton, ids[1]);
  EXPECT_EQ(second.at("state"), "pending") << second;
  EXPECT_EQ(second.at("reason_detail").as_string(),
            "singleton: waiting for job " + ids[0] + " of the same name and user to end")
      << second;
  std::ofstream(gate) << "go\n";
  ASSERT_EQ(RunCli(baton, {"wait", ids[0], ids[1]}).exit_code, 0);
  EXPECT_GE(TimeOf(Show(baton, ids[1]), "started_at"), TimeOf(Show(baton, ids[0]), "finished_at"));
}

TEST(Dependencies, BeginHoldsAJobBackUntilItsTime) {
  TempDir dir;
  BatonProcess baton(dir.path());
  std::string id = SubmitCli(baton, {"--begin", "+2s", "--", "true"});
  json::value job = Show(baton, id);
  EXPECT_EQ(job.at("reason"), "begin_time") << job;
  EXPECT_NE(std::string(job.at("reason_detail").as_string()).find("starts no earlier than"),
            std::string::npos);
  ASSERT_EQ(RunCli(baton, {"wait", id}).exit_code, 0);
  json::value done = Show(baton, id);
  EXPECT_GE(TimeOf(done, "started_at"), TimeOf(done, "begin")) << done;
  EXPECT_GE(TimeOf(done, "started_at") - TimeOf(done, "submitted_at"),
            std::chrono::milliseconds(1900))
      << done;
  CliResult bad = RunCli(baton, {"submit", "--begin", "tomorrow", "--", "true"});
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("--begin: \"tomorrow\" is not a time"), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace baton::testing
