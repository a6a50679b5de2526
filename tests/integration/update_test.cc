// Issue 38, `baton update` through the real binary, as Slurm's `scontrol update`: a running
// job's time limit moves (later: it runs on past the old one; earlier: it stops), a waiting
// job's priority, name and dependencies change, and what cannot change says why.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <thread>

#include "harness.h"

namespace baton::testing {
namespace {

namespace json = boost::json;

json::value Show(const BatonProcess& b, const std::string& id) {
  return json::parse(RunCli(b, {"show", id, "--json"}).out);
}

std::string StateOf(const BatonProcess& b, const std::string& id) {
  return std::string(Show(b, id).at("state").as_string());
}

TEST(Update, ARunningJobsTimeLimitMovesBothWays) {
  TempDir dir;
  BatonProcess baton(dir.path(), {"--gpus", "1xH100-80GB"});
  CliResult sub = RunCli(baton, {"submit", "-t", "0:06", "--", "sleep", "60"});
  ASSERT_EQ(sub.exit_code, 0) << sub.out;
  std::string id = FirstLine(sub.out);
  ASSERT_TRUE(Within(std::chrono::seconds(20), [&] { return StateOf(baton, id) == "running"; }));
  auto started = std::chrono::steady_clock::now();
  CliResult later = RunCli(baton, {"update", id, "--time", "1"});  // a number alone: minutes
  ASSERT_EQ(later.exit_code, 0) << later.out;
  EXPECT_EQ(later.out, "job " + id + ": time_limit 1m\n");
  std::this_thread::sleep_until(started + std::chrono::seconds(9));
  EXPECT_EQ(StateOf(baton, id), "running") << "past its old limit of 6 s";
  EXPECT_EQ(Show(baton, id).at("time_limit_s").to_number<double>(), 60.0);
  // Slurm's words, and a limit already passed: it stops now.
  CliResult earlier = RunCli(baton, {"update", "JobId=" + id, "TimeLimit=0:02"});
  ASSERT_EQ(earlier.exit_code, 0) << earlier.out;
  ASSERT_TRUE(Within(std::chrono::seconds(15), [&] { return StateOf(baton, id) == "timed_out"; }))
      << StateOf(baton, id);
  EXPECT_EQ(std::string(Show(baton, id).at("reason_detail").as_string()),
            "stopped at its time limit of 2s");
}

TEST(Update, AWaitingJobChangesAndWhatCannotChangeSaysWhy) {
  TempDir dir;
  BatonProcess baton(dir.path(), {"--gpus", "1xH100-80GB"});
  std::string running = FirstLine(RunCli(baton, {"submit", "-g", "1", "--", "sleep", "60"}).out);
  ASSERT_TRUE(
      Within(std::chrono::seconds(20), [&] { return StateOf(baton, running) == "running"; }));
  std::string waiting = FirstLine(RunCli(baton, {"submit", "--hold", "--", "true"}).out);
  CliResult changed = RunCli(baton, {"update", waiting, "-p", "high", "--name", "renamed", "-d",
                                     "afterok:" + running, "--begin", "+1h"});
  ASSERT_EQ(changed.exit_code, 0) << changed.out;
  json::value job = Show(baton, waiting);
  EXPECT_EQ(job.at("priority"), "high");
  EXPECT_EQ(job.at("name"), "renamed");
  EXPECT_EQ(job.at("after").as_array().at(0).as_int64(), std::stoll(running));
  EXPECT_EQ(job.at("state"), "held");
  CliResult priority = RunCli(baton, {"update", running, "--priority", "low"});
  EXPECT_EQ(priority.exit_code, 1);
  EXPECT_EQ(priority.out, "baton: job " + running +
                              " is running: only its time limit and name change now; the rest "
                              "while it waits\n");
  CliResult unknown = RunCli(baton, {"update", waiting, "NumNodes=2"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.out.find("numnodes=: Baton changes TimeLimit, JobName"), std::string::npos)
      << unknown.out;
  CliResult nothing = RunCli(baton, {"update", waiting});
  EXPECT_EQ(nothing.exit_code, 2);
  EXPECT_NE(nothing.out.find("nothing to change"), std::string::npos) << nothing.out;
  CliResult missing = RunCli(baton, {"update", "999", "--name", "x"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.out.find("job 999 does not exist"), std::string::npos) << missing.out;
}

}  // namespace
}  // namespace baton::testing
