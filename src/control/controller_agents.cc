// The controller's side of the nodes: agents registering, polling for orders and reporting,
// node timeouts, drains, and the node list.
#include <algorithm>

#include "control/controller.h"

namespace baton::control {

// ---- agents ----

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
  for (const auto& [id, job] : running_) {
    const Job& j = *job;
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
  for (const auto& [id, job] : running_) {
    const Job& j = *job;
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
  std::vector<JobId> expected;
  expected.reserve(running_.size());
  for (const auto& [id, job] : running_) expected.push_back(id);
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
  for (const auto& [id, job] : running_) {
    for (const auto& p : job->allocation) {
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
