// The controller's scheduling: when a pass runs, what it is given, and what its decisions
// change (starts, preemptions, reservations and claims, reasons); and the queue view.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>
#include <unordered_set>

#include "control/controller.h"
#include "sched/holdings.h"

namespace baton::control {
namespace {

// The MASTER_PORT the job's own env sets, if it is a port (1-65535: anything else the job
// cannot listen on, and a record must hold only ports).
std::optional<int> OwnMasterPort(const Job& job) {
  for (const auto& [key, value] : job.spec.env) {
    if (key != "MASTER_PORT") continue;
    int port = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), port);
    if (ec == std::errc() && end == value.data() + value.size() && port >= 1 && port <= 65535)
      return port;
  }
  return std::nullopt;
}

// The rendezvous ports in use, by rank-0 node: where each running multi-node or multi-process
// job meets.
using PortsByNode = std::map<std::string, std::set<int>, std::less<>>;

PortsByNode MasterPortsInUse(const RunningJobs& running) {
  PortsByNode ports;
  for (const auto& [id, job] : running) {
    if (!MeetsOverNetwork(*job)) continue;
    // A job started before master_port was kept met at its own port, else at the default.
    int port = job->master_port > 0 ? job->master_port
                                    : OwnMasterPort(*job).value_or(DefaultMasterPort(id));
    ports[job->allocation.front().node].insert(port);
    // A batch script's step servers listen on every node of the job.
    if (job->step_port > 0) {
      for (const NodeAllocation& part : job->allocation) ports[part.node].insert(job->step_port);
    }
  }
  return ports;
}

// The port the job starting now meets at, taken in `used` (its rank-0 node's): its own, else
// its default, else the next one of the range that no job there meets at.
int TakeMasterPort(const Job& job, std::set<int>& used) {
  if (std::optional<int> own = OwnMasterPort(job)) {
    used.insert(*own);
    return *own;
  }
  int preferred = DefaultMasterPort(job.id);
  for (int i = 0; i < kMasterPorts; ++i) {
    int port = kFirstMasterPort + (preferred - kFirstMasterPort + i) % kMasterPorts;
    if (used.insert(port).second) return port;
  }
  return preferred;  // 10,000 gangs meeting on one node: share
}

// The port a batch script's step servers listen at, on every node of its allocation: the first
// after its master port that none of those nodes has in use, taken on each.
int TakeStepPort(const Job& job, PortsByNode& ports) {
  for (int i = 1; i < kMasterPorts; ++i) {
    int port = job.master_port + i;
    if (port > 65535) port -= 65535 - kFirstMasterPort + 1;
    bool free =
        std::none_of(job.allocation.begin(), job.allocation.end(),
                     [&](const NodeAllocation& p) { return ports[p.node].count(port) > 0; });
    if (!free) continue;
    for (const NodeAllocation& p : job.allocation) ports[p.node].insert(port);
    return port;
  }
  return job.master_port + 1;  // every port of the range in use on its nodes: share
}

}  // namespace

// ---- scheduling ----

sched::PendingJob Controller::PendingOf(const Job& j) const {
  // The queue's plain record, with this controller's account number and shared pool name.
  sched::PendingJob p = sched::JobQueue::PendingRecord(j);
  p.pool = numbers_.PoolOf(j);
  p.account = numbers_.AccountOf(j);
  return p;
}

RunningJobs::Kept Controller::KeptOf(const Job& j) const {
  const TimePoint start = j.started_at.value_or(TimePoint{});  // RunningJobs::AtTime if none
  const Duration limit = j.spec.time_limit;
  return RunningJobs::Kept{
      .record =
          sched::RunningJob{
              .id = j.id,
              .resources = &j.spec.resources,
              .allocation = &j.allocation,
              .priority = j.spec.priority,
              .project = &j.spec.project,
              .user = &j.user,
              .pool = numbers_.PoolOf(j),
              .started = start,
              .expected_end = limit.count() > 0 ? start + limit : sched::kNever,
              .last_checkpoint = j.last_checkpoint.value_or(start),
              .stopping = j.stop_requested || j.preempt_requested,
              .service = 0,
              .account = numbers_.AccountOf(j),
              .first_node = j.allocation.empty() ? -1 : view_.IndexOf(j.allocation.front().node)},
      .clock = RunningJobs::Clock{.gpu_seconds = j.gpu_seconds,
                                  .milli_gpus = j.spec.resources.milli_gpus,
                                  .time_limit = limit,
                                  .started = j.started_at.has_value(),
                                  .checkpointed = j.last_checkpoint.has_value()}};
}

sched::RunningJob Controller::RunningOf(const Job& j, TimePoint now) const {
  RunningJobs::Kept kept = KeptOf(j);
  RunningJobs::AtTime(kept.record, kept.clock, now);
  return kept.record;
}

void Controller::ShowFactors(QueueFactors& f, const Job& j, sched::ShownFairShare& shown) const {
  // Every account a pass would count: each group's first waiting job, and the running jobs.
  shown.Fill(f, PendingOf(j), [&] {
    std::vector<sched::PendingJob> accounts;
    for (uint32_t g : queue_.live_groups()) {
      if (const sched::JobQueue::Member* head = queue_.Head(g)) accounts.push_back(head->record);
    }
    for (const auto& [id, job] : running_) accounts.push_back(PendingOf(*job));
    return accounts;
  });
}

void Controller::KeepRunningRecords() {
  for (JobId id : dirty_) {
    if (const Job& j = jobs_.at(id); j.state == JobState::kRunning) running_.Keep(id, KeptOf(j));
  }
}

// Which jobs a pass looks at, and when the queue is ordered again, is the queue's to plan
// (sched/job_queue.h); the controller hands the pass its jobs and takes in its decisions.
void Controller::Schedule(TimePoint now) {
  // The running jobs' records (RunningJobs) of the jobs changed in this batch (every change to
  // a job is saved, so marked dirty), made again pass or no pass.
  KeepRunningRecords();
  const bool head_is_enough = HeadIsEnough();
  const bool quiet = head_is_enough && !options_.policy.preemption;
  // Read by the queue only when GPUs were freed: no walk over the nodes for other batches.
  const bool stuck = quiet && queue_.freed() && BlockerIsStuck();
  // A full pass walks the queue's groups (sched/job_queue.h), merged as far as it goes, unless
  // it is given the head of the queue alone; the groups' order needs age to count upward.
  const bool grouped = !head_is_enough && options_.policy.weights.age >= 0;
  sched::JobQueue::Plan plan = queue_.Next(
      now, !options_.policy.backfill,
      [&](JobId id) -> const Job* {
        const Job& j = jobs_.at(id);
        return j.state == JobState::kPending && !gate_.Blocked(id) ? &j : nullptr;
      },
      head_is_enough ? kStrictHead : 0, quiet, stuck, grouped);
  if (plan.jobs.empty() && !plan.grouped) return;
  const bool full = plan.kind == sched::JobQueue::Kind::kFull;
  sched::PassInput in;
  // The running jobs' records, brought to now and lent to the pass; given back before its
  // decisions start or stop any job.
  running_.AdvanceTo(now);
  in.running = std::move(pass_running_);  // the last pass's buffer, given to running_ meanwhile
  running_.SwapRecords(in.running);
#ifndef NDEBUG
  // What is kept is what the jobs say: a change that was not marked dirty would show here.
  for (size_t i = 0; const auto& [id, job] : running_) {
    if (in.running[i++] == RunningOf(*job, now)) continue;
    std::fprintf(stderr, "the kept record of running job %s is not the job's\n",
                 id.ToString().c_str());
    std::abort();
  }
#endif
  usage_.Advance(now);
  in.usage = &usage_;
  in.policy = &options_.policy;
  in.now = now;
  in.full = full;
  if (full) {
    in.explained = options_.explained_waits;
  } else if (options_.explained_waits == 0 && !RepassMayFollow()) {
    // A pass that is not full explains its waits for the re-pass rule (ApplyPass) even where
    // no one reads the reasons (the simulator): not when that rule can find nothing in them.
    in.explained = 0;
  }
  in.blocker = plan.blocker;
  in.ahead = plan.ahead;
  if (full) in.claims = claims_;
  sched::PassResult pass;
  while (true) {
    if (plan.grouped) {
      in.queue = &queue_;
      in.pending = std::move(pass_pending_);  // filled as the pass walks: its last buffer
      in.pending.clear();
      in.pending.reserve(queue_.size());
    } else if (!plan.records.empty()) {
      in.pending = std::move(plan.records);  // the queue's copies, made as the jobs joined it
    } else {
      in.pending.clear();
      in.pending.reserve(plan.jobs.size());
      for (const Job* j : plan.jobs) in.pending.push_back(PendingOf(*j));
    }
    in.partial = plan.partial;
    pass_view_.CopyFrom(view_);  // into the last pass's buffers: what changed since
    in.view = std::move(pass_view_);
    pass = sched::RunPassOn(in);
    pass_view_ = std::move(in.view);
    if (!pass.wanted_more) break;
    // The head given was too short (a long run of jobs that start): a pass is pure, so it
    // runs again on a longer one.
    std::tie(plan.jobs, plan.partial) = queue_.First(plan.jobs.size() * 4, &plan.records);
  }
  running_.SwapRecords(in.running);  // back before any job starts or stops
  if (full) {
    const Job* blocker = nullptr;
    if (pass.blocker) {
      blocker = plan.grouped ? &jobs_.at(in.pending[*pass.blocker].id) : plan.jobs[*pass.blocker];
    }
    queue_.Blocked(blocker);
  }
  bool could_preempt = ApplyPass(pass, in, plan.jobs, plan.partial, now);
  if (plan.grouped) pass_pending_ = std::move(in.pending);
  pass_running_ = std::move(in.running);  // the buffer lent to running_
  if (queue_.WantsRepass(plan.kind, could_preempt, now)) Schedule(now);
}

bool Controller::BlockerIsStuck() const {
  // Strict order: every job ahead of the blocker started (no limit held one back), and no
  // node has as much GPU capacity free as one part of it asks (a bound that ignores type,
  // memory, CPUs and reservations: it may say no when it could not start, never the reverse).
  std::optional<JobId> id = queue_.blocker();
  if (!id || sched::AnyLimit(options_.policy)) return false;
  const Job* j = FindJob(*id);
  if (j == nullptr || j->state != JobState::kPending) return false;
  const Resources& r = j->spec.resources;
  const int64_t per_node = r.milli_gpus / std::max(r.nodes, 1);
  if (per_node <= 0) return false;
  for (const sched::NodeSlots& n : view_.nodes) {
    if (!n.schedulable || n.pool != j->spec.pool) continue;
    int64_t free = 0;
    for (const sched::GpuSlot& g : n.gpus) free += g.usable ? g.free_milli : 0;
    if (free >= per_node) return false;
  }
  return true;
}

bool Controller::HeadIsEnough() const {
  // Strict order (no backfill) by a score that only the class makes, and no claims to put
  // first: the pass's order is the queue's own, and it walks only to the first job that
  // waits and the kExplainedWaits after it. Every other job would only be counted.
  const Policy& p = options_.policy;
  const Weights& w = p.weights;
  return !p.backfill && claims_.empty() && w.fairshare == 0 && w.age == 0 && w.size == 0 &&
         w.las == 0 && (w.priority > 0 || queue_.OneClass());
}

bool Controller::ApplyPass(sched::PassResult& pass, const sched::PassInput& in,
                           const std::vector<const Job*>& given, bool partial, TimePoint now) {
  // The pass's jobs by their index in its input, without a lookup in the map of all jobs when
  // the plan has them. They are this controller's own (jobs_), lent to the queue as const.
  auto job_at = [&](uint32_t index) -> Job& {
    return in.queue != nullptr ? jobs_.at(in.pending[index].id) : const_cast<Job&>(*given[index]);
  };
  const bool full = in.full;
  if (full) {
    if (in.queue != nullptr) {
      queue_.OrderedHead(std::move(pass.order), pass.sorted, std::move(pass.rest), now,
                         options_.policy);
    } else {
      queue_.Ordered(std::move(pass.order), pass.sorted, partial);
    }
    view_.ClearReservations();
    claims_.clear();
    for (const auto& r : pass.reservations) {
      sched::MarkReservation(view_, r);
      if (r.claim) claims_.push_back(r);
    }
  }
  for (const sched::Wait& w : pass.waits) {
    Job& j = job_at(w.index);
    j.reason = w.reason;
    j.reason_detail = pass.texts[w.text];  // a copy into the buffer it has: no allocation
    j.queue_ahead = w.ahead;
    j.reason_at = now;
    j.estimated_start = w.estimated_start;
  }
  for (const sched::Preemption& p : pass.preemptions) {
    Job& victim = jobs_.at(p.victim);
    if (victim.state != JobState::kRunning || victim.stop_requested || victim.preempt_requested)
      continue;
    victim.preempt_requested = true;
    ++counters_.preemptions;
    victim.reason_detail = "preempted (" + std::string(PreemptReasonName(p.reason)) + ") for job " +
                           p.for_job.ToString();
    StopParts(victim, StopReason::kPreempt, options_.policy.preempt_grace, now);
  }
  // An arrival that waits but could preempt (a lower class runs, or its project has a
  // guarantee): the lowest class among the jobs running before this pass's starts.
  bool could_preempt = false;
  if (!full && options_.policy.preemption) {
    std::optional<int> lowest_running;  // walked only once a job waits for resources
    for (const sched::Wait& w : pass.waits) {
      if (w.reason != WaitReason::kResources) continue;
      const Job& j = job_at(w.index);
      if (!lowest_running) lowest_running = LowestRunningClass();
      if (static_cast<int>(j.spec.priority) > *lowest_running ||
          options_.policy.Project(j.spec.project).guaranteed_milli > 0) {
        could_preempt = true;
        break;
      }
    }
  }
  std::optional<PortsByNode> ports;  // built at the pass's first start that needs one
  for (sched::Start& s : pass.starts) {
    Job& j = job_at(s.index);
    j.allocation = std::move(s.allocation);
    j.master_port = 0;
    j.step_port = 0;
    if (MeetsOverNetwork(j)) {
      if (!ports) ports = MasterPortsInUse(running_);
      j.master_port = TakeMasterPort(j, (*ports)[j.allocation.front().node]);
      if (j.spec.batch && (j.allocation.size() > 1 || j.spec.alloc))
        j.step_port = TakeStepPort(j, *ports);
    }
    StartJob(j, now);
  }
  return could_preempt;
}

int Controller::LowestRunningClass() const {
  int lowest = static_cast<int>(Priority::kCritical) + 1;
  for (const auto& [id, job] : running_)
    lowest = std::min(lowest, static_cast<int>(job->spec.priority));
  return lowest;
}

bool Controller::RepassMayFollow() const {
  const Policy& p = options_.policy;
  if (!p.preemption) return false;
  if (p.default_project.guaranteed_milli > 0) return true;
  for (const auto& [name, project] : p.projects) {
    if (project.guaranteed_milli > 0) return true;
  }
  return queue_.HighestClass() > LowestRunningClass();
}

void Controller::StartJob(Job& j, TimePoint now) {
  view_.Apply(j.allocation, j.spec.resources, +1);
  j.launched = false;
  j.stop_requested = false;
  j.preempt_requested = false;
  j.last_checkpoint.reset();
  j.estimated_start.reset();
  j.reason = WaitReason::kNone;
  j.reason_detail.clear();
  SetState(j, JobState::kRunning, now);
  Launch(j);
}

QueuePage Controller::Queue(const GetQueue& c) const {
  QueuePage r;
  int limit = std::clamp(c.limit, 1, 1000);
  int64_t skipped = 0;
  sched::ShownFairShare shown = FairShareShown();
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
  listed.reserve(queue_.order().size());
  for (const sched::QueueEntry& e : queue_.order()) {
    const Job* j = FindJob(e.id);
    if (j == nullptr || j->state != JobState::kPending || gate_.Blocked(e.id)) continue;
    listed.insert(e.id.value);
    if (!take(*j, e.factors)) return r;
  }
  bool more = true;
  queue_.ForEach([&](const Job& j) {
    if (more && !listed.count(j.id.value)) more = take(j, QueueFactors{});
  });
  // Then, by id, those that wait for something other than the scheduler (squeue lists them
  // too): dependencies, a begin time, a recurring job's next time, their array's throttle.
  for (JobId id : gate_.blocked()) {
    const Job* j = FindJob(id);
    if (!more || j == nullptr || j->state != JobState::kPending) continue;
    more = take(*j, QueueFactors{});
  }
  return r;
}

}  // namespace baton::control
