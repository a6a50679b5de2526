// A job's attempt closing (its cost and GPU readings kept), and the budgets (control/budget_book.h)
// fed from the costs (control/job_cost.h).
#include "control/controller.h"
#include "control/job_cost.h"

namespace baton::control {

void Controller::CloseAttempt(Job& job, TimePoint now) {
  int64_t cost = AttemptCost(job, now);
  job.cost_micros += cost;
  budgets_.AttemptClosed(job.spec.project, cost);
  utilization_.Close(job);
}

void Controller::RecountBudgets(TimePoint now, bool quiet) {
  // Every project's: the recount may give a budget to a project that had none.
  budgets_.Recount(options_.policy, jobs_, RunningCostByProject(running_, budgets_, now, true), now,
                   quiet);
}

void Controller::CheckBudgets(TimePoint now) {
  // Every tick: most clusters have no budget, and then nothing walks the running jobs.
  if (budgets_.empty()) return;
  for (ClusterEvent& alert :
       budgets_.Check(options_.policy, jobs_, RunningCostByProject(running_, budgets_, now), now)) {
    events_.Raise(std::move(alert), now);
  }
}

}  // namespace baton::control
