// Project budgets: what each budgeted project has spent in its current period (day, week,
// month or total), the alerts at 80 % and 100 % of it, and the hard stop that refuses new jobs
// once it is spent. A project's spending is the cost of its jobs that ended in the period, the
// closed attempts of its jobs still alive, and its running attempts' cost so far (which the
// controller, owner of the running jobs, passes in). Owned by the Controller; not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/event.h"
#include "core/job.h"
#include "core/policy.h"
#include "core/status.h"

namespace baton::control {

class BudgetBook {
 public:
  // Per project: the cost of its running attempts so far, in millionths.
  using RunningCost = std::map<std::string, int64_t>;

  // Starts over from the jobs: every budgeted project's period and spending (restore, a new
  // policy, a new period). `quiet`: the alert levels already reached count as alerted, so a
  // restart does not alert again.
  void Recount(const Policy& policy, const std::map<JobId, Job>& jobs, const RunningCost& running,
               TimePoint now, bool quiet);
  // A project first seen: under the default budget, if there is one, from now.
  void Track(const Policy& policy, const std::string& project, TimePoint now);
  // An attempt of a job of `project` that is still alive closed, costing `micros`.
  void AttemptClosed(const std::string& project, int64_t micros);
  // A job of `project` ended, having cost `micros` over all its attempts.
  void JobEnded(const std::string& project, int64_t micros);
  // Starts new periods and returns the alerts of budgets that crossed 80 % or 100 %.
  std::vector<ClusterEvent> Check(const Policy& policy, const std::map<JobId, Job>& jobs,
                                  const RunningCost& running, TimePoint now);
  // PermissionDenied, naming spend, budget and the end of the period, when `project` has a
  // hard-stop budget that is spent (running attempts as of the last Check).
  Status Allows(const Policy& policy, const std::string& project, TimePoint now) const;
  bool Tracks(const std::string& project) const { return budgets_.count(project) != 0; }
  bool empty() const { return budgets_.empty(); }
  // What `project` has spent in its period; 0 for a project without a budget.
  int64_t Spent(const std::string& project, const RunningCost& running) const;

 private:
  struct State {
    TimePoint period_start{};
    TimePoint next_period{};
    int64_t ended_cost = 0;    // jobs that ended in this period
    int64_t running_cost = 0;  // its running attempts' cost as of the last Check
    double amount = 0;         // the budget the alerts were for: a new amount alerts anew
    int alerted = 0;           // 0, 1 (80 % alerted), 2 (100 % alerted)
  };
  static State Start(const Budget& budget, TimePoint now);
  int64_t Open(const std::string& project) const;

  std::map<std::string, State> budgets_;      // projects with a budget
  std::map<std::string, int64_t> open_cost_;  // by project: closed attempts of live jobs
};

}  // namespace baton::control
