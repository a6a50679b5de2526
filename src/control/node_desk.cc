#include "control/node_desk.h"

#include <algorithm>

#include "control/mig_desk.h"

namespace baton::control {
namespace {

// Running jobs with a live process on GPU `gpu` of `node`.
std::vector<JobId> JobsOnGpu(const NodeRecord& node, const RunningJobs& running, int gpu) {
  std::vector<JobId> out;
  for (JobId id : node.running) {
    for (const NodeAllocation& part : running.at(id)->allocation) {
      if (part.node == node.info.name && !part.ended &&
          std::find(part.gpus.begin(), part.gpus.end(), gpu) != part.gpus.end()) {
        out.push_back(id);
      }
    }
  }
  return out;
}

// Whether GPU `gpu` of the node may be given to jobs: a device (not a vacant MIG place), not
// drained, not being reset, not on a MIG GPU being re-partitioned or held for a change.
bool GpuUsable(const NodeRecord& node, const Gpu& g) {
  const int gpu = g.index;
  if (g.vacant || node.mig_held.count(gpu) != 0 ||
      (g.physical >= 0 && node.mig_reconfiguring.count(g.physical) != 0))
    return false;
  if (node.gpu_drains.count(gpu) != 0) return false;
  // "drain" health became an admin drain above; an admin's undrain overrides it.
  return gpu < 0 || static_cast<size_t>(gpu) >= node.health.size() ||
         node.health[gpu].state != GpuHealthState::kReset;
}

}  // namespace

NodeDesk::NodeDesk(Shared shared)
    : shared_(shared), watch_(shared.options.node_timeout, shared.options.fence_grace) {}

NodeRecord& NodeDesk::Ensure(const std::string& name) {
  bool added = false;
  NodeRecord& node = nodes_.Ensure(name, &added);
  if (added) {
    feasibility_.MarkStale();
    watch_.Reset();  // never seen: the next tick walks the nodes
    sched::NodeSlots slots;
    slots.name = name;
    slots.schedulable = false;
    shared_.view.AddNode(std::move(slots));
  }
  return node;
}

void NodeDesk::Send(const std::string& name, Order order) {
  nodes_.Send(Ensure(name), std::move(order));
}

void NodeDesk::RebuildSlots(const NodeRecord& node) {
  sched::NodeSlots* slots = shared_.view.FindNode(node.info.name);
  if (slots == nullptr) return;  // not in the view: no slots to make
  slots->gpus.clear();
  for (const Gpu& g : node.info.gpus) {
    // A vacant MIG place: a slot no request's type matches, never usable.
    slots->gpus.push_back(sched::GpuSlot{.index = g.index,
                                         .model = g.vacant ? "" : g.model,
                                         .mig_profile = g.vacant ? "-" : g.mig_profile,
                                         .memory_bytes = g.vacant ? 0 : g.memory_bytes,
                                         .free_milli = 1000,
                                         .free_memory_bytes = g.vacant ? 0 : g.memory_bytes,
                                         .usable = GpuUsable(node, g),
                                         .island = g.island,
                                         .pcie_switch = g.pcie_switch,
                                         .numa_node = g.numa_node});
  }
  slots->pool = node.info.pool;
  slots->refuses_root_jobs = node.info.refuses_root_jobs;
  slots->spot = node.info.spot;
  slots->mps = node.info.mps;
  slots->total_cpus = slots->free_cpus = node.info.cpus;
  slots->total_memory_bytes = slots->free_memory_bytes = node.info.memory_bytes;
  slots->schedulable = node.state == NodeRecord::State::kReady && node.drain_reason.empty() &&
                       !node.reclaim && !node.cooling_until && !node.leaving;
  for (JobId id : node.running) {
    const Job& j = *shared_.running.at(id);
    for (const auto& part : j.allocation) {
      if (part.node == node.info.name) sched::ApplyPart(*slots, part, j.spec.resources, +1, j.user);
    }
  }
}

void NodeDesk::RestoreDrains(const std::vector<store::Drain>& drains) {
  for (const store::Drain& d : drains) {
    if (!IsValidNodeName(d.node)) continue;
    NodeRecord& n = Ensure(d.node);
    if (d.gpu < 0)
      n.drain_reason = d.reason;
    else
      n.gpu_drains[d.gpu] = d.reason;
  }
}

// ---- an admin's commands ----

Status NodeDesk::Drain(const DrainNode& c) {
  if (!c.caller.admin) return PermissionDenied("only an admin drains or undrains nodes");
  NodeRecord* node = nodes_.Find(c.node);
  if (node == nullptr) return NotFound("node " + c.node.substr(0, 64) + " is not known");
  // A node known only from the store (not back since a restart) has no GPU list yet: its
  // GPU drains are taken on trust and apply when it registers.
  for (int g : c.gpus) {
    if (g < 0 || (!node->info.gpus.empty() && static_cast<size_t>(g) >= node->info.gpus.size())) {
      return InvalidArgument("gpus: node " + c.node + " has no GPU " + std::to_string(g));
    }
  }
  std::string reason = c.reason.empty() ? "drained by " + c.caller.user : c.reason.substr(0, 256);
  if (c.gpus.empty()) {
    node->drain_reason = c.drain ? reason : "";
    node->launch_failures = 0;  // an undrained node starts over
    shared_.drains.push_back(
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
        Send(c.node, std::move(o));
      }
    }
    shared_.drains.push_back(
        store::Drain{.node = c.node, .gpu = g, .reason = reason, .active = c.drain});
  }
  RebuildSlots(*node);
  shared_.queue.RequestFull();  // an undrain frees GPUs; a drain changes reservations
  return Status::Ok();
}

Status NodeDesk::Inject(const InjectFault& c) {
  if (!c.caller.admin) return PermissionDenied("only an admin injects faults");
  NodeRecord* node = nodes_.Find(c.node);
  if (node == nullptr) return NotFound("node " + c.node.substr(0, 64) + " is not known");
  if (node->state != NodeRecord::State::kReady)
    return Conflict("node " + c.node + " is not connected");
  if (node->info.gpu_backend != GpuBackendKind::kSimulated) {
    return InvalidArgument("node " + c.node + " has real GPUs (" +
                           std::string(GpuBackendName(node->info.gpu_backend)) +
                           "): faults are injected only into simulated GPUs");
  }
  if (c.fault.fault != FaultKind::kSilence &&
      (c.fault.gpu < 0 || static_cast<size_t>(c.fault.gpu) >= node->info.gpus.size())) {
    return InvalidArgument("gpu: node " + c.node + " has no GPU " + std::to_string(c.fault.gpu));
  }
  Order o;
  o.kind = Order::Kind::kInject;
  o.inject = c.fault;
  Send(c.node, std::move(o));
  return Status::Ok();
}

bool NodeDesk::BlameLaunchFailures(LaunchBlame& blame, Job& job, TimePoint now) {
  bool changed = false;
  for (const LaunchBlame::Drain& d :
       blame.Blame(job, nodes_, shared_.options.drain_after_launch_failures, &changed)) {
    NodeRecord& failed = *nodes_.Find(d.node);
    failed.drain_reason = d.reason;
    shared_.drains.push_back(
        store::Drain{.node = d.node, .gpu = -1, .reason = d.reason, .active = true});
    RebuildSlots(failed);
    shared_.queue.RequestFull();
    shared_.events.Raise(ClusterEvent{.kind = EventKind::kNodeDrained,
                                      .severity = Severity::kAlert,
                                      .node = d.node,
                                      .job = job.id.value,
                                      .message = "node " + d.node + " drained: " + d.reason +
                                                 "; `baton undrain " + d.node + "` returns it"},
                         now);
  }
  return changed;
}

// ---- agents ----

Result<NodeRecord*> NodeDesk::Join(const NodeInfo& info, TimePoint now) {
  if (!IsValidNodeName(info.name)) return Err(InvalidArgument("node.name: invalid"));
  NodeRecord& node = Ensure(info.name);
  if (node.state != NodeRecord::State::kReady) {
    shared_.events.Raise(ClusterEvent{.kind = EventKind::kNodeJoined,
                                      .severity = Severity::kInfo,
                                      .node = info.name,
                                      .message = "node " + info.name + " joined with " +
                                                 std::to_string(std::count_if(
                                                     info.gpus.begin(), info.gpus.end(),
                                                     [](const Gpu& g) { return !g.vacant; })) +
                                                 " GPUs"},
                         now);
  }
  if (node.info.gpus.size() != info.gpus.size()) node.health.clear();
  // A MIG GPU re-partitioned on order: its agent registers what it has now.
  for (const auto& [physical, ordered] : node.mig_reconfiguring) {
    bool done = false;
    shared_.events.Raise(MigReported(info.name, physical, ordered, info, now, &done), now);
    if (!done) node.mig_failed_until[physical] = now + kMigFailedRest;
  }
  node.mig_reconfiguring.clear();
  node.mig_held.clear();
  nodes_.StartSession(node, now);
  if (node.info != info || node.state == NodeRecord::State::kAwaiting) feasibility_.MarkStale();
  mig_nodes_ += (info.mig_gpus.empty() ? 0 : 1) - (node.info.mig_gpus.empty() ? 0 : 1);
  node.info = info;
  node.state = NodeRecord::State::kReady;
  node.requeue_at = TimePoint::max();  // back before its fence passed: its jobs ran on
  node.last_seen = now;
  watch_.Reset();  // it may have been lost: the next tick walks the nodes
  node.samples.clear();
  RebuildSlots(node);
  shared_.queue.RequestFull();
  return &node;
}

Result<PollAnswer> NodeDesk::Poll(const AgentPoll& c, TimePoint now) {
  NodeRecord* node = nodes_.Find(c.node);
  if (node == nullptr || node->session != c.session || node->state != NodeRecord::State::kReady) {
    return Err(Conflict("node " + c.node + ": unknown session; register again"));
  }
  node->last_seen = now;
  PollAnswer r;
  if (std::optional<std::vector<Order>> orders =
          nodes_.Poll(*node, c.after, c.poll_id, now, shared_.options.poll_timeout)) {
    r.orders = std::move(*orders);
  } else {
    r.parked = true;
  }
  return r;
}

Result<NodeRecord*> NodeDesk::Heard(const AgentReport& c, TimePoint now) {
  const ReportRequest& rep = c.report;
  NodeRecord* node = nodes_.Find(rep.node);
  if (node == nullptr || node->session != rep.session || node->state != NodeRecord::State::kReady) {
    return Err(Conflict("node " + rep.node + ": unknown session; register again"));
  }
  node->last_seen = now;
  node->attached = rep.attached;
  if (c.log_bytes_dropped > 0) NoteLogsDropped(c, now);
  if (!rep.gpus.empty()) node->samples = rep.gpus;
  return node;
}

void NodeDesk::Notices(const NodeRecord& node, const std::vector<GpuNotice>& notices,
                       TimePoint now) {
  const std::string& name = node.info.name;
  for (const GpuNotice& n : notices) {
    std::vector<JobId> on_gpu = JobsOnGpu(node, shared_.running, n.gpu);
    int64_t job = on_gpu.empty() ? 0 : on_gpu.back().value;
    std::string msg =
        "GPU " + std::to_string(n.gpu) + " of " + name + ": " + n.message.substr(0, 256);
    if (job != 0) msg += " in job " + std::to_string(job);
    shared_.events.Raise(ClusterEvent{.kind = EventKind::kGpuXid,
                                      .severity = Severity::kInfo,
                                      .node = name,
                                      .gpu = n.gpu,
                                      .job = job,
                                      .message = msg},
                         now);
  }
}

// The server kept not all of a report's log bytes. Said once per job (and reason) that it
// happens to, and again once a minute while it lasts, so a full disk does not flood the events.
void NodeDesk::NoteLogsDropped(const AgentReport& c, TimePoint now) {
  if (last_log_drop_.first == c.dropped_job &&
      last_log_drop_.second + std::chrono::minutes(1) > now)
    return;
  last_log_drop_ = {c.dropped_job, now};
  shared_.events.Raise(
      ClusterEvent{.kind = EventKind::kLogDropped,
                   .severity = Severity::kAlert,
                   .node = c.report.node,
                   .job = c.dropped_job.value,
                   .message = "the server did not keep " + std::to_string(c.log_bytes_dropped) +
                              " bytes of job " + c.dropped_job.ToString() + "'s output from node " +
                              c.report.node + ": " + c.dropped_why},
      now);
}

std::vector<NodeDesk::Hit> NodeDesk::Reclaim(NodeRecord& node,
                                             const std::optional<ReclaimNotice>& notice,
                                             bool registering, TimePoint now) {
  if (!notice) {
    // A registration without one: a new machine of the name (an agent started again on a
    // reclaimed machine looks before it registers).
    if (registering && node.reclaim) {
      node.reclaim.reset();
      RebuildSlots(node);
      shared_.queue.RequestFull();
    }
    return {};
  }
  const bool news = !node.reclaim || node.reclaim->deadline != notice->deadline;
  if (news) node.reclaim_heard = now;
  node.reclaim = *notice;
  // The time the notice gave, as the agent measured it (its clock and the cloud's, not the
  // controller's, which may differ), less what has passed here since it came.
  const Duration left = std::max<Duration>(
      std::chrono::seconds(1), (notice->deadline - notice->seen) - (now - node.reclaim_heard));
  const std::string words = "its spot node " + node.info.name + " is taken back (" +
                            notice->source + " reclaim notice, deadline " +
                            FormatRfc3339(notice->deadline) + ")";
  std::vector<Hit> hits;
  for (JobId id : node.running) {
    hits.push_back(Hit{
        .job = id, .detail = "preempted: " + words, .reason = StopReason::kPreempt, .grace = left});
  }
  if (news) {
    RebuildSlots(node);
    shared_.queue.RequestFull();  // its GPUs are gone; reservations change
    const std::string cooling = CoolOff(node, now);
    shared_.events.Raise(
        ClusterEvent{.kind = EventKind::kNodeReclaimed,
                     .severity = Severity::kInfo,
                     .node = node.info.name,
                     .message = "node " + node.info.name + ": spot reclaim notice (" +
                                notice->source + "): taken back at " +
                                FormatRfc3339(notice->deadline) + "; " +
                                std::to_string(hits.size()) +
                                (hits.size() == 1 ? " job stops" : " jobs stop") +
                                " to be requeued elsewhere" + cooling},
        now);
  }
  return hits;
}

std::vector<NodeDesk::Hit> NodeDesk::Health(NodeRecord& node, const std::vector<GpuHealth>& health,
                                            TimePoint now) {
  std::vector<Hit> hits;
  size_t n = node.info.gpus.size();
  std::vector<GpuHealth> next(n);
  for (size_t g = 0; g < n; ++g) next[g].index = static_cast<int>(g);
  for (const GpuHealth& h : health) {
    // A vacant MIG place has no health of its own (its agent judges a MIG GPU's faults for all
    // its places): no event, no drain, nothing to keep for the instance made there later.
    if (h.index >= 0 && static_cast<size_t>(h.index) < n && !node.info.gpus[h.index].vacant)
      next[h.index] = h;
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
      shared_.events.Raise(
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
      shared_.drains.push_back(
          store::Drain{.node = node.info.name, .gpu = gpu, .reason = reason, .active = true});
    }
    std::vector<JobId> hit = JobsOnGpu(node, shared_.running, gpu);
    std::string jobs, ended;  // requeued; stopped for good (requeue: false)
    for (JobId id : hit) {
      std::string& list = shared_.jobs.at(id).spec.requeue ? jobs : ended;
      list += (list.empty() ? "" : ", ") + id.ToString();
    }
    if (!jobs.empty()) jobs = "; requeued job " + jobs;
    if (!ended.empty()) jobs += "; stopped job " + ended + " (never requeued: it fails)";
    shared_.events.Raise(ClusterEvent{.kind = EventKind::kGpuFailed,
                                      .severity = Severity::kAlert,
                                      .node = node.info.name,
                                      .gpu = gpu,
                                      .job = hit.empty() ? 0 : hit.front().value,
                                      .message = where + " failed: " + h.reason +
                                                 "; out of service " + until + jobs},
                         now);
    const std::string detail = (where + " failed: " + h.reason).substr(0, 512);
    for (JobId id : hit) hits.push_back(Hit{id, detail});
  }
  node.health = std::move(next);
  if (changed) {
    RebuildSlots(node);
    shared_.queue.RequestFull();
  }
  return hits;
}

// ---- silent nodes ----

void NodeDesk::Leave(NodeRecord& node, bool leaving) {
  if (node.leaving == leaving) return;
  node.leaving = leaving;
  RebuildSlots(node);
  if (!leaving) shared_.queue.RequestFull();
}

void NodeDesk::Suspend(NodeRecord& node, TimePoint now) {
  node.leaving = false;
  if (node.state == NodeRecord::State::kSuspended) return;
  if (!node.running.empty()) {
    if (node.state != NodeRecord::State::kLost) MarkLost(node, now);
    return;
  }
  node.state = NodeRecord::State::kSuspended;
  node.samples.clear();
  nodes_.Disconnect(node);
  RebuildSlots(node);
}

void NodeDesk::Watch(TimePoint now) {
  for (NodeRecord* node : watch_.Silent(nodes_, now)) MarkLost(*node, now);
  if (now < cooling_ends_) return;
  // A cool-off is over: its spot nodes take jobs again.
  cooling_ends_ = TimePoint::max();
  for (auto& [name, node] : nodes_) {
    if (!node.cooling_until) continue;
    if (*node.cooling_until > now) {
      cooling_ends_ = std::min(cooling_ends_, *node.cooling_until);
      continue;
    }
    node.cooling_until.reset();
    RebuildSlots(node);
    shared_.queue.RequestFull();
  }
}

std::string NodeDesk::CoolOff(const NodeRecord& reclaimed, TimePoint now) {
  const Duration cooloff = shared_.options.policy.reclaim_cooloff;
  if (cooloff <= Duration(0)) return "";
  const TimePoint until = now + cooloff;
  int cooling = 0;
  for (auto& [name, node] : nodes_) {
    if (&node == &reclaimed || !node.info.spot || node.info.pool != reclaimed.info.pool) continue;
    node.cooling_until = std::max(node.cooling_until.value_or(until), until);
    RebuildSlots(node);
    ++cooling;
  }
  cooling_ends_ = std::min(cooling_ends_, until);
  if (cooling == 0) return "";
  return "; pool " + reclaimed.info.pool + "'s other spot nodes take no new jobs until " +
         FormatRfc3339(until) + " (reclaim_cooloff)";
}

void NodeDesk::MarkLost(NodeRecord& node, TimePoint now) {
  node.state = NodeRecord::State::kLost;
  watch_.Lost(node);
  std::string jobs = node.running.empty()
                         ? ""
                         : "; its jobs are requeued at " + FormatRfc3339(node.requeue_at) +
                               ", once its agent has surely stopped them";
  std::string kept;  // the jobs that end then instead (requeue: false)
  for (JobId id : node.running) {
    if (!shared_.jobs.at(id).spec.requeue) kept += (kept.empty() ? "" : ", ") + id.ToString();
  }
  if (!kept.empty()) jobs += " (" + kept + " never requeued: failed then)";
  shared_.events.Raise(
      ClusterEvent{.kind = EventKind::kNodeLost,
                   .severity = Severity::kAlert,
                   .node = node.info.name,
                   .message = "node " + node.info.name + " stopped reporting" + jobs},
      now);
  if (sched::NodeSlots* s = shared_.view.FindNode(node.info.name)) s->schedulable = false;
  nodes_.Disconnect(node);
}

void NodeDesk::PlanMig(const std::function<std::vector<const Job*>()>& waiting, TimePoint now) {
  if (now < next_mig_plan_) return;
  next_mig_plan_ = now + shared_.options.policy.mig_window;
  if (mig_nodes_ == 0) return;  // no agent re-plans MIG: nothing to walk (most clusters)
  bool any = false;
  for (auto& [name, node] : nodes_) {
    if (node.info.mig_gpus.empty()) continue;
    any = true;
    // The instances held for the last window's changes are free again: what waits for them
    // is planned anew below.
    bool changed = !node.mig_held.empty();
    node.mig_held.clear();
    for (auto it = node.mig_reconfiguring.begin(); it != node.mig_reconfiguring.end();) {
      if (now - it->second.at < kMigChangeTimeout) {
        ++it;
        continue;
      }
      shared_.events.Raise(
          ClusterEvent{.kind = EventKind::kMigChanged,
                       .severity = Severity::kAlert,
                       .node = name,
                       .message = "GPU " + std::to_string(it->first) + " of " + name +
                                  ": its agent did not report the MIG change ordered " +
                                  FormatDuration(now - it->second.at) +
                                  " ago; its instances go back in use as they were"},
          now);
      node.mig_failed_until[it->first] = now + kMigFailedRest;
      it = node.mig_reconfiguring.erase(it);
      changed = true;
    }
    if (changed) {
      RebuildSlots(node);
      shared_.queue.RequestFull();
    }
  }
  if (!any) return;
  const std::vector<std::string> wanted = MigWanted(waiting());
  if (wanted.empty()) return;
  const sched::MigPlan plan = sched::PlanMig(MigGpusOf(nodes_, shared_.running, now), wanted);
  for (const sched::MigChange& c : plan.changes) {
    NodeRecord* node = nodes_.Find(c.node);
    if (node == nullptr) continue;
    if (c.after) {
      // Busy instances in the way: no new job on them, so that they come free.
      for (int g : MigIndices(node->info, c.gpu, c.drain)) node->mig_held.insert(g);
    } else {
      Order o = MigOrderOf(c);
      node->mig_reconfiguring[c.gpu] = NodeRecord::MigOrdered{.order = o.mig, .at = now};
      Send(c.node, std::move(o));
    }
    RebuildSlots(*node);
  }
  if (!plan.changes.empty()) shared_.queue.RequestFull();
}

}  // namespace baton::control
