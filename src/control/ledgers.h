// What the jobs' attempts are charged as they start and stop: the fair-share usage ledger
// (sched/fair_share.h), the projects' budgets (budget_book.h) and the running attempts' GPU
// readings (attempt_utilization.h). An attempt that starts adds its GPUs to its account's
// rate; one that stops takes them off, adds its GPU-seconds and cost to its job's, and closes
// its readings; a job that ends counts against its project's budget. It reads the policy, the
// jobs and the running jobs its owner keeps (Shared). Owned by the Controller; not
// thread-safe.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "control/attempt_utilization.h"
#include "control/budget_book.h"
#include "control/node_ledger.h"
#include "control/running_jobs.h"
#include "core/event.h"
#include "core/job.h"
#include "core/policy.h"
#include "sched/fair_share.h"

namespace baton::control {

class Ledgers {
 public:
  // What it reads of its owner's, by reference: the owner outlives it and keeps it in place.
  struct Shared {
    const Policy& policy;
    const std::map<JobId, Job>& jobs;
    const RunningJobs& running;
    const NodeLedger& node_costs;  // idle autoscaled nodes count against budgets
  };
  explicit Ledgers(Shared shared);

  // From the jobs as restored: fair-share usage from their history, decayed to `now` (and the
  // running ones' rates), the budgets' spending, their alerts already reached kept quiet.
  void Restore(TimePoint now);
  // The policy changed: a new half-life, and the budgets counted again (alerting anew).
  void PolicyChanged(TimePoint now);

  // `job`'s attempt starts (its GPUs join its account's rate) or stops (they leave it; its
  // GPU-seconds, cost and readings join the job's); `job` ended.
  void Started(const Job& job, TimePoint now);
  void Stopped(Job& job, TimePoint now);
  void Ended(const Job& job);

  // A project first seen (under the default budget, if any); whether `project` may submit.
  void Track(const std::string& project, TimePoint now);
  Status Allows(const std::string& project, TimePoint now) const;
  // Every tick: new budget periods, and the alerts of budgets that crossed 80 % or 100 %.
  std::vector<ClusterEvent> CheckBudgets(TimePoint now);

  sched::UsageLedger& usage() { return usage_; }
  const sched::UsageLedger& usage() const { return usage_; }
  const BudgetBook& budgets() const { return budgets_; }
  AttemptUtilization& utilization() { return utilization_; }
  const AttemptUtilization& utilization() const { return utilization_; }

 private:
  // Counts the budgets again (`quiet`: alert levels reached count as alerted).
  void RecountBudgets(TimePoint now, bool quiet);

  Shared shared_;
  sched::UsageLedger usage_;
  BudgetBook budgets_;
  AttemptUtilization utilization_;
};

}  // namespace baton::control
