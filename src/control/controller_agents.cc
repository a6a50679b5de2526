// The controller's side of the nodes: agents registering, polling for orders and reporting,
// node timeouts, drains, and the node list.
#include <algorithm>

#include "control/controller.h"

namespace baton::control {
namespace {

// Running jobs with a live process on GPU `gpu` of `node`.
std::vector<JobId> JobsOnGpu(const NodeTable& nodes, const RunningJobs& running,
                             const std::string& node, int gpu) {
  std::vector<JobId> out;
  const NodeRecord* record = nodes.Find(node);
  if (record == nullptr) return out;
  for (JobId id : record->running) {
    for (const NodeAllocation& part : running.at(id)->allocation) {
      if (part.node == node && !part.ended &&
          std::find(part.gpus.begin(), part.gpus.end(), gpu) != part.gpus.end()) {
        out.push_back(id);
      }
    }
  }
  return out;
}

// Whether GPU `gpu` of the node may be given to jobs: not drained, not being reset.
bool GpuUsable(const NodeRecord& node, int gpu) {
  if (node.gpu_drains.count(gpu) != 0) return false;
  // "drain" health became an admin drain above; an admin's undrain overrides it.
  return gpu < 0 || static_cast<size_t>(gpu) >= node.health.size() ||
         node.health[gpu].state != GpuHealthState::kReset;
}

}  // namespace

// ---- agents ----

Result<NodeList> Controller::Drain(const DrainNode& c) {
  if (!c.caller.admin) return Err(PermissionDenied("only an admin drains or undrains nodes"));
  NodeRecord* node = nodes_.Find(c.node);
  if (node == nullptr) return Err(NotFound("node " + c.node.substr(0, 64) + " is not known"));
  // A node known only from the store (not back since a restart) has no GPU list yet: its
  // GPU drains are taken on trust and apply when it registers.
  for (int g : c.gpus) {
    if (g < 0 || (!node->info.gpus.empty() && static_cast<size_t>(g) >= node->info.gpus.size())) {
      return Err(InvalidArgument("gpus: node " + c.node + " has no GPU " + std::to_string(g)));
    }
  }
  std::string reason = c.reason.empty() ? "drained by " + c.caller.user : c.reason.substr(0, 256);
  if (c.gpus.empty()) {
    node->drain_reason = c.drain ? reason : "";
    node->launch_failures = 0;  // an undrained node starts over
    changed_.drains.push_back(
        store::Drain{.node = c.node, .gpu = -1, .reason = reason, .active = c.drain});
  }
  for (int g : c.gpus) {
    if (c.drain)
      node->gpu_drains[g] = reason;
    else
      node->gpu_drains.erase(g);
    if (!c.drain && static_cast<size_t>(g) < node->health.size() &&
        node->health[g].state == GpuHealthState::kDrain) {
      // The admin says it is fixed: its agent forgets the fault, or it would report it again.
      node->health[g] = GpuHealth{.index = g};
      if (node->state == NodeRecord::State::kReady) {
        Order o;
        o.kind = Order::Kind::kReadmit;
        o.inject.gpu = g;
        SendOrder(c.node, std::move(o));
      }
    }
    changed_.drains.push_back(
        store::Drain{.node = c.node, .gpu = g, .reason = reason, .active = c.drain});
  }
  if (view_.FindNode(c.node) != nullptr) RebuildNodeSlots(*node);
  queue_.RequestFull();  // an undrain frees GPUs; a drain changes reservations
  return Read().Nodes();
}

Result<NodeList> Controller::Inject(const InjectFault& c) {
  if (!c.caller.admin) return Err(PermissionDenied("only an admin injects faults"));
  NodeRecord* node = nodes_.Find(c.node);
  if (node == nullptr) return Err(NotFound("node " + c.node.substr(0, 64) + " is not known"));
  if (node->state != NodeRecord::State::kReady)
    return Err(Conflict("node " + c.node + " is not connected"));
  if (node->info.gpu_backend != GpuBackendKind::kSimulated) {
    return Err(InvalidArgument("node " + c.node + " has real GPUs (" +
                               std::string(GpuBackendName(node->info.gpu_backend)) +
                               "): faults are injected only into simulated GPUs"));
  }
  if (c.fault.fault != FaultKind::kSilence &&
      (c.fault.gpu < 0 || static_cast<size_t>(c.fault.gpu) >= node->info.gpus.size())) {
    return Err(
        InvalidArgument("gpu: node " + c.node + " has no GPU " + std::to_string(c.fault.gpu)));
  }
  Order o;
  o.kind = Order::Kind::kInject;
  o.inject = c.fault;
  SendOrder(c.node, std::move(o));
  return Read().Nodes();
}

void Controller::ApplyHealth(NodeRecord& node, const std::vector<GpuHealth>& health,
                             TimePoint now) {
  size_t n = node.info.gpus.size();
  std::vector<GpuHealth> next(n);
  for (size_t g = 0; g < n; ++g) next[g].index = static_cast<int>(g);
  for (const GpuHealth& h : health) {
    if (h.index >= 0 && static_cast<size_t>(h.index) < n) next[h.index] = h;
  }
  node.health.resize(n);
  for (size_t g = 0; g < n; ++g) node.health[g].index = static_cast<int>(g);
  bool changed = false;
  for (size_t g = 0; g < n; ++g) {
    const GpuHealth old = node.health[g];
    const GpuHealth& h = next[g];
    if (old == h) continue;
    changed = true;
    int gpu = static_cast<int>(g);
    std::string where = "GPU " + std::to_string(g) + " of " + node.info.name;
    if (h.state == GpuHealthState::kOk) {
      std::string still =
          node.gpu_drains.count(gpu) ? " (still drained: " + node.gpu_drains[gpu] + ")" : "";
      events_.Raise(
          ClusterEvent{
              .kind = EventKind::kGpuRecovered,
              .severity = Severity::kInfo,
              .node = node.info.name,
              .gpu = gpu,
              .message = where + " passed its health check and is back in service" + still},
          now);
      continue;
    }
    if (old.state == h.state && old.since == h.since) continue;  // only its words changed
    // A new fault.
    std::string until = h.state == GpuHealthState::kDrain ? "until an admin undrains it"
                                                          : "until it passes a health check";
    if (h.state == GpuHealthState::kDrain && node.gpu_drains.count(gpu) == 0) {
      std::string reason = ("health: " + h.reason).substr(0, 256);
      node.gpu_drains[gpu] = reason;
      changed_.drains.push_back(
          store::Drain{.node = node.info.name, .gpu = gpu, .reason = reason, .active = true});
    }
    std::vector<JobId> hit = JobsOnGpu(nodes_, running_, node.info.name, gpu);
    std::string jobs, ended;  // requeued; stopped for good (requeue: false)
    for (JobId id : hit) {
      std::string& list = jobs_.at(id).spec.requeue ? jobs : ended;
      list += (list.empty() ? "" : ", ") + id.ToString();
    }
    if (!jobs.empty()) jobs = "; requeued job " + jobs;
    if (!ended.empty()) jobs += "; stopped job " + ended + " (never requeued: it fails)";
    events_.Raise(ClusterEvent{.kind = EventKind::kGpuFailed,
                               .severity = Severity::kAlert,
                               .node = node.info.name,
                               .gpu = gpu,
                               .job = hit.empty() ? 0 : hit.front().value,
                               .message = where + " failed: " + h.reason + "; out of service " +
                                          until + jobs},
                  now);
    for (JobId id : hit) {
      Job& j = jobs_.at(id);
      if (j.state != JobState::kRunning || j.stop_requested || j.preempt_requested) continue;
      // Back to the queue without spending a retry: it resumes from its last checkpoint.
      j.preempt_requested = true;
      j.reason_detail = (where + " failed: " + h.reason).substr(0, 512);
      StopParts(j, StopReason::kNodeFailure, Duration(0), now);
    }
  }
  node.health = std::move(next);
  if (changed) {
    RebuildNodeSlots(node);
    queue_.RequestFull();
  }
}

NodeRecord& Controller::EnsureNode(const std::string& name) {
  bool added = false;
  NodeRecord& node = nodes_.Ensure(name, &added);
  if (added) {
    feasibility_.MarkStale();
    watch_.Reset();  // never seen: the next tick walks the nodes
    sched::NodeSlots slots;
    slots.name = name;
    slots.schedulable = false;
    view_.AddNode(std::move(slots));
  }
  return node;
}

void Controller::RebuildNodeSlots(const NodeRecord& node) {
  sched::NodeSlots* slots = view_.FindNode(node.info.name);
  slots->gpus.clear();
  for (const Gpu& g : node.info.gpus) {
    slots->gpus.push_back(sched::GpuSlot{.index = g.index,
                                         .model = g.model,
                                         .memory_bytes = g.memory_bytes,
                                         .free_milli = 1000,
                                         .free_memory_bytes = g.memory_bytes,
                                         .usable = GpuUsable(node, g.index),
                                         .island = g.island,
                                         .pcie_switch = g.pcie_switch,
                                         .numa_node = g.numa_node});
  }
  slots->pool = node.info.pool;
  slots->refuses_root_jobs = node.info.refuses_root_jobs;
  slots->total_cpus = slots->free_cpus = node.info.cpus;
  slots->total_memory_bytes = slots->free_memory_bytes = node.info.memory_bytes;
  slots->schedulable = node.state == NodeRecord::State::kReady && node.drain_reason.empty();
  for (JobId id : node.running) {
    const Job& j = *running_.at(id);
    for (const auto& part : j.allocation) {
      if (part.node == node.info.name) sched::ApplyPart(*slots, part, j.spec.resources, +1);
    }
  }
}

void Controller::SendOrder(const std::string& name, Order order) {
  nodes_.Send(EnsureNode(name), std::move(order));
}

Result<RegisterReply> Controller::Register(const AgentRegister& c, TimePoint now) {
  const NodeInfo& info = c.request.node;
  if (!IsValidNodeName(info.name)) return Err(InvalidArgument("node.name: invalid"));
  NodeRecord& node = EnsureNode(info.name);
  if (node.state != NodeRecord::State::kReady) {
    events_.Raise(ClusterEvent{.kind = EventKind::kNodeJoined,
                               .severity = Severity::kInfo,
                               .node = info.name,
                               .message = "node " + info.name + " joined with " +
                                          std::to_string(info.gpus.size()) + " GPUs"},
                  now);
  }
  if (node.info.gpus.size() != info.gpus.size()) node.health.clear();
  nodes_.StartSession(node, now);
  if (node.info != info || node.state == NodeRecord::State::kAwaiting) feasibility_.MarkStale();
  node.info = info;
  node.state = NodeRecord::State::kReady;
  node.requeue_at = TimePoint::max();  // back before its fence passed: its jobs ran on
  node.last_seen = now;
  watch_.Reset();  // it may have been lost: the next tick walks the nodes
  node.samples.clear();
  RebuildNodeSlots(node);
  queue_.RequestFull();

  // Reconcile: what the agent holds against what the controller expects of this node.
  std::set<std::pair<int64_t, int>> held;
  for (const JobEvent& e : c.request.jobs) {
    held.insert({e.job.value, e.attempt});
    HandleEvent(node, e, now);
  }
  // A copy: launching again and stopping change what runs where.
  const std::vector<JobId> expected(node.running.begin(), node.running.end());
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
          o.stop = j.stop_requested ? StopOrder{.job = j.id,
                                                .attempt = j.restarts,
                                                .reason = StopReason::kCancel,
                                                .grace_period = j.spec.grace_period}
                                    : StopOrder{.job = j.id,
                                                .attempt = j.restarts,
                                                .reason = StopReason::kPreempt,
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
  ApplyHealth(node, c.request.health, now);
  return RegisterReply{.session = node.session,
                       .next_seq = 0,
                       .fence_ms = options_.node_timeout.count(),
                       .fence_grace_ms = options_.fence_grace.count()};
}

Result<PollAnswer> Controller::Poll(const AgentPoll& c, TimePoint now) {
  NodeRecord* node = nodes_.Find(c.node);
  if (node == nullptr || node->session != c.session || node->state != NodeRecord::State::kReady) {
    return Err(Conflict("node " + c.node + ": unknown session; register again"));
  }
  node->last_seen = now;
  PollAnswer r;
  if (std::optional<std::vector<Order>> orders = nodes_.Poll(*node, c.after, c.poll_id, now)) {
    r.orders = std::move(*orders);
  } else {
    r.parked = true;
  }
  return r;
}

Result<Acknowledged> Controller::Report(const AgentReport& c, TimePoint now) {
  const ReportRequest& rep = c.report;
  NodeRecord* node = nodes_.Find(rep.node);
  if (node == nullptr || node->session != rep.session || node->state != NodeRecord::State::kReady) {
    return Err(Conflict("node " + rep.node + ": unknown session; register again"));
  }
  node->last_seen = now;
  node->attached = rep.attached;
  if (c.log_bytes_dropped > 0) NoteLogsDropped(c, now);
  if (!rep.gpus.empty()) {
    node->samples = rep.gpus;
    ObserveUtilization(*node, rep.gpus);
  }
  for (const JobEvent& e : rep.events) HandleEvent(*node, e, now);
  if (!rep.health.empty()) ApplyHealth(*node, rep.health, now);
  for (const GpuNotice& n : rep.notices) {
    std::vector<JobId> on_gpu = JobsOnGpu(nodes_, running_, rep.node, n.gpu);
    int64_t job = on_gpu.empty() ? 0 : on_gpu.back().value;
    std::string msg =
        "GPU " + std::to_string(n.gpu) + " of " + rep.node + ": " + n.message.substr(0, 256);
    if (job != 0) msg += " in job " + std::to_string(job);
    events_.Raise(ClusterEvent{.kind = EventKind::kGpuXid,
                               .severity = Severity::kInfo,
                               .node = rep.node,
                               .gpu = n.gpu,
                               .job = job,
                               .message = msg},
                  now);
  }
  return Acknowledged{};
}

// A value of the job's tracked metric: its last, and its best if better.
void Controller::NoteMetric(Job& job, const JobEvent& e, TimePoint now) {
  if (job.spec.best_metric.empty()) return;
  MetricPoint p{
      .value = e.value, .step = e.step, .checkpoint = e.message, .at = std::min(e.at, now)};
  const Boxed<MetricPoint>& best = job.metric_best;
  if (!best || (job.spec.best_max ? p.value > best->value : p.value < best->value))
    job.metric_best = p;
  job.metric_last = std::move(p);
  MarkDirty(job);
}

void Controller::HandleEvent(NodeRecord& node, const JobEvent& e, TimePoint now) {
  auto it = jobs_.find(e.job);
  NodeAllocation* part = nullptr;
  Job* job = nullptr;
  if (it != jobs_.end() && it->second.state == JobState::kRunning &&
      it->second.restarts == e.attempt) {
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
      o.stop = StopOrder{.job = e.job,
                         .attempt = e.attempt,
                         .reason = StopReason::kCancel,
                         .grace_period = Duration(0)};
      SendOrder(node.info.name, std::move(o));
    }
    return;
  }
  if (part->ended) return;
  if (e.kind == JobEvent::Kind::kMetric) return NoteMetric(*job, e, now);
  if (e.kind == JobEvent::Kind::kOutputLimit) return NoteOutputLimit(*job, node, e, now);
  if (e.kind == JobEvent::Kind::kCheckpoint) {
    // What preemption would lose is counted from here on.
    job->last_checkpoint =
        std::max(job->last_checkpoint.value_or(TimePoint{}), std::min(e.at, now));
    MarkDirty(*job);
    return;
  }
  if (e.launch_failed) part->launch_failed = true;
  if (!part->started) {
    if (!e.launch_failed) blame_.Watch(*job);
    part->started = true;
    if (!job->started_at && !e.launch_failed) {
      job->started_at = now;
      if (job->restarts == 0)
        counters_.wait_seconds.Observe(static_cast<double>((now - job->submitted_at).count()) /
                                       1000.0);
    }
    job->launched = std::all_of(job->allocation.begin(), job->allocation.end(),
                                [](const NodeAllocation& p) { return p.started; });
    MarkDirty(*job);
  }
  if (e.kind != JobEvent::Kind::kExited) return;
  if (!e.launch_failed) {
    // Its program ran here, whatever its exit: the node starts jobs.
    node.launch_failures = 0;
    if (blame_.Watched(job->id)) BlameLaunchFailures(*job, now);
  }
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
  } else if (job->spec.batch && part == &job->allocation.front() && !job->stop_requested) {
    // A batch script's end is its job's: the script told its other nodes' step servers to
    // end; one it could not reach is stopped (Finish reads the script's end alone).
    StopParts(*job, StopReason::kCancel, job->spec.grace_period, now);
  }
}

// The server kept not all of a report's log bytes. Said once per job (and reason) that it
// happens to, and again once a minute while it lasts, so a full disk does not flood the events.
void Controller::NoteLogsDropped(const AgentReport& c, TimePoint now) {
  if (last_log_drop_.first == c.dropped_job &&
      last_log_drop_.second + std::chrono::minutes(1) > now)
    return;
  last_log_drop_ = {c.dropped_job, now};
  events_.Raise(
      ClusterEvent{.kind = EventKind::kLogDropped,
                   .severity = Severity::kAlert,
                   .node = c.report.node,
                   .job = c.dropped_job.value,
                   .message = "the server did not keep " + std::to_string(c.log_bytes_dropped) +
                              " bytes of job " + c.dropped_job.ToString() + "'s output from node " +
                              c.report.node + ": " + c.dropped_why},
      now);
}

// A job's output on `node` passed its limit: the node keeps its head and its tail only. Said
// as a warning; with stop_at_output_limit the job is also cancelled, saying why.
void Controller::NoteOutputLimit(Job& job, const NodeRecord& node, const JobEvent& e,
                                 TimePoint now) {
  const bool stop = options_.policy.stop_at_output_limit;
  events_.Raise(
      ClusterEvent{.kind = EventKind::kJobOutputLimit,
                   .severity = stop ? Severity::kAlert : Severity::kInfo,
                   .node = node.info.name,
                   .job = job.id.value,
                   .message = "job " + job.id.ToString() + " of " + job.user + ": " + e.message +
                              (stop ? "; the job is stopped (stop_at_output_limit)" : "")},
      now);
  if (!stop || job.stop_requested || job.state != JobState::kRunning) return;
  job.stop_requested = true;
  job.reason_detail = "cancelled: its output on node " + node.info.name + " passed its limit";
  MarkDirty(job);
  StopParts(job, StopReason::kCancel, job.spec.grace_period, now);
}

void Controller::MarkLost(NodeRecord& node, TimePoint now) {
  node.state = NodeRecord::State::kLost;
  watch_.Lost(node);
  std::string jobs = node.running.empty()
                         ? ""
                         : "; its jobs are requeued at " + FormatRfc3339(node.requeue_at) +
                               ", once its agent has surely stopped them";
  std::string kept;  // the jobs that end then instead (requeue: false)
  for (JobId id : node.running) {
    if (!jobs_.at(id).spec.requeue) kept += (kept.empty() ? "" : ", ") + id.ToString();
  }
  if (!kept.empty()) jobs += " (" + kept + " never requeued: failed then)";
  events_.Raise(ClusterEvent{.kind = EventKind::kNodeLost,
                             .severity = Severity::kAlert,
                             .node = node.info.name,
                             .message = "node " + node.info.name + " stopped reporting" + jobs},
                now);
  if (sched::NodeSlots* s = view_.FindNode(node.info.name)) s->schedulable = false;
  nodes_.Disconnect(node);
}

// The jobs of lost nodes whose fence has passed go back to the queue (no retry spent).
void Controller::RequeueFenced(TimePoint now) {
  for (NodeRecord* node : watch_.Fenced(nodes_, now)) {
    // A copy: stopping the jobs may end them.
    const std::vector<JobId> on_node(node->running.begin(), node->running.end());
    for (JobId id : on_node) {
      Job& j = jobs_.at(id);
      if (j.state != JobState::kRunning) continue;
      StopParts(j, StopReason::kNodeFailure, Duration(0), now);
    }
  }
}

void Controller::OnTick(TimePoint now) {
  CheckBudgets(now);
  ReclaimIdleSessions(now);
  if (gate_.WaitsForTime()) ReleaseBegun(now);
  for (JobId id : blame_.Proven(jobs_, now)) BlameLaunchFailures(jobs_.at(id), now);
  queue_.Tick(now, options_.full_pass_interval);
  for (NodeRecord* node : watch_.Silent(nodes_, now)) MarkLost(*node, now);
  RequeueFenced(now);
  nodes_.ExpirePolls(now, options_.poll_timeout);
}

}  // namespace baton::control
