// The budget book on its own: spending in a period, alerts at 80 % and 100 %, the hard stop,
// a restart that does not alert again, a new period that starts over.
#include "control/budget_book.h"

#include <gtest/gtest.h>

namespace baton::control {
namespace {

// 2026-11-10 12:00 UTC: mid-month, mid-week.
const TimePoint kNow = FromMillis(1'794'312'000'000);
constexpr int64_t kUnit = 1'000'000;  // one currency unit in millionths

Policy VisionBudget(double amount, bool hard_stop) {
  Policy p;
  p.currency = "EUR";
  p.projects["vision"].budget =
      Budget{.amount = amount, .period = BudgetPeriod::kMonth, .hard_stop = hard_stop};
  return p;
}

Job EndedJob(int64_t id, const std::string& project, int64_t cost, TimePoint at) {
  Job j;
  j.id = JobId{id};
  j.spec.project = project;
  j.state = JobState::kSucceeded;
  j.cost_micros = cost;
  j.finished_at = at;
  return j;
}

TEST(BudgetBook, SpendingCountsEndedJobsClosedAttemptsAndRunningOnes) {
  Policy policy = VisionBudget(100, false);
  BudgetBook book;
  std::map<JobId, Job> jobs;
  jobs[JobId{1}] = EndedJob(1, "vision", 10 * kUnit, kNow);
  book.Recount(policy, jobs, {}, kNow, false);
  EXPECT_TRUE(book.Tracks("vision"));
  EXPECT_FALSE(book.Tracks("speech"));
  book.AttemptClosed("vision", 5 * kUnit);  // a preempted attempt of a live job
  EXPECT_EQ(book.Spent("vision", {{"vision", 2 * kUnit}}), 17 * kUnit);
  book.JobEnded("vision", 5 * kUnit);  // that job ends: its cost moves to the ended
  EXPECT_EQ(book.Spent("vision", {}), 15 * kUnit);
  EXPECT_EQ(book.Spent("speech", {{"speech", kUnit}}), 0);
}

TEST(BudgetBook, AlertsOnceAt80AndOnceAt100Percent) {
  Policy policy = VisionBudget(10, false);
  BudgetBook book;
  std::map<JobId, Job> jobs;
  book.Recount(policy, jobs, {}, kNow, false);
  EXPECT_TRUE(book.Check(policy, jobs, {{"vision", 7 * kUnit}}, kNow).empty());
  std::vector<ClusterEvent> at80 = book.Check(policy, jobs, {{"vision", 8 * kUnit}}, kNow);
  ASSERT_EQ(at80.size(), 1u);
  EXPECT_EQ(at80[0].kind, EventKind::kBudget);
  EXPECT_EQ(at80[0].project, "vision");
  EXPECT_NE(at80[0].message.find("8.00 EUR of its budget of 10.00 EUR this month (80 %)"),
            std::string::npos)
      << at80[0].message;
  EXPECT_TRUE(book.Check(policy, jobs, {{"vision", 9 * kUnit}}, kNow).empty());
  std::vector<ClusterEvent> at100 = book.Check(policy, jobs, {{"vision", 10 * kUnit}}, kNow);
  ASSERT_EQ(at100.size(), 1u);
  EXPECT_NE(at100[0].message.find("(100 %)"), std::string::npos) << at100[0].message;
  EXPECT_TRUE(book.Check(policy, jobs, {{"vision", 12 * kUnit}}, kNow).empty());
}

TEST(BudgetBook, AHardStopRefusesOnlyOnceTheBudgetIsSpent) {
  Policy policy = VisionBudget(10, true);
  BudgetBook book;
  std::map<JobId, Job> jobs;
  book.Recount(policy, jobs, {}, kNow, false);
  EXPECT_TRUE(book.Allows(policy, "vision", kNow).ok());
  (void)book.Check(policy, jobs, {{"vision", 11 * kUnit}}, kNow);
  Status refused = book.Allows(policy, "vision", kNow);
  EXPECT_EQ(refused.code(), Code::kPermissionDenied);
  EXPECT_NE(refused.message().find("11.00 EUR of 10.00 EUR"), std::string::npos)
      << refused.message();
  EXPECT_NE(refused.message().find("until 2026-12-01"), std::string::npos) << refused.message();
  EXPECT_TRUE(book.Allows(policy, "speech", kNow).ok());
  // Without hard_stop, an overspent project still takes jobs.
  Policy soft = VisionBudget(10, false);
  EXPECT_TRUE(book.Allows(soft, "vision", kNow).ok());
}

TEST(BudgetBook, ARecountAfterARestartDoesNotAlertAgain) {
  Policy policy = VisionBudget(10, false);
  std::map<JobId, Job> jobs;
  jobs[JobId{1}] = EndedJob(1, "vision", 9 * kUnit, kNow);
  BudgetBook restarted;
  restarted.Recount(policy, jobs, {}, kNow, /*quiet=*/true);
  EXPECT_TRUE(restarted.Check(policy, jobs, {}, kNow).empty());  // 90 % was reached before
  EXPECT_EQ(restarted.Check(policy, jobs, {{"vision", kUnit}}, kNow).size(), 1u);  // 100 %
}

TEST(BudgetBook, ANewPeriodStartsOverAndANewAmountAlertsAnew) {
  Policy policy = VisionBudget(10, false);
  std::map<JobId, Job> jobs;
  jobs[JobId{1}] = EndedJob(1, "vision", 9 * kUnit, kNow);
  BudgetBook book;
  book.Recount(policy, jobs, {}, kNow, false);
  EXPECT_EQ(book.Check(policy, jobs, {}, kNow).size(), 1u);  // 80 %
  // December: November's jobs no longer count.
  TimePoint december = kNow + std::chrono::hours(24 * 25);
  EXPECT_TRUE(book.Check(policy, jobs, {}, december).empty());
  EXPECT_EQ(book.Spent("vision", {}), 0);
  // A raised budget in the same period: the alert levels of the old amount do not hold.
  BudgetBook raised;
  raised.Recount(policy, jobs, {}, kNow, true);
  Policy bigger = VisionBudget(11, false);
  raised.Recount(bigger, jobs, {}, kNow, false);
  EXPECT_EQ(raised.Check(bigger, jobs, {}, kNow).size(), 1u);  // 9 of 11: 80 % again
}

TEST(BudgetBook, AProjectFirstSeenGetsTheDefaultBudget) {
  Policy policy;
  policy.default_project.budget = Budget{.amount = 5, .period = BudgetPeriod::kDay};
  BudgetBook book;
  book.Recount(policy, {}, {}, kNow, false);
  EXPECT_FALSE(book.Tracks("speech"));
  book.Track(policy, "speech", kNow);
  EXPECT_TRUE(book.Tracks("speech"));
  EXPECT_EQ(book.Check(policy, {}, {{"speech", 5 * kUnit}}, kNow).size(), 1u);
}

}  // namespace
}  // namespace baton::control
