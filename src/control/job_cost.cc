#include "control/job_cost.h"

#include <cmath>
#include <optional>

namespace baton::control {

double AttemptService(const Job& job, TimePoint now) {
  return job.started_at ? GpuSecondsRun(job.spec.resources.milli_gpus, *job.started_at, now) : 0;
}

int64_t AttemptCost(const Job& job, TimePoint now) {
  if (!job.started_at || now <= *job.started_at || job.cost_per_hour_micros == 0) return 0;
  double hours = static_cast<double>((now - *job.started_at).count()) / 3'600'000.0;
  return static_cast<int64_t>(std::llround(static_cast<double>(job.cost_per_hour_micros) * hours));
}

int64_t PricePerHour(const Job& job, const NodeTable& nodes, const Policy& policy) {
  double per_hour = 0;
  for (const NodeAllocation& part : job.allocation) {
    const NodeRecord* node = nodes.Find(part.node);
    if (node == nullptr) continue;
    for (int index : part.gpus) {
      for (const Gpu& g : node->info.gpus) {
        if (g.index != index) continue;
        std::optional<double> price = policy.HourlyPrice(g, node->info.spot);
        if (price) per_hour += *price * static_cast<double>(part.milli_per_gpu) / 1000.0;
      }
    }
  }
  return static_cast<int64_t>(std::llround(per_hour * 1e6));
}

BudgetBook::RunningCost RunningCostByProject(const RunningJobs& running, const BudgetBook& budgets,
                                             TimePoint now, bool all) {
  BudgetBook::RunningCost cost;
  for (const auto& [id, job] : running) {
    if (all || budgets.Tracks(job->spec.project)) cost[job->spec.project] += AttemptCost(*job, now);
  }
  return cost;
}

}  // namespace baton::control
