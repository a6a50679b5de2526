#include "control/job_cost.h"

#include <cmath>
#include <map>
#include <optional>

#include "control/autoscale_plan.h"

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
    // An autoscaled node: its GPUs' share of what the node costs.
    if (const NodeTemplate* t = TemplateOfNode(policy.autoscaling.templates, part.node);
        t != nullptr && t->gpus > 0 && t->price_per_hour > 0) {
      per_hour += t->price_per_hour / t->gpus * static_cast<double>(part.gpus.size()) *
                  static_cast<double>(part.milli_per_gpu) / 1000.0;
      continue;
    }
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
                                             const NodeLedger& node_costs, const Policy& policy,
                                             TimePoint now, bool all) {
  BudgetBook::RunningCost cost;
  for (const auto& [id, job] : running) {
    if (all || budgets.Tracks(job->spec.project)) cost[job->spec.project] += AttemptCost(*job, now);
  }
  if (node_costs.charges().empty()) return cost;
  // From the ledger's sums by day: once for all time (which projects it charged), then once
  // per kind of period the budgets of those projects have (day, week, month).
  std::map<BudgetPeriod, std::map<std::string, int64_t>> idle;
  idle[BudgetPeriod::kTotal] = node_costs.IdleCostSince(TimePoint{}, now);
  for (const auto& [p, ever] : idle.at(BudgetPeriod::kTotal)) {
    const Budget& b = policy.Project(p).budget;
    if (b.amount < 0 || (!all && !budgets.Tracks(p))) continue;
    auto [it, fresh] = idle.try_emplace(b.period);
    if (fresh) it->second = node_costs.IdleCostSince(PeriodStart(b.period, now), now);
    if (auto owed = it->second.find(p); owed != it->second.end()) cost[p] += owed->second;
  }
  return cost;
}

}  // namespace baton::control
