// What a job has used and what it costs: GPU-seconds and money, of its running attempt and of
// all its attempts, by a time. A job's price per hour is fixed when it is placed, from the
// catalog's price of each GPU it holds (Policy::HourlyPrice); its cost grows while it runs.
#pragma once

#include <cstdint>

#include "control/budget_book.h"
#include "control/node_ledger.h"
#include "control/node_table.h"
#include "control/running_jobs.h"
#include "core/job.h"
#include "core/policy.h"

namespace baton::control {

// GPU-seconds the running attempt of `job` has had by `now`.
double AttemptService(const Job& job, TimePoint now);
// GPU-seconds of all of `job`'s attempts by `now`, the running one included.
inline double AllService(const Job& job, TimePoint now) {
  return job.gpu_seconds + (job.state == JobState::kRunning ? AttemptService(job, now) : 0);
}

// Micro-units of the currency: the running attempt's cost by `now`, and all attempts'.
int64_t AttemptCost(const Job& job, TimePoint now);
inline int64_t AllCost(const Job& job, TimePoint now) {
  return job.cost_micros + (job.state == JobState::kRunning ? AttemptCost(job, now) : 0);
}

// The price per hour of the GPUs `job` is placed on (micro-units): on an autoscaled node, its
// share of the template's price (the node's price over its GPUs); elsewhere, by the catalog.
int64_t PricePerHour(const Job& job, const NodeTable& nodes, const Policy& policy);

// What counts against budgets besides ended jobs, by project (every project's with `all`, else
// only the projects `budgets` tracks): the running attempts' cost by `now`, and the autoscaled
// nodes kept idle for the project since its budget's period began (node_ledger.h).
BudgetBook::RunningCost RunningCostByProject(const RunningJobs& running, const BudgetBook& budgets,
                                             const NodeLedger& node_costs, const Policy& policy,
                                             TimePoint now, bool all = false);

}  // namespace baton::control
