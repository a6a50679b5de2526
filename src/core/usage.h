// What GET /v1/usage reports: GPU-seconds and cost by project and by user, and the decayed
// usage fair share orders by.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/job.h"
#include "core/node.h"

namespace baton {

struct UsageRow {
  std::string project;
  std::string user;        // "" in a project's row
  int64_t jobs = 0;        // jobs submitted
  int64_t running = 0;     // jobs running now
  double gpu_seconds = 0;  // every attempt, running ones up to now
  double cost = 0;         // in the GPU catalog's currency
  // Autoscaled nodes kept for them while no job ran there: booting for their job, or idle
  // after it (issue 40; store::NodeCharge). Not in `cost`; in `budget_spent`.
  double idle_cost = 0;
  double fairshare_usage = 0;  // decayed GPU-seconds, as of the last scheduling pass
  // Projects with a budget: what it is, and what the current period has used of it.
  std::optional<double> budget;
  std::string budget_period;  // day | week | month | total
  double budget_spent = 0;
};

// The money of autoscaled nodes over a window, by template (issue 40): every node-second at
// its template's price, the part no job ran in, and what a fixed cluster would have cost: as
// many nodes as were ever up at once, on demand, for the whole window.
struct NodeCostRow {
  std::string template_name;
  bool spot = false;
  double node_seconds = 0;
  double cost = 0;
  double idle_cost = 0;  // booting, idle or failed: no job on it
  int peak_nodes = 0;
  double fixed_cost = 0;
};
struct NodeCosts {
  std::vector<NodeCostRow> templates;
  double window_seconds = 0;  // from the first node's resume (or `since`) to `until` (or now)
  double node_seconds = 0, cost = 0, idle_cost = 0, fixed_cost = 0;
  double saved() const { return fixed_cost - cost; }
};

// GET /v1/jobs/{id}/metrics: a job's GPUs with their last readings, and its cost so far.
struct JobGpuReading {
  std::string node;
  int index = 0;
  int64_t milli = 1000;  // the share of the GPU the job holds
  std::string model;
  int64_t memory_total_bytes = 0;
  std::optional<GpuSample> sample;  // none until the agent has reported one
};

struct JobMetrics {
  int64_t job = 0;
  JobState state = JobState::kPending;
  double gpu_seconds = 0;  // every attempt, the running one up to now
  double cost = 0;
  double cost_per_hour = 0;  // of the running attempt, else of the last one
  std::string currency;
  std::vector<JobGpuReading> gpus;  // of the running attempt only
  double utilization_sum = 0;       // per reading, the mean utilisation of the job's GPUs
  int64_t samples = 0;
};

}  // namespace baton
