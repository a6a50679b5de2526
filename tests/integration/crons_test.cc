// Recurring jobs through the real binary (issue 16): `baton submit --schedule`, `schedule:` in
// a job file, the pending reason, `baton crons` and `baton crons delete`, and a restart that
// keeps the schedule. A schedule's finest step is a minute, so the run waited for here comes
// within one.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/time.h"
#include "harness.h"

namespace baton::testing {
namespace {

namespace json = boost::json;

json::value Show(const BatonProcess& b, const std::string& id) {
  return json::parse(RunCli(b, {"show", id, "--json"}).out);
}

json::value Crons(const BatonProcess& b) {
  CliResult r = RunCli(b, {"crons", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return json::parse(r.out);
}

TEST(Crons, ARecurringJobRunsAtItsTimeQueuesTheNextAndStopsWhenDeleted) {
  TempDir dir;
  BatonProcess baton(dir.path());
  // The test looks at the first run waiting for its minute: too near the minute's end, on a
  // loaded machine, it has started before the first look. Then start at the next minute.
  const auto into_minute =
      std::chrono::system_clock::now().time_since_epoch() % std::chrono::minutes(1);
  if (into_minute > std::chrono::seconds(45))
    std::this_thread::sleep_for(std::chrono::minutes(1) - into_minute + std::chrono::seconds(1));
  CliResult submitted = RunCli(baton, {"submit", "--schedule", "* * * * *", "--name", "tick", "--",
                                       "sh", "-c", "echo ran at $(date +%H:%M)"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out;
  std::string first = FirstLine(submitted.out);
  EXPECT_NE(submitted.out.find("recurring job " + first + " (* * * * *): first run at "),
            std::string::npos)
      << submitted.out;

  json::value waiting = Show(baton, first);
  EXPECT_EQ(waiting.at("state"), "pending") << waiting;
  EXPECT_EQ(waiting.at("reason"), "schedule") << waiting;
  EXPECT_EQ(waiting.at("schedule"), "* * * * *") << waiting;
  EXPECT_EQ(waiting.at("cron_id").as_int64(), std::stoll(first)) << waiting;
  TimePoint at = *ParseRfc3339(std::string(waiting.at("begin").as_string()));
  EXPECT_EQ(ToMillis(at) % 60000, 0) << waiting;  // on a minute
  CliResult listed = RunCli(baton, {"crons"});
  EXPECT_NE(listed.out.find("SCHEDULE"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("* * * * *"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("tick"), std::string::npos) << listed.out;

  // The schedule is durable: a controller killed and started again still has it.
  baton.Kill9();
  baton.Start();
  ASSERT_EQ(Crons(baton).at("crons").as_array().size(), 1u);

  // The run comes within a minute; then the next one waits for the minute after.
  CliResult done = RunCli(baton, {"wait", first});
  EXPECT_EQ(done.exit_code, 0) << done.out;
  EXPECT_NE(RunCli(baton, {"logs", first}).out.find("ran at"), std::string::npos);
  json::value ran = Show(baton, first);
  EXPECT_GE(*ParseRfc3339(std::string(ran.at("started_at").as_string())), at) << ran;
  json::value crons = Crons(baton);
  ASSERT_EQ(crons.at("crons").as_array().size(), 1u) << crons;
  const json::value& cron = crons.at("crons").as_array()[0];
  EXPECT_EQ(cron.at("id").as_int64(), std::stoll(first)) << cron;
  EXPECT_EQ(cron.at("runs").as_int64(), 2) << cron;
  EXPECT_EQ(cron.at("last").at("state"), "succeeded") << cron;
  std::string next = std::to_string(cron.at("job").at("id").as_int64());
  EXPECT_NE(next, first);
  EXPECT_EQ(Show(baton, next).at("reason"), "schedule");
  listed = RunCli(baton, {"crons"});
  EXPECT_NE(listed.out.find(first + " succeeded"), std::string::npos) << listed.out;

  CliResult deleted = RunCli(baton, {"crons", "delete", first});
  EXPECT_EQ(deleted.exit_code, 0) << deleted.out;
  EXPECT_NE(deleted.out.find("recurring job " + first + ": deleted"), std::string::npos)
      << deleted.out;
  EXPECT_EQ(Show(baton, next).at("state"), "cancelled");
  EXPECT_NE(RunCli(baton, {"crons"}).out.find("no recurring jobs"), std::string::npos);
  CliResult again = RunCli(baton, {"crons", "delete", first});
  EXPECT_EQ(again.exit_code, 1) << again.out;
  EXPECT_NE(again.out.find("baton: no recurring job " + first + " (deleted before)"),
            std::string::npos)
      << again.out;
}

TEST(Crons, AJobFileScheduleAndCancellingTheWaitingRunStopTheSeries) {
  TempDir dir;
  BatonProcess baton(dir.path());
  std::string file = dir.path() + "/nightly.yaml";
  std::ofstream(file) << "name: nightly-eval\n"
                         "schedule: \"30 3 * * mon-fri\"\n"
                         "command: [python3, eval.py]\n";
  CliResult submitted = RunCli(baton, {"submit", "-f", file});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out;
  std::string id = FirstLine(submitted.out);
  json::value job = Show(baton, id);
  EXPECT_EQ(job.at("reason"), "schedule") << job;
  EXPECT_NE(std::string(job.at("reason_detail").as_string()).find("recurring (30 3 * * mon-fri)"),
            std::string::npos)
      << job;
  CliResult shown = RunCli(baton, {"show", id});
  EXPECT_NE(shown.out.find("30 3 * * mon-fri"), std::string::npos) << shown.out;

  CliResult cancelled = RunCli(baton, {"cancel", id});
  EXPECT_EQ(cancelled.exit_code, 0) << cancelled.out;
  EXPECT_NE(cancelled.out.find("no more runs of recurring job " + id), std::string::npos)
      << cancelled.out;
  EXPECT_TRUE(Crons(baton).at("crons").as_array().empty());

  // Mistakes are named before anything is made.
  CliResult bad = RunCli(baton, {"submit", "--schedule", "0 3 * *", "--", "true"});
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("baton: schedule: \"0 3 * *\": needs 5 fields"), std::string::npos)
      << bad.out;
  CliResult array =
      RunCli(baton, {"submit", "--schedule", "@daily", "--array", "0-3", "--", "true"});
  EXPECT_EQ(array.exit_code, 2) << array.out;
  EXPECT_NE(array.out.find("a recurring job cannot be an array"), std::string::npos) << array.out;
}

// A bulk cancel (`--all`, `--state pending`, any selector) spares the waiting runs of
// recurring jobs, as scancel spares scrontab's; `--cron` cancels them too, ending the series.
// A run named by its id is cancelled as asked.
TEST(Crons, ABulkCancelSparesRecurringJobsUnlessToldCron) {
  TempDir dir;
  BatonProcess baton(dir.path());
  CliResult cron = RunCli(baton, {"submit", "--schedule", "0 3 * * *", "--", "true"});
  ASSERT_EQ(cron.exit_code, 0) << cron.out;
  const std::string series = FirstLine(cron.out);
  CliResult held = RunCli(baton, {"submit", "--hold", "--", "true"});
  ASSERT_EQ(held.exit_code, 0) << held.out;
  const std::string plain = FirstLine(held.out);

  for (std::vector<std::string> args :
       {std::vector<std::string>{"cancel", "--state", "pending,held"},
        std::vector<std::string>{"cancel", "--all"}}) {
    CliResult r = RunCli(baton, args);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("spared 1 run of recurring jobs (--cron cancels them"), std::string::npos)
        << r.out;
    EXPECT_EQ(r.out.find("job " + series + ":"), std::string::npos) << r.out;
  }
  EXPECT_EQ(Show(baton, plain).at("state"), "cancelled");
  EXPECT_EQ(Show(baton, series).at("state"), "pending");
  EXPECT_EQ(Crons(baton).at("crons").as_array().size(), 1u);

  CliResult all = RunCli(baton, {"cancel", "--all", "--cron"});
  EXPECT_EQ(all.exit_code, 0) << all.out;
  EXPECT_NE(all.out.find("no more runs of recurring job " + series), std::string::npos) << all.out;
  EXPECT_TRUE(Crons(baton).at("crons").as_array().empty());
}

}  // namespace
}  // namespace baton::testing
