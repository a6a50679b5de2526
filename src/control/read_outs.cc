#include "control/read_outs.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "control/autoscaler.h"
#include "control/job_cost.h"
#include "control/pass_records.h"
#include "core/sizing.h"

namespace baton::control {

const Job* FindJob(const std::map<JobId, Job>& jobs, JobId id, int array_index) {
  auto found = jobs.find(id);
  const Job* job = found == jobs.end() ? nullptr : &found->second;
  if (array_index < 0 || job == nullptr) return job;
  if (job->array_id != id) return nullptr;
  for (auto it = found; it != jobs.end() && it->second.array_id == id; ++it) {
    if (it->second.array_index == array_index) return &it->second;
  }
  return nullptr;
}

Job JobAsShown(const Job& job, TimePoint now) {
  Job shown = job;
  shown.cost_micros = AllCost(job, now);
  return shown;
}

Result<JobDetail> ReadOuts::Get(const GetJob& c, TimePoint now) const {
  const Job* job = FindJob(jobs, c.id, c.array_index);
  if (job == nullptr) {
    return Err(NotFound("job " + TaskName(c.id, c.array_index) + " does not exist"));
  }
  JobDetail r{.job = JobAsShown(*job, now)};
  if (job->state == JobState::kPending) {
    if (auto pos = queue.Position(job->id)) {
      r.queue_position = pos->first;
      r.factors = pos->second;
      sched::ShownFairShare shown(&usage, &policy);
      ShowFactors(*r.factors, *job, shown);
    }
  }
  return r;
}

JobPage ReadOuts::List(const ListJobs& c, TimePoint now) const {
  JobPage r;
  int limit = std::clamp(c.limit, 1, 1000);
  // An array's tasks have the ids from the array's on, one after another (Controller::Submit):
  // its listing looks at them only, not at every job after them.
  const int64_t after = c.array != 0 ? std::max(c.after, c.array - 1) : c.after;
  for (auto it = jobs.upper_bound(JobId{after}); it != jobs.end(); ++it) {
    const Job& j = it->second;
    if (c.array != 0 && j.array_id.value != c.array) {
      if (j.id.value > c.array) break;
      continue;
    }
    if (!c.states.empty() && std::find(c.states.begin(), c.states.end(), j.state) == c.states.end())
      continue;
    if (!c.user.empty() && j.user != c.user) continue;
    if (!c.project.empty() && j.spec.project != c.project) continue;
    if (static_cast<int>(r.jobs.size()) == limit) {
      r.next = r.jobs.back().id.value;
      break;
    }
    r.jobs.push_back(JobAsShown(j, now));
  }
  return r;
}

Result<JobMetrics> ReadOuts::Metrics(const GetJobMetrics& c, TimePoint now) const {
  const Job* job = FindJob(jobs, c.id, c.array_index);
  if (job == nullptr) return Err(NotFound("job " + c.id.ToString() + " does not exist"));
  JobMetrics m{.job = job->id.value,
               .state = job->state,
               .gpu_seconds = AllService(*job, now),
               .cost = static_cast<double>(AllCost(*job, now)) / 1e6,
               .cost_per_hour = static_cast<double>(job->cost_per_hour_micros) / 1e6,
               .currency = policy.currency,
               .utilization_sum = job->utilization_sum,
               .samples = job->utilization_samples};
  utilization.AddTo(job->id, &m.utilization_sum, &m.samples);
  if (job->state == JobState::kRunning) {
    for (const NodeAllocation& part : job->allocation) {
      const NodeRecord* node = nodes.Find(part.node);
      for (int index : part.gpus) {
        JobGpuReading g{.node = part.node, .index = index, .milli = part.milli_per_gpu};
        if (node != nullptr) {
          for (const Gpu& gpu : node->info.gpus) {
            if (gpu.index == index) {
              g.model = gpu.model;
              g.memory_total_bytes = gpu.memory_bytes;
            }
          }
          for (const GpuSample& s : node->samples) {
            if (s.index == index) g.sample = s;
          }
        }
        m.gpus.push_back(std::move(g));
      }
    }
  }
  return m;
}

QueuePage ReadOuts::Queue(const GetQueue& c) const {
  QueuePage r;
  int limit = std::clamp(c.limit, 1, 1000);
  int64_t skipped = 0;
  sched::ShownFairShare shown(&usage, &policy);
  auto take = [&](const Job& j, const QueueFactors& f) {
    if (skipped++ < c.offset) return true;
    if (static_cast<int>(r.jobs.size()) == limit) {
      r.next = c.offset + limit;
      return false;
    }
    r.jobs.push_back(j);
    r.factors.push_back(f);
    ShowFactors(r.factors.back(), j, shown);
    return true;
  };
  // The last full pass's order, then jobs that joined the queue since (not yet ordered).
  std::unordered_set<int64_t> listed;
  listed.reserve(queue.order().size());
  for (const sched::QueueEntry& e : queue.order()) {
    const Job* j = FindJob(jobs, e.id);
    if (j == nullptr || j->state != JobState::kPending || gate.Blocked(e.id)) continue;
    listed.insert(e.id.value);
    if (!take(*j, e.factors)) return r;
  }
  bool more = true;
  queue.ForEach([&](const Job& j) {
    if (more && !listed.count(j.id.value)) more = take(j, QueueFactors{});
  });
  // Then, by id, those that wait for something other than the scheduler (squeue lists them
  // too): dependencies, a begin time, a recurring job's next time, their array's throttle.
  for (JobId id : gate.blocked()) {
    const Job* j = FindJob(jobs, id);
    if (!more || j == nullptr || j->state != JobState::kPending) continue;
    more = take(*j, QueueFactors{});
  }
  return r;
}

void ReadOuts::ShowFactors(QueueFactors& f, const Job& j, sched::ShownFairShare& shown) const {
  // Every account a pass would count: each group's first waiting job, and the running jobs.
  shown.Fill(f, PendingOf(j, numbers), [&] {
    std::vector<sched::PendingJob> accounts;
    for (uint32_t g : queue.live_groups()) {
      if (const sched::JobQueue::Member* head = queue.Head(g)) accounts.push_back(head->record);
    }
    for (const auto& [id, job] : running) accounts.push_back(PendingOf(*job, numbers));
    return accounts;
  });
}

NodeList ReadOuts::Nodes() const {
  NodeList r;
  for (const auto& [name, node] : nodes) {
    NodeStatus s;
    s.info = node.info;
    s.state = ShownState(node);
    s.last_seen = node.last_seen;
    s.samples = node.samples;
    s.gpu_jobs.resize(node.info.gpus.size());
    s.drain_reason = node.drain_reason;
    if (s.drain_reason.empty() && node.reclaim) {
      s.drain_reason = "spot reclaim notice (" + node.reclaim->source + "): taken back at " +
                       FormatRfc3339(node.reclaim->deadline);
    }
    s.cooling_until = node.cooling_until;
    for (const auto& [physical, ordered] : node.mig_reconfiguring)
      s.mig_reconfiguring.push_back(physical);
    s.health = node.health;
    s.health.resize(node.info.gpus.size());
    for (size_t g = 0; g < s.health.size(); ++g) s.health[g].index = static_cast<int>(g);
    s.gpu_drain_reasons.resize(node.info.gpus.size());
    for (const auto& [g, why] : node.gpu_drains) {
      if (g >= 0 && static_cast<size_t>(g) < s.gpu_drain_reasons.size())
        s.gpu_drain_reasons[g] = why;
    }
    // Each GPU's jobs in the order of their ids, from the node's own running jobs.
    for (JobId id : node.running) {
      for (const auto& part : running.at(id)->allocation) {
        if (part.node != name) continue;
        for (int g : part.gpus) {
          if (g >= 0 && static_cast<size_t>(g) < s.gpu_jobs.size())
            s.gpu_jobs[g].push_back(id.value);
        }
      }
    }
    r.nodes.push_back(std::move(s));
  }
  if (scaling != nullptr) scaling->Show(r);
  return r;
}

EventList ReadOuts::Events(const GetEvents& c) const {
  return EventList{events.After(c.after, c.limit)};
}

MetricsShown ReadOuts::Metrics(TimePoint now) const {
  auto m = std::make_shared<MetricsSnapshot>();
  // Kept as jobs change (JobTally), not walked: a million held jobs took 0.21 s to walk.
#ifndef NDEBUG
  if (!tally.SameAs(JobTally::Of(jobs))) {
    std::fprintf(stderr, "the kept tally of jobs is not what the jobs say\n");
    std::abort();
  }
#endif
  constexpr JobState kStates[] = {JobState::kPending,   JobState::kHeld,   JobState::kRunning,
                                  JobState::kSucceeded, JobState::kFailed, JobState::kCancelled,
                                  JobState::kTimedOut};
  for (JobState s : kStates) m->jobs_by_state[std::string(JobStateName(s))] = tally.count(s);
  // Each project's ended attempts, and the running attempts by now.
  for (const auto& [project, sums] : tally.projects()) {
    m->project_gpu_seconds[project] += sums.gpu_seconds;
    m->project_cost[project] += static_cast<double>(sums.cost_micros) / 1e6;
  }
  for (const auto& [id, job] : running) {
    m->project_gpu_seconds[job->spec.project] += AttemptService(*job, now);
    m->project_cost[job->spec.project] += static_cast<double>(AttemptCost(*job, now)) / 1e6;
  }
  static_cast<Counters&>(*m) = counters;
  m->events = static_cast<uint64_t>(events.raised());
  for (std::string_view s : kNodeStateNames) m->nodes_by_state[std::string(s)] = 0;
  for (const auto& [name, node] : nodes) {
    if (scaling == nullptr || !scaling->nodes().count(name))
      m->nodes_by_state[std::string(NodeStateName(ShownState(node)))] += 1;
    const bool ready = node.state == NodeRecord::State::kReady;
    const sched::NodeSlots* slots = view.FindNode(name);
    for (const Gpu& g : node.info.gpus) {
      if (g.vacant) continue;  // a place for a MIG instance, not a device
      GpuMetrics gm{
          .node = name, .index = g.index, .model = g.model, .memory_total_bytes = g.memory_bytes};
      bool failed = !ready || (static_cast<size_t>(g.index) < node.health.size() &&
                               node.health[g.index].state != GpuHealthState::kOk);
      bool drained =
          !node.drain_reason.empty() || node.reclaim || node.gpu_drains.count(g.index) != 0;
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
  if (scaling != nullptr) {
    NodeList scaled;  // autoscaling's nodes, in the states it shows
    for (const auto& [name, n] : scaling->nodes()) {
      if (const NodeRecord* r = nodes.Find(name))
        scaled.nodes.push_back(NodeStatus{.info = r->info, .state = ShownState(*r)});
    }
    scaling->Show(scaled);
    for (const NodeStatus& s : scaled.nodes)
      m->nodes_by_state[std::string(NodeStateName(s.state))] += 1;
  }
  return MetricsShown{std::move(m)};
}

UsageReport ReadOuts::Usage(const GetUsage& c, TimePoint now) const {
  static const NodeLedger kNoNodes;
  const NodeLedger& nodes = node_costs != nullptr ? *node_costs : kNoNodes;
  const BudgetBook::RunningCost running_cost =
      RunningCostByProject(running, budgets, nodes, policy, now);
  std::map<std::string, UsageRow> projects;
  std::map<std::pair<std::string, std::string>, UsageRow> users;
  // Autoscaled nodes kept for them while no job ran there, within the window.
  for (const auto& [owner, micros] :
       nodes.IdleCost(c.since.value_or(TimePoint{}), c.until.value_or(now))) {
    UsageRow& row = owner.second.empty() ? projects[owner.first] : users[owner];
    row.idle_cost += static_cast<double>(micros) / 1e6;
  }
  for (const auto& [id, job] : jobs) {
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
  UsageReport r{.currency = policy.currency, .nodes = nodes.Costs(c.since, c.until, now)};
  for (auto& [name, row] : projects) {
    row.project = name;
    row.fairshare_usage = usage.project(name);
    if (budgets.Tracks(name)) {
      const Budget& b = policy.Project(name).budget;
      row.budget = b.amount;
      row.budget_period = std::string(BudgetPeriodName(b.period));
      row.budget_spent = static_cast<double>(budgets.Spent(name, running_cost)) / 1e6;
    }
    r.projects.push_back(std::move(row));
  }
  for (auto& [key, row] : users) {
    row.project = key.first;
    row.user = key.second;
    row.fairshare_usage = usage.user(key.first, key.second);
    r.users.push_back(std::move(row));
  }
  return r;
}

TokenList ReadOuts::Tokens(const ListTokens& c) const { return TokenList{tokens.List(c.caller)}; }

CronList ReadOuts::Crons(const ListCrons& c, TimePoint now) const {
  CronList r;
  for (const auto& [id, series] : crons.all()) {
    if (!c.user.empty() && jobs.at(series.current).user != c.user) continue;
    r.crons.push_back(Cron(id, now));
  }
  return r;
}

CronEntry ReadOuts::Cron(JobId id, TimePoint now) const {
  const CronBook::Series& s = crons.all().at(id);
  CronEntry e{.id = id, .runs = s.runs, .current = JobAsShown(jobs.at(s.current), now)};
  if (s.last.value != 0) e.last = JobAsShown(jobs.at(s.last), now);
  return e;
}

ModelList ReadOuts::Models() const {
  ModelList list{policy.models};
  list.models.insert(list.models.end(), KnownModels().begin(), KnownModels().end());
  return list;
}

}  // namespace baton::control
