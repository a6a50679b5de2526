// A job's attempt closing (its cost and GPU readings kept), the GPU readings of reports, and
// the budgets (control/budget_book.h) fed from the costs (control/job_cost.h).
#include "control/controller.h"
#include "control/job_cost.h"

namespace baton::control {

void Controller::CloseAttempt(Job& job, TimePoint now) {
  int64_t cost = AttemptCost(job, now);
  job.cost_micros += cost;
  budgets_.AttemptClosed(job.spec.project, cost);
  utilization_.Close(job);
}

void Controller::ObserveUtilization(const NodeRecord& node, const std::vector<GpuSample>& samples) {
  if (samples.empty()) return;
  // The node's own jobs: every node reports every 2 s, so a walk of all running jobs here
  // would cost nodes x jobs per interval.
  for (JobId id : node.running) {
    const Job* job = running_.at(id);
    double sum = 0;
    int n = 0;
    for (const NodeAllocation& part : job->allocation) {
      if (part.node != node.info.name || !part.started || part.ended) continue;
      for (int g : part.gpus) {
        for (const GpuSample& s : samples) {
          if (s.index == g) {
            sum += s.utilization_pct;
            ++n;
          }
        }
      }
    }
    if (n == 0) continue;
    utilization_.Add(id, sum / n);
  }
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
