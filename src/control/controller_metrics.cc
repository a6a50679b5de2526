// The controller's side of GET /metrics: a snapshot of jobs, nodes, GPUs and usage, taken on
// the loop's thread (control/metrics.h says what is in it).
#include "control/controller.h"

namespace baton::control {

MetricsShown Controller::Metrics(TimePoint now) const {
  auto m = std::make_shared<MetricsSnapshot>();
  for (JobState s : {JobState::kPending, JobState::kHeld, JobState::kRunning, JobState::kSucceeded,
                     JobState::kFailed, JobState::kCancelled, JobState::kTimedOut}) {
    m->jobs_by_state[std::string(JobStateName(s))] = 0;
  }
  for (const auto& [id, job] : jobs_) {
    m->jobs_by_state[std::string(JobStateName(job.state))] += 1;
    double service = AllService(job, now);
    m->project_gpu_seconds[job.spec.project] += service;
    m->project_cost[job.spec.project] += static_cast<double>(AllCost(job, now)) / 1e6;
  }
  static_cast<Counters&>(*m) = counters_;
  m->events = static_cast<uint64_t>(events_.raised());
  for (std::string_view s : kNodeStateNames) m->nodes_by_state[std::string(s)] = 0;
  for (const auto& [name, node] : nodes_) {
    m->nodes_by_state[std::string(NodeStateName(ShownState(node)))] += 1;
    const bool ready = node.state == NodeRecord::State::kReady;
    const sched::NodeSlots* slots = view_.FindNode(name);
    for (const Gpu& g : node.info.gpus) {
      GpuMetrics gm{
          .node = name, .index = g.index, .model = g.model, .memory_total_bytes = g.memory_bytes};
      bool failed = !ready || (static_cast<size_t>(g.index) < node.health.size() &&
                               node.health[g.index].state != GpuHealthState::kOk);
      bool drained = !node.drain_reason.empty() || node.gpu_drains.count(g.index) != 0;
      bool allocated = slots != nullptr && static_cast<size_t>(g.index) < slots->gpus.size() &&
                       slots->gpus[g.index].free_milli < 1000;
      gm.state = failed      ? GpuUse::kFailed
                 : drained   ? GpuUse::kDrained
                 : allocated ? GpuUse::kAllocated
                             : GpuUse::kIdle;
      for (const GpuSample& s : node.samples) {
        if (s.index != g.index) continue;
        gm.sampled = true;
        gm.utilization_pct = s.utilization_pct;
        gm.memory_used_bytes = s.memory_used_bytes;
        gm.temperature_c = s.temperature_c;
        gm.power_w = s.power_w;
      }
      m->gpus.push_back(std::move(gm));
    }
  }
  return MetricsShown{std::move(m)};
}

UsageReport Controller::Usage(const GetUsage& c, TimePoint now) const {
  const BudgetBook::RunningCost running_cost = RunningCostByProject(now);
  std::map<std::string, UsageRow> projects;
  std::map<std::pair<std::string, std::string>, UsageRow> users;
  for (const auto& [id, job] : jobs_) {
    if (c.until && job.submitted_at >= *c.until) continue;
    if (c.since && job.finished_at && *job.finished_at < *c.since) continue;
    double service = AllService(job, now);
    double cost = static_cast<double>(AllCost(job, now)) / 1e6;
    for (UsageRow* row : {&projects[job.spec.project], &users[{job.spec.project, job.user}]}) {
      row->jobs += 1;
      row->running += job.state == JobState::kRunning;
      row->gpu_seconds += service;
      row->cost += cost;
    }
  }
  UsageReport r{.currency = options_.policy.currency};
  for (auto& [name, row] : projects) {
    row.project = name;
    row.fairshare_usage = usage_.project(name);
    if (budgets_.Tracks(name)) {
      const Budget& b = options_.policy.Project(name).budget;
      row.budget = b.amount;
      row.budget_period = std::string(BudgetPeriodName(b.period));
      row.budget_spent = static_cast<double>(budgets_.Spent(name, running_cost)) / 1e6;
    }
    r.projects.push_back(std::move(row));
  }
  for (auto& [key, row] : users) {
    row.project = key.first;
    row.user = key.second;
    row.fairshare_usage = usage_.user(key.first, key.second);
    r.users.push_back(std::move(row));
  }
  return r;
}

}  // namespace baton::control
