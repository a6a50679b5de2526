#include "control/controller.h"

#include <algorithm>
#include <cstdlib>
#include <unordered_set>

#include "core/quantity.h"

namespace baton::control {
namespace {

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

Reply ErrorReply(Status s) {
  Reply r;
  r.status = std::move(s);
  return r;
}

std::string KeyOf(const std::string& user, const std::string& key) { return user + '\n' + key; }

}  // namespace

Controller::Controller(ControllerOptions options)
    : options_(std::move(options)), usage_(options_.policy.fairshare_half_life) {}

void Controller::Restore(store::Snapshot snapshot, TimePoint now) {
  next_id_ = snapshot.next_job_id;
  for (auto& e : snapshot.idempotency) keys_[KeyOf(e.user, e.key)] = e;
  for (Job& job : snapshot.jobs) {
    JobId id = job.id;
    next_id_ = std::max(next_id_, id.value + 1);
    Job& j = jobs_[id] = std::move(job);
    if (j.state == JobState::kPending) {
      Enqueue(j, now);
    } else if (j.state == JobState::kRunning) {
      running_.insert(id);
      // Its nodes must come back and say what became of it; until then they are awaited.
      for (const auto& part : j.allocation) {
        NodeRecord& n = EnsureNode(part.node);
        n.last_seen = now;
      }
    }
  }
  for (const store::Drain& d : snapshot.drains) {
    if (!IsValidNodeName(d.node)) continue;
    NodeRecord& n = EnsureNode(d.node);
    if (d.gpu < 0) n.drain_reason = d.reason;
    else n.gpu_drains[d.gpu] = d.reason;
  }
  // Fair-share usage from the jobs' own history: what ran, decayed to now.
  usage_.Advance(now);
  for (const auto& [id, j] : jobs_) {
    // A running job is charged from the pass that placed it until it leaves `running`,
    // whether or not its start was reported: the charge must match what leaving takes off.
    if (j.state == JobState::kRunning) usage_.AddRate(j.spec.project, j.user, j.spec.resources.milli_gpus);
    if (!j.started_at) continue;
    TimePoint end = j.finished_at.value_or(now);
    usage_.AddPast(j.spec.project, j.user, j.spec.resources.milli_gpus, *j.started_at, end);
  }
  // Reasons of restored jobs are recomputed by the first pass.
  full_pass_ = true;
}

Reply Controller::Apply(const Command& command, TimePoint now) {
  return std::visit(Overloaded{
                        [&](const SubmitJobs& c) { return Submit(c, now); },
                        [&](const JobAction& c) { return Act(c, now); },
                        [&](const GetJob& c) { return Get(c); },
                        [&](const ListJobs& c) { return List(c); },
                        [&](const ListNodes&) { return Nodes(); },
                        [&](const GetQueue& c) { return Queue(c); },
                        [&](const DrainNode& c) { return Drain(c); },
                        [&](const AgentRegister& c) { return Register(c, now); },
                        [&](const AgentPoll& c) { return Poll(c, now); },
                        [&](const AgentReport& c) { return Report(c, now); },
                        [&](const Tick&) {
                          OnTick(now);
                          return Reply{};
                        },
                    },
                    command);
}

Effects Controller::EndBatch(TimePoint now) {
  Schedule(now);
  Effects fx;
  for (auto& [name, node] : nodes_) {
    if (node.parked_poll && !node.outbox.empty()) {
      deliveries_.push_back(Delivery{.poll_id = *node.parked_poll,
                                     .orders = {node.outbox.begin(), node.outbox.end()}});
      node.parked_poll.reset();
    }
  }
  fx.deliveries = std::move(deliveries_);
  deliveries_.clear();
  fx.store.jobs.reserve(dirty_.size());
  for (JobId id : dirty_) fx.store.jobs.push_back(jobs_.at(id));
  dirty_.clear();
  if (next_id_dirty_) fx.store.next_job_id = next_id_;
  next_id_dirty_ = false;
  fx.store.idempotency = std::move(new_keys_);
  new_keys_.clear();
  fx.store.drains = std::move(new_drains_);
  new_drains_.clear();
  return fx;
}

const Job* Controller::FindJob(JobId id) const {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : &it->second;
}

// ---- users' commands ----

Reply Controller::Submit(const SubmitJobs& c, TimePoint now) {
  if (c.specs.empty()) return ErrorReply(InvalidArgument("jobs: must hold at least one job"));
  if (!c.idempotency_key.empty()) {
    auto it = keys_.find(KeyOf(c.caller.user, c.idempotency_key));
    if (it != keys_.end()) {
      Reply r;
      for (int i = 0; i < it->second.count; ++i) {
        if (const Job* j = FindJob(JobId{it->second.first.value + i})) r.jobs.push_back(*j);
      }
      return r;
    }
  }
  for (size_t i = 0; i < c.specs.size(); ++i) {
    const JobSpec& spec = c.specs[i];
    std::string where = c.specs.size() > 1 ? "jobs[" + std::to_string(i) + "]." : "";
    Status st = ValidateJobSpec(spec);
    if (!st.ok()) return ErrorReply(InvalidArgument(where + st.message()));
    if (const PoolPolicy* pool = options_.policy.Pool(spec.pool)) {
      Duration limit = spec.time_limit.count() > 0 ? spec.time_limit : pool->default_time_limit;
      if (pool->max_time_limit.count() > 0 && (limit.count() == 0 || limit > pool->max_time_limit)) {
        return ErrorReply(InvalidArgument(where + "time_limit: pool " + spec.pool + " allows at most " +
                                          FormatDuration(pool->max_time_limit)));
      }
      if (pool->max_milli_per_job != kNoLimit && spec.resources.milli_gpus > pool->max_milli_per_job) {
        return ErrorReply(InvalidArgument(where + "resources.gpus: pool " + spec.pool + " allows at most " +
                                          FormatMilli(pool->max_milli_per_job) + " GPUs per job"));
      }
    }
    for (JobId dep : spec.after) {
      if (jobs_.count(dep) == 0) {
        return ErrorReply(InvalidArgument(where + "after: job " + dep.ToString() + " does not exist"));
      }
    }
  }
  Reply r;
  r.created = true;
  JobId first{next_id_};
  for (const JobSpec& spec : c.specs) {
    JobId id{next_id_++};
    Job& job = jobs_[id];
    job.id = id;
    job.spec = spec;
    if (const PoolPolicy* pool = options_.policy.Pool(spec.pool); pool && spec.time_limit.count() == 0) {
      job.spec.time_limit = pool->default_time_limit;
    }
    job.user = c.caller.user;
    job.submitted_at = now;
    if (spec.hold) {
      job.state = JobState::kHeld;
      job.reason = "held";
      job.reason_detail = "held at submit; `baton release " + id.ToString() + "` lets it run";
    } else {
      Enqueue(job, now);
    }
    MarkDirty(job);
    r.jobs.push_back(job);
  }
  next_id_dirty_ = true;
  if (!c.idempotency_key.empty()) {
    store::IdempotencyEntry e{.user = c.caller.user, .key = c.idempotency_key, .first = first,
                              .count = static_cast<int>(c.specs.size())};
    keys_[KeyOf(e.user, e.key)] = e;
    new_keys_.push_back(std::move(e));
  }
  return r;
}

Reply Controller::Act(const JobAction& c, TimePoint now) {
  auto it = jobs_.find(c.id);
  if (it == jobs_.end()) return ErrorReply(NotFound("job " + c.id.ToString() + " does not exist"));
  Job& job = it->second;
  if (!c.caller.admin && job.user != c.caller.user) {
    return ErrorReply(PermissionDenied("job " + c.id.ToString() + " belongs to " + job.user));
  }
  using K = JobAction::Kind;
  switch (c.kind) {
    case K::kCancel:
      if (IsTerminal(job.state)) break;  // cancelling an ended job changes nothing
      if (job.state == JobState::kRunning) {
        if (!job.stop_requested) {
          job.stop_requested = true;
          MarkDirty(job);
          StopParts(job, StopReason::kCancel, job.spec.grace_period, now);
        }
      } else {
        job.reason.clear();
        job.reason_detail = "cancelled before it ran";
        SetState(job, JobState::kCancelled, now);
      }
      break;
    case K::kHold:
      if (job.state == JobState::kHeld) break;
      if (job.state != JobState::kPending) {
        return ErrorReply(Conflict("job " + c.id.ToString() + " is " +
                                   std::string(JobStateName(job.state)) + "; only pending jobs can be held"));
      }
      job.reason = "held";
      job.reason_detail = "held by " + c.caller.user + "; `baton release " + c.id.ToString() + "` lets it run";
      SetState(job, JobState::kHeld, now);
      break;
    case K::kRelease:
      if (job.state == JobState::kPending) break;
      if (job.state != JobState::kHeld) {
        return ErrorReply(Conflict("job " + c.id.ToString() + " is " +
                                   std::string(JobStateName(job.state)) + "; only held jobs can be released"));
      }
      SetState(job, JobState::kPending, now);
      break;
  }
  Reply r;
  r.jobs.push_back(job);
  return r;
}

Reply Controller::Get(const GetJob& c) const {
  const Job* job = FindJob(c.id);
  if (job == nullptr) return ErrorReply(NotFound("job " + c.id.ToString() + " does not exist"));
  Reply r;
  r.jobs.push_back(*job);
  if (job->state == JobState::kPending) {
    if (auto it = order_pos_.find(job->id.value); it != order_pos_.end()) {
      r.factors.push_back(order_[it->second].factors);
      r.queue_position = static_cast<int64_t>(it->second) + 1;
    }
  }
  return r;
}

Reply Controller::List(const ListJobs& c) const {
  Reply r;
  int limit = std::clamp(c.limit, 1, 1000);
  for (auto it = jobs_.upper_bound(JobId{c.after}); it != jobs_.end(); ++it) {
    const Job& j = it->second;
    if (!c.states.empty() && std::find(c.states.begin(), c.states.end(), j.state) == c.states.end()) continue;
    if (!c.user.empty() && j.user != c.user) continue;
    if (!c.project.empty() && j.spec.project != c.project) continue;
    if (static_cast<int>(r.jobs.size()) == limit) {
      r.next = r.jobs.back().id.value;
      break;
    }
    r.jobs.push_back(j);
  }
  return r;
}

Reply Controller::Nodes() const {
  Reply r;
  for (const auto& [name, node] : nodes_) {
    NodeStatus s;
    s.info = node.info;
    s.state = node.state == NodeRecord::State::kReady  ? "ready"
              : node.state == NodeRecord::State::kLost ? "lost"
                                                       : "awaiting";
    s.last_seen = node.last_seen;
    s.samples = node.samples;
    s.gpu_jobs.resize(node.info.gpus.size());
    s.drain_reason = node.drain_reason;
    if (!node.drain_reason.empty() && s.state == "ready") s.state = "drained";
    s.gpu_drain_reasons.resize(node.info.gpus.size());
    for (const auto& [g, why] : node.gpu_drains) {
      if (g >= 0 && static_cast<size_t>(g) < s.gpu_drain_reasons.size()) s.gpu_drain_reasons[g] = why;
    }
    r.nodes.push_back(std::move(s));
  }
  for (JobId id : running_) {
    const Job& j = jobs_.at(id);
    for (const auto& part : j.allocation) {
      for (auto& s : r.nodes) {
        if (s.info.name != part.node) continue;
        for (int g : part.gpus) {
          if (g >= 0 && static_cast<size_t>(g) < s.gpu_jobs.size()) s.gpu_jobs[g].push_back(id.value);
        }
      }
    }
  }
  return r;
}

// ---- job state bookkeeping ----

void Controller::SetState(Job& job, JobState to, TimePoint now) {
  if (!CanTransition(job.state, to)) std::abort();  // an illegal transition is a bug here
  JobState from = job.state;
  if (from == JobState::kPending) Dequeue(job);
  if (from == JobState::kRunning) {
    running_.erase(job.id);
    ChargeRate(job, -1, now);
  }
  job.state = to;
  MarkDirty(job);
  if (to == JobState::kPending) Enqueue(job, now);
  if (to == JobState::kRunning) {
    running_.insert(job.id);
    ChargeRate(job, +1, now);
  }
  if (IsTerminal(to)) {
    job.finished_at = now;
    OnTerminal(job, now);
  }
}

void Controller::ChargeRate(const Job& job, int sign, TimePoint now) {
  usage_.Advance(now);
  usage_.AddRate(job.spec.project, job.user, sign * job.spec.resources.milli_gpus);
}

void Controller::Enqueue(Job& job, TimePoint now) {
  JobId broken;
  int deps = DependencyState(job, &broken);
  if (deps == 0) {
    blocked_.insert(job.id);
    job.reason = "dependency";
    job.reason_detail = "waiting for jobs it runs after to succeed";
    return;
  }
  if (deps < 0) {
    job.reason = "dependency";
    job.reason_detail = "job " + broken.ToString() + " it runs after ended " +
                        std::string(JobStateName(FindJob(broken)->state)) + "; it can never run";
    SetState(job, JobState::kFailed, now);
    return;
  }
  queue_.insert(QueueKey{static_cast<int>(job.spec.priority), job.id.value});
  fresh_.push_back(job.id);
  job.reason = "priority";
  job.reason_detail = "waiting for the scheduler";
}

void Controller::Dequeue(const Job& job) {
  queue_.erase(QueueKey{static_cast<int>(job.spec.priority), job.id.value});
  blocked_.erase(job.id);
}

int Controller::DependencyState(const Job& job, JobId* broken) const {
  int state = 1;
  for (JobId dep : job.spec.after) {
    const Job* d = FindJob(dep);
    if (d == nullptr) continue;
    if (d->state == JobState::kSucceeded) continue;
    if (IsTerminal(d->state)) {
      *broken = dep;
      return -1;
    }
    state = 0;
  }
  return state;
}

void Controller::OnTerminal(const Job& ended, TimePoint now) {
  if (blocked_.empty()) return;
  std::vector<JobId> check;
  for (JobId id : blocked_) {
    const Job& j = jobs_.at(id);
    if (std::find(j.spec.after.begin(), j.spec.after.end(), ended.id) != j.spec.after.end()) {
      check.push_back(id);
    }
  }
  for (JobId id : check) {
    Job& j = jobs_.at(id);
    JobId broken;
    int deps = DependencyState(j, &broken);
    if (deps == 0) continue;
    blocked_.erase(id);
    Enqueue(j, now);
  }
}

// ---- scheduling ----

void Controller::Schedule(TimePoint now) {
  if (!full_pass_ && !freed_ && fresh_.empty()) return;
  // Resources freed between full passes: the head of the last full pass's order gets the
  // first look (a full pass, every full_pass_interval, looks at the rest). Jobs end hundreds
  // of times a second on a busy cluster; re-ordering the whole queue each time would not pay.
  // Strict order (no backfill) needs the whole queue to place anything: a new arrival must not
  // pass a job ahead that waits.
  const bool full = full_pass_ || (freed_ && order_.empty()) || (!options_.policy.backfill && !queue_.empty());
  const bool head = !full && freed_;
  freed_ = false;
  fresh_.erase(std::remove_if(fresh_.begin(), fresh_.end(),
                              [&](JobId id) {
                                const Job& j = jobs_.at(id);
                                return j.state != JobState::kPending || blocked_.count(id) > 0;
                              }),
               fresh_.end());
  std::sort(fresh_.begin(), fresh_.end());
  fresh_.erase(std::unique(fresh_.begin(), fresh_.end()), fresh_.end());
  sched::PassInput in;
  auto pending = [](const Job& j) {
    return sched::PendingJob{.id = j.id, .resources = &j.spec.resources, .priority = j.spec.priority,
                             .project = &j.spec.project, .user = &j.user, .pool = &j.spec.pool,
                             .submitted = j.submitted_at, .time_limit = j.spec.time_limit};
  };
  if (full) {
    in.pending.reserve(queue_.size());
    for (const QueueKey& k : queue_) in.pending.push_back(pending(jobs_.at(JobId{k.id})));
  } else {
    std::unordered_set<int64_t> taken;
    if (head) {
      for (const sched::QueueEntry& e : order_) {
        if (static_cast<int>(in.pending.size()) >= kHeadPass) break;
        const Job& j = jobs_.at(e.id);
        if (j.state != JobState::kPending || blocked_.count(e.id)) continue;
        in.pending.push_back(pending(j));
        taken.insert(e.id.value);
      }
    }
    // Arrivals since the last full pass are not in its order: they come along.
    if (head) {
      int added = 0;
      for (auto it = since_full_.begin(); it != since_full_.end() && added < kHeadPass;) {
        const Job& j = jobs_.at(JobId{it->id});
        if (j.state != JobState::kPending) {
          it = since_full_.erase(it);
          continue;
        }
        if (!blocked_.count(j.id) && taken.insert(j.id.value).second) {
          in.pending.push_back(pending(j));
          ++added;
        }
        ++it;
      }
    }
    for (JobId id : fresh_) {
      if (!taken.count(id.value)) in.pending.push_back(pending(jobs_.at(id)));
    }
  }
  if (full) {
    since_full_.clear();
  } else {
    for (JobId id : fresh_) since_full_.insert(QueueKey{static_cast<int>(jobs_.at(id).spec.priority), id.value});
  }
  fresh_.clear();
  full_pass_ = false;
  if (full) last_full_pass_ = now;
  if (in.pending.empty()) {
    if (full) {
      order_.clear();
      order_pos_.clear();
    }
    return;
  }
  in.running.reserve(running_.size());
  int lowest_running = static_cast<int>(Priority::kCritical) + 1;
  for (JobId id : running_) {
    const Job& j = jobs_.at(id);
    lowest_running = std::min(lowest_running, static_cast<int>(j.spec.priority));
    TimePoint start = j.started_at.value_or(now);
    in.running.push_back(sched::RunningJob{
        .id = j.id, .resources = &j.spec.resources, .allocation = &j.allocation, .priority = j.spec.priority,
        .project = &j.spec.project, .user = &j.user, .pool = &j.spec.pool, .started = start,
        .expected_end = j.spec.time_limit.count() > 0 ? start + j.spec.time_limit : sched::kNever,
        .last_checkpoint = j.last_checkpoint.value_or(start),
        .stopping = j.stop_requested || j.preempt_requested});
  }
  usage_.Advance(now);
  in.view = view_;
  in.usage = &usage_;
  in.policy = &options_.policy;
  in.now = now;
  in.full = full;
  if (full) in.claims = claims_;

  sched::PassResult pass = sched::RunPass(std::move(in));
  if (full) {
    order_ = std::move(pass.order);
    order_pos_.clear();
    order_pos_.reserve(order_.size());
    for (uint32_t i = 0; i < order_.size(); ++i) order_pos_[order_[i].id.value] = i;
    view_.ClearReservations();
    claims_.clear();
    for (const auto& r : pass.reservations) {
      sched::MarkReservation(view_, r);
      if (r.claim) claims_.push_back(r);
    }
  }
  for (const sched::Wait& w : pass.waits) {
    Job& j = jobs_.at(w.id);
    j.reason = w.reason;
    j.reason_detail = w.detail;
    j.estimated_start = w.estimated_start;
  }
  for (const sched::Preemption& p : pass.preemptions) {
    Job& victim = jobs_.at(p.victim);
    if (victim.state != JobState::kRunning || victim.stop_requested || victim.preempt_requested) continue;
    victim.preempt_requested = true;
    victim.reason_detail = "preempted (" + p.reason + ") for job " + p.for_job.ToString();
    StopParts(victim, StopReason::kPreempt, options_.policy.preempt_grace, now);
  }
  // A new arrival that waits but could preempt (a lower class runs, or its project has a
  // guarantee) gets a full pass soon: at once unless one ran in the last 200 ms.
  bool could_preempt = false;
  if (!full && options_.policy.preemption) {
    for (const sched::Wait& w : pass.waits) {
      const Job& j = jobs_.at(w.id);
      if (w.reason != "resources") continue;
      if (static_cast<int>(j.spec.priority) > lowest_running ||
          options_.policy.Project(j.spec.project).guaranteed_milli > 0) {
        could_preempt = true;
        break;
      }
    }
  }
  for (sched::Start& s : pass.starts) {
    Job& j = jobs_.at(s.id);
    j.allocation = std::move(s.allocation);
    view_.Apply(j.allocation, j.spec.resources, +1);
    j.launched = false;
    j.stop_requested = false;
    j.preempt_requested = false;
    j.last_checkpoint.reset();
    j.estimated_start.reset();
    j.reason.clear();
    j.reason_detail.clear();
    SetState(j, JobState::kRunning, now);
    Launch(j);
  }
  if (could_preempt) {
    full_pass_ = true;
    if (now - last_full_pass_ >= std::chrono::milliseconds(200)) Schedule(now);
  }
}

Reply Controller::Drain(const DrainNode& c) {
  if (!c.caller.admin) return ErrorReply(PermissionDenied("only an admin drains or undrains nodes"));
  NodeRecord* node = FindNode(c.node);
  if (node == nullptr) return ErrorReply(NotFound("node " + c.node.substr(0, 64) + " is not known"));
  // A node known only from the store (not back since a restart) has no GPU list yet: its
  // GPU drains are taken on trust and apply when it registers.
  for (int g : c.gpus) {
    if (g < 0 || (!node->info.gpus.empty() && static_cast<size_t>(g) >= node->info.gpus.size())) {
      return ErrorReply(InvalidArgument("gpus: node " + c.node + " has no GPU " + std::to_string(g)));
    }
  }
  std::string reason = c.reason.empty() ? "drained by " + c.caller.user : c.reason.substr(0, 256);
  if (c.gpus.empty()) {
    node->drain_reason = c.drain ? reason : "";
    new_drains_.push_back(store::Drain{.node = c.node, .gpu = -1, .reason = reason, .active = c.drain});
  }
  for (int g : c.gpus) {
    if (c.drain) node->gpu_drains[g] = reason;
    else node->gpu_drains.erase(g);
    new_drains_.push_back(store::Drain{.node = c.node, .gpu = g, .reason = reason, .active = c.drain});
  }
  if (view_.FindNode(c.node) != nullptr) RebuildNodeSlots(*node);
  full_pass_ = true;  // an undrain frees GPUs; a drain changes reservations
  return Nodes();
}

Reply Controller::Queue(const GetQueue& c) const {
  Reply r;
  int limit = std::clamp(c.limit, 1, 1000);
  int64_t skipped = 0;
  auto take = [&](const Job& j, const QueueFactors& f) {
    if (skipped++ < c.offset) return true;
    if (static_cast<int>(r.jobs.size()) == limit) {
      r.next = c.offset + limit;
      return false;
    }
    r.jobs.push_back(j);
    r.factors.push_back(f);
    return true;
  };
  // The last full pass's order, then jobs that joined the queue since (not yet ordered).
  std::unordered_set<int64_t> listed;
  listed.reserve(order_.size());
  for (const sched::QueueEntry& e : order_) {
    const Job* j = FindJob(e.id);
    if (j == nullptr || j->state != JobState::kPending || blocked_.count(e.id)) continue;
    listed.insert(e.id.value);
    if (!take(*j, e.factors)) return r;
  }
  for (const QueueKey& k : queue_) {
    if (listed.count(k.id)) continue;
    if (!take(jobs_.at(JobId{k.id}), QueueFactors{})) return r;
  }
  return r;
}

void Controller::Launch(Job& job, std::optional<size_t> only_rank) {
  std::string nodelist;
  for (const auto& part : job.allocation) {
    if (!nodelist.empty()) nodelist += ',';
    nodelist += part.node;
  }
  for (size_t rank = 0; rank < job.allocation.size(); ++rank) {
    if (only_rank && rank != *only_rank) continue;
    const NodeAllocation& part = job.allocation[rank];
    Order o;
    o.kind = Order::Kind::kLaunch;
    LaunchOrder& l = o.launch;
    l.job = job.id;
    l.attempt = job.restarts;
    l.name = job.spec.name;
    l.user = job.user;
    l.command = job.spec.command;
    l.shell = job.spec.shell;
    l.env = job.spec.env;
    l.workdir = job.spec.workdir;
    l.gpus = part.gpus;
    l.milli_per_gpu = part.milli_per_gpu;
    l.gpu_memory_bytes = job.spec.resources.gpu_memory_bytes;
    l.time_limit = job.spec.time_limit;
    l.grace_period = job.spec.grace_period;
    l.nodelist = nodelist;
    l.node_rank = static_cast<int>(rank);
    l.num_nodes = static_cast<int>(job.allocation.size());
    SendOrder(part.node, std::move(o));
  }
}

void Controller::StopParts(Job& job, StopReason reason, Duration grace, TimePoint now) {
  for (NodeAllocation& part : job.allocation) {
    if (part.ended) continue;
    NodeRecord* node = FindNode(part.node);
    if (node == nullptr || node->state == NodeRecord::State::kLost) {
      part.ended = true;
      part.lost = true;
      continue;
    }
    Order o;
    o.kind = Order::Kind::kStop;
    o.stop = StopOrder{.job = job.id, .attempt = job.restarts, .reason = reason, .grace_period = grace};
    SendOrder(part.node, std::move(o));
  }
  MarkDirty(job);
  bool all_ended = std::all_of(job.allocation.begin(), job.allocation.end(),
                               [](const NodeAllocation& p) { return p.ended; });
  if (all_ended) Finish(job, now);
}

void Controller::Finish(Job& job, TimePoint now) {
  view_.Apply(job.allocation, job.spec.resources, -1);
  freed_ = true;
  bool lost = false, timed_out = false, ok = true;
  const NodeAllocation* failed = nullptr;
  for (const NodeAllocation& p : job.allocation) {
    lost |= p.lost;
    timed_out |= p.timed_out;
    if (p.exit_code != 0 || p.signal != 0 || p.lost) {
      ok = false;
      if (failed == nullptr) failed = &p;
    }
  }
  const NodeAllocation& report = failed != nullptr ? *failed : job.allocation.front();
  if (!report.lost) {
    job.exit_code = report.signal != 0 ? std::optional<int>() : std::optional<int>(report.exit_code);
    job.exit_signal = report.signal != 0 ? std::optional<int>(report.signal) : std::optional<int>();
  }
  auto requeue = [&](std::string detail) {
    job.restarts += 1;
    job.allocation.clear();
    job.launched = false;
    job.started_at.reset();
    SetState(job, JobState::kPending, now);
    job.last_requeue = detail.substr(0, 256);
    job.reason_detail = std::move(detail);
  };
  if (job.stop_requested) {
    job.reason_detail = "cancelled";
    SetState(job, JobState::kCancelled, now);
  } else if (job.preempt_requested) {
    std::string why = job.reason_detail.empty() ? "preempted" : job.reason_detail;
    job.preempt_requested = false;
    requeue("requeued: " + why);
  } else if (timed_out) {
    job.reason_detail = "stopped at its time limit of " + FormatDuration(job.spec.time_limit);
    SetState(job, JobState::kTimedOut, now);
  } else if (lost) {
    requeue("requeued: its node was lost while it ran");
  } else if (ok) {
    job.reason_detail.clear();
    SetState(job, JobState::kSucceeded, now);
  } else if (job.failures < job.spec.retries) {
    job.failures += 1;
    requeue("requeued after a failure (retry " + std::to_string(job.failures) + " of " +
            std::to_string(job.spec.retries) + ")");
  } else {
    std::string why = report.signal != 0 ? "killed by signal " + std::to_string(report.signal)
                                         : "exited with code " + std::to_string(report.exit_code);
    if (!job.reason_detail.empty()) why += ": " + job.reason_detail;  // the agent's words
    job.reason_detail = std::move(why);
    SetState(job, JobState::kFailed, now);
  }
}

// ---- agents ----

Controller::NodeRecord* Controller::FindNode(const std::string& name) {
  auto it = nodes_.find(name);
  return it == nodes_.end() ? nullptr : &it->second;
}

Controller::NodeRecord& Controller::EnsureNode(const std::string& name) {
  auto [it, inserted] = nodes_.try_emplace(name);
  if (inserted) {
    it->second.info.name = name;
    sched::NodeSlots slots;
    slots.name = name;
    slots.schedulable = false;
    view_.nodes.push_back(std::move(slots));
  }
  return it->second;
}

void Controller::RebuildNodeSlots(const NodeRecord& node) {
  sched::NodeSlots* slots = view_.FindNode(node.info.name);
  slots->gpus.clear();
  for (const Gpu& g : node.info.gpus) {
    slots->gpus.push_back(sched::GpuSlot{.index = g.index, .model = g.model,
                                         .memory_bytes = g.memory_bytes, .free_milli = 1000,
                                         .free_memory_bytes = g.memory_bytes,
                                         .usable = node.gpu_drains.count(g.index) == 0,
                                         .island = g.island, .pcie_switch = g.pcie_switch,
                                         .numa_node = g.numa_node});
  }
  slots->pool = node.info.pool;
  slots->total_cpus = slots->free_cpus = node.info.cpus;
  slots->total_memory_bytes = slots->free_memory_bytes = node.info.memory_bytes;
  slots->schedulable = node.state == NodeRecord::State::kReady && node.drain_reason.empty();
  for (JobId id : running_) {
    const Job& j = jobs_.at(id);
    for (const auto& part : j.allocation) {
      if (part.node != node.info.name) continue;
      view_.Apply({part}, j.spec.resources, +1);
    }
  }
}

void Controller::SendOrder(const std::string& name, Order order) {
  NodeRecord& node = EnsureNode(name);
  order.seq = node.next_seq++;
  node.outbox.push_back(std::move(order));
}

Reply Controller::Register(const AgentRegister& c, TimePoint now) {
  const NodeInfo& info = c.request.node;
  if (!IsValidNodeName(info.name)) return ErrorReply(InvalidArgument("node.name: invalid"));
  NodeRecord& node = EnsureNode(info.name);
  if (node.parked_poll) {
    deliveries_.push_back(Delivery{.poll_id = *node.parked_poll});
    node.parked_poll.reset();
  }
  node.info = info;
  node.state = NodeRecord::State::kReady;
  node.session = ++session_counter_ + (static_cast<uint64_t>(ToMillis(now)) << 16);
  node.last_seen = now;
  node.outbox.clear();
  node.next_seq = 1;
  node.samples.clear();
  RebuildNodeSlots(node);
  full_pass_ = true;

  // Reconcile: what the agent holds against what the controller expects of this node.
  std::set<std::pair<int64_t, int>> held;
  for (const JobEvent& e : c.request.jobs) {
    held.insert({e.job.value, e.attempt});
    HandleEvent(node, e, now);
  }
  std::vector<JobId> expected(running_.begin(), running_.end());
  for (JobId id : expected) {
    Job& j = jobs_.at(id);
    if (j.state != JobState::kRunning) continue;
    for (size_t rank = 0; rank < j.allocation.size(); ++rank) {
      NodeAllocation& part = j.allocation[rank];
      if (part.node != info.name || part.ended) continue;
      if (held.count({id.value, j.restarts})) {
        if (j.stop_requested || j.preempt_requested) {
          // A stop sent before the agent re-registered was dropped with the old outbox.
          Order o;
          o.kind = Order::Kind::kStop;
          o.stop = j.stop_requested
                       ? StopOrder{.job = j.id, .attempt = j.restarts, .reason = StopReason::kCancel,
                                   .grace_period = j.spec.grace_period}
                       : StopOrder{.job = j.id, .attempt = j.restarts, .reason = StopReason::kPreempt,
                                   .grace_period = options_.policy.preempt_grace};
          SendOrder(info.name, std::move(o));
        }
        continue;
      }
      if (!part.started) {
        // The launch order never reached the agent: send it again (launches are idempotent).
        Launch(j, rank);
        break;
      }
      part.ended = true;
      part.lost = true;
      MarkDirty(j);
      StopParts(j, StopReason::kNodeFailure, Duration(0), now);
      break;
    }
  }
  Reply r;
  r.registration = RegisterReply{.session = node.session, .next_seq = 0};
  return r;
}

Reply Controller::Poll(const AgentPoll& c, TimePoint now) {
  NodeRecord* node = FindNode(c.node);
  if (node == nullptr || node->session != c.session || node->state != NodeRecord::State::kReady) {
    return ErrorReply(Conflict("node " + c.node + ": unknown session; register again"));
  }
  node->last_seen = now;
  while (!node->outbox.empty() && node->outbox.front().seq <= c.after) node->outbox.pop_front();
  if (node->parked_poll) deliveries_.push_back(Delivery{.poll_id = *node->parked_poll});
  node->parked_poll.reset();
  Reply r;
  if (!node->outbox.empty()) {
    r.orders.assign(node->outbox.begin(), node->outbox.end());
    return r;
  }
  node->parked_poll = c.poll_id;
  node->parked_at = now;
  r.parked = true;
  return r;
}

Reply Controller::Report(const AgentReport& c, TimePoint now) {
  const ReportRequest& rep = c.report;
  NodeRecord* node = FindNode(rep.node);
  if (node == nullptr || node->session != rep.session || node->state != NodeRecord::State::kReady) {
    return ErrorReply(Conflict("node " + rep.node + ": unknown session; register again"));
  }
  node->last_seen = now;
  if (!rep.gpus.empty()) node->samples = rep.gpus;
  for (const JobEvent& e : rep.events) HandleEvent(*node, e, now);
  return Reply{};
}

void Controller::HandleEvent(NodeRecord& node, const JobEvent& e, TimePoint now) {
  auto it = jobs_.find(e.job);
  NodeAllocation* part = nullptr;
  Job* job = nullptr;
  if (it != jobs_.end() && it->second.state == JobState::kRunning && it->second.restarts == e.attempt) {
    job = &it->second;
    for (auto& p : job->allocation) {
      if (p.node == node.info.name) part = &p;
    }
  }
  if (part == nullptr) {
    // Not a run this controller wants there (stale attempt, cancelled, unknown): end it.
    if (e.kind == JobEvent::Kind::kStarted) {
      Order o;
      o.kind = Order::Kind::kStop;
      o.stop = StopOrder{.job = e.job, .attempt = e.attempt, .reason = StopReason::kCancel,
                         .grace_period = Duration(0)};
      SendOrder(node.info.name, std::move(o));
    }
    return;
  }
  if (part->ended) return;
  if (e.kind == JobEvent::Kind::kCheckpoint) {
    // What preemption would lose is counted from here on.
    job->last_checkpoint = std::max(job->last_checkpoint.value_or(TimePoint{}), std::min(e.at, now));
    MarkDirty(*job);
    return;
  }
  if (!part->started) {
    part->started = true;
    if (!job->started_at) job->started_at = now;
    job->launched = std::all_of(job->allocation.begin(), job->allocation.end(),
                                [](const NodeAllocation& p) { return p.started; });
    MarkDirty(*job);
  }
  if (e.kind != JobEvent::Kind::kExited) return;
  if (!e.message.empty()) job->reason_detail = e.message.substr(0, 512);  // e.g. cannot execute
  part->ended = true;
  part->exit_code = e.exit_code;
  part->signal = e.signal;
  part->timed_out = e.timed_out;
  part->lost = e.lost;
  MarkDirty(*job);
  bool failed = e.exit_code != 0 || e.signal != 0 || e.lost;
  bool all_ended = std::all_of(job->allocation.begin(), job->allocation.end(),
                               [](const NodeAllocation& p) { return p.ended; });
  if (all_ended) {
    Finish(*job, now);
  } else if (failed && !job->stop_requested) {
    // One process of a multi-node job failed: the others cannot go on alone.
    StopParts(*job, StopReason::kCancel, job->spec.grace_period, now);
  }
}

void Controller::MarkLost(NodeRecord& node, TimePoint now) {
  node.state = NodeRecord::State::kLost;
  if (sched::NodeSlots* s = view_.FindNode(node.info.name)) s->schedulable = false;
  if (node.parked_poll) {
    deliveries_.push_back(Delivery{.poll_id = *node.parked_poll});
    node.parked_poll.reset();
  }
  node.outbox.clear();
  std::vector<JobId> on_node;
  for (JobId id : running_) {
    for (const auto& p : jobs_.at(id).allocation) {
      if (p.node == node.info.name) on_node.push_back(id);
    }
  }
  for (JobId id : on_node) {
    Job& j = jobs_.at(id);
    if (j.state != JobState::kRunning) continue;
    StopParts(j, StopReason::kNodeFailure, Duration(0), now);
  }
}

void Controller::OnTick(TimePoint now) {
  if (!queue_.empty() && now - last_full_pass_ >= options_.full_pass_interval) full_pass_ = true;
  for (auto& [name, node] : nodes_) {
    if (node.state != NodeRecord::State::kLost && now - node.last_seen > options_.node_timeout) {
      MarkLost(node, now);
    }
    if (node.parked_poll && now - node.parked_at >= options_.poll_timeout) {
      deliveries_.push_back(Delivery{.poll_id = *node.parked_poll});
      node.parked_poll.reset();
    }
  }
}

}  // namespace baton::control
