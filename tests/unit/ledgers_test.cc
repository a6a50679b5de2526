// The ledgers on their own: an attempt's GPUs charged to its account's fair-share rate while
// it runs and its GPU-seconds, cost and readings joined to the job's as it stops; a restore
// that charges the history and the running jobs again; budgets fed by attempts and ends.
#include "control/ledgers.h"

#include <gtest/gtest.h>

namespace baton::control {
namespace {

// 2026-11-10 12:00 UTC: mid-month, mid-week.
const TimePoint kNow = FromMillis(1'794'312'000'000);
constexpr int64_t kUnit = 1'000'000;  // one currency unit in millionths

struct World {
  Policy policy;
  std::map<JobId, Job> jobs;
  RunningJobs running;
  NodeLedger node_costs;
  Ledgers ledgers{Ledgers::Shared{
      .policy = policy, .jobs = jobs, .running = running, .node_costs = node_costs}};
};

Job RunningJob(int64_t id, TimePoint started, int64_t cost_per_hour) {
  Job j;
  j.id = JobId{id};
  j.user = "ada";
  j.spec.project = "vision";
  j.spec.resources.milli_gpus = 2000;
  j.state = JobState::kRunning;
  j.started_at = started;
  j.cost_per_hour_micros = cost_per_hour;
  return j;
}

TEST(Ledgers, AnAttemptIsChargedWhileItRunsAndItsServiceAndCostJoinTheJobAsItStops) {
  World w;
  w.policy.projects["vision"].budget =
      Budget{.amount = 100, .period = BudgetPeriod::kMonth, .hard_stop = true};
  w.ledgers.Restore(kNow);
  Job& job = w.jobs[JobId{1}] = RunningJob(1, kNow, 10 * kUnit);
  w.ledgers.Track("vision", kNow);
  w.ledgers.Started(job, kNow);
  w.ledgers.utilization().Add(job.id, 50);
  const TimePoint later = kNow + std::chrono::hours(1);
  w.ledgers.usage().Advance(later);
  // Two GPUs for an hour, decayed a little (a week's half-life).
  EXPECT_GT(w.ledgers.usage().user("vision", "ada"), 7100);
  EXPECT_LT(w.ledgers.usage().user("vision", "ada"), 7200);
  w.ledgers.Stopped(job, later);
  EXPECT_DOUBLE_EQ(job.gpu_seconds, 7200);
  EXPECT_EQ(job.cost_micros, 10 * kUnit);
  EXPECT_EQ(job.utilization_samples, 1);
  EXPECT_EQ(w.ledgers.budgets().Spent("vision", {}), 10 * kUnit);
  // Stopped: no rate left, so an hour more adds nothing.
  const double used = w.ledgers.usage().user("vision", "ada");
  w.ledgers.usage().Advance(later + std::chrono::hours(1));
  EXPECT_LT(w.ledgers.usage().user("vision", "ada"), used);
  // Its end moves its cost from the live jobs' to the ended ones': spent the same.
  job.state = JobState::kSucceeded;
  w.ledgers.Ended(job);
  EXPECT_EQ(w.ledgers.budgets().Spent("vision", {}), 10 * kUnit);
  EXPECT_TRUE(w.ledgers.Allows("vision", later).ok());
}

TEST(Ledgers, ARestoreChargesWhatRanAndWhatRunsAndDoesNotAlertAgain) {
  World w;
  w.policy.projects["vision"].budget =
      Budget{.amount = 10, .period = BudgetPeriod::kMonth, .hard_stop = true};
  // An hour that ran and ended, and a job running since an hour ago with 12 spent before.
  Job ended = RunningJob(1, kNow - std::chrono::hours(2), 0);
  ended.state = JobState::kSucceeded;
  ended.finished_at = kNow - std::chrono::hours(1);
  ended.cost_micros = 0;
  w.jobs[ended.id] = ended;
  Job& live = w.jobs[JobId{2}] = RunningJob(2, kNow - std::chrono::hours(1), 0);
  live.cost_micros = 12 * kUnit;  // earlier attempts'
  w.ledgers.Restore(kNow);
  EXPECT_GT(w.ledgers.usage().user("vision", "ada"), 2 * 7200 * 0.99);
  // The live job's rate is charged from here on: stopping it takes it off again.
  w.ledgers.Stopped(live, kNow);
  const double after = w.ledgers.usage().user("vision", "ada");
  w.ledgers.usage().Advance(kNow + std::chrono::hours(1));
  EXPECT_LT(w.ledgers.usage().user("vision", "ada"), after);
  // Spent past its budget before the restart: refused, but not alerted again.
  EXPECT_FALSE(w.ledgers.Allows("vision", kNow).ok());
  EXPECT_TRUE(w.ledgers.CheckBudgets(kNow).empty());
}

TEST(Ledgers, ANewPolicyTakesItsHalfLifeAndItsBudgetsAlertAnew) {
  World w;
  w.ledgers.Restore(kNow);
  EXPECT_TRUE(w.ledgers.CheckBudgets(kNow).empty());  // no budget: nothing to walk
  Job& job = w.jobs[JobId{1}] = RunningJob(1, kNow, 0);
  job.state = JobState::kSucceeded;
  job.cost_micros = 9 * kUnit;
  job.finished_at = kNow;
  w.policy.fairshare_half_life = std::chrono::hours(1);
  w.policy.projects["vision"].budget =
      Budget{.amount = 10, .period = BudgetPeriod::kMonth, .hard_stop = false};
  w.ledgers.PolicyChanged(kNow);
  EXPECT_EQ(w.ledgers.usage().half_life(), std::chrono::hours(1));
  std::vector<ClusterEvent> alerts = w.ledgers.CheckBudgets(kNow);
  ASSERT_EQ(alerts.size(), 1u);
  EXPECT_EQ(alerts[0].kind, EventKind::kBudget);
}

}  // namespace
}  // namespace baton::control
