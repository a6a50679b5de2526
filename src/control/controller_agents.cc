// What agents say of their jobs: a registering agent's jobs reconciled with what the controller
// expects of its node, a report's job events (starts, exits, output limits; metrics and
// checkpoints are job_events.h's), the jobs on failed GPUs and on lost nodes stopped; and the
// tick. The nodes' own part
// (sessions, polls, health, drains, silent nodes) is the NodeDesk's (node_desk.h).
#include <algorithm>

#include "control/controller.h"
#include "control/job_events.h"
#include "control/mig_desk.h"

namespace baton::control {

namespace {

// A preemption's stop sent again (to an agent that registered meanwhile): the time left until
// its deadline (at least 1 s: SIGTERM first), else the preemption grace (a failed GPU's).
Duration GraceLeft(const Job& j, Duration preempt_grace, TimePoint now) {
  if (!j.preempt_deadline) return preempt_grace;
  return std::max<Duration>(std::chrono::seconds(1), *j.preempt_deadline - now);
}

}  // namespace

Result<RegisterReply> Controller::Register(const AgentRegister& c, TimePoint now) {
  const NodeInfo& info = c.request.node;
  ASSIGN_OR_RETURN(NodeRecord * joined, nodes_.Join(info, now));
  NodeRecord& node = *joined;
  scaling_.Registered(info.name, now);
  // Before the jobs' events: the ends of jobs the notice stopped are preemptions.
  StopHits(nodes_.Reclaim(node, c.request.reclaim, true, now), now);

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
          o.stop =
              j.stop_requested
                  ? StopOrder{.job = j.id,
                              .attempt = j.restarts,
                              .reason = StopReason::kCancel,
                              .grace_period = j.spec.grace_period}
                  : StopOrder{.job = j.id,
                              .attempt = j.restarts,
                              .reason = StopReason::kPreempt,
                              .grace_period = GraceLeft(j, options_.policy.preempt_grace, now)};
          nodes_.Send(info.name, std::move(o));
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
  StopHits(nodes_.Health(node, c.request.health, now), now);
  return RegisterReply{.session = node.session,
                       .next_seq = 0,
                       .fence_ms = options_.node_timeout.count(),
                       .fence_grace_ms = options_.fence_grace.count()};
}

Duration Controller::SampleInterval() const {
  constexpr Duration kAgentDefault = std::chrono::seconds(2);  // agent::AgentOptions's
  const int64_t rate = std::max(1, options_.sample_reports_per_second);
  const auto nodes = static_cast<int64_t>(nodes_.table().size());
  const Duration spread((nodes * 1000 + rate - 1) / rate);  // ms: `nodes` readings over it
  return std::clamp(spread, kAgentDefault, std::max(kAgentDefault, options_.node_timeout / 4));
}

Result<ReportAnswer> Controller::Report(const AgentReport& c, TimePoint now) {
  const ReportRequest& rep = c.report;
  ASSIGN_OR_RETURN(NodeRecord * node, nodes_.Heard(c, now));
  ledgers_.utilization().Observe(*node, rep.gpus, running_);
  if (rep.reclaim) StopHits(nodes_.Reclaim(*node, rep.reclaim, false, now), now);
  for (const JobEvent& e : rep.events) HandleEvent(*node, e, now);
  if (!rep.health.empty()) StopHits(nodes_.Health(*node, rep.health, now), now);
  nodes_.Notices(*node, rep.notices, now);
  return ReportAnswer{.sample_interval = SampleInterval()};
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
      nodes_.Send(node.info.name, std::move(o));
    }
    return;
  }
  if (part->ended) return;
  if (e.kind == JobEvent::Kind::kMetric) {
    if (NoteMetric(*job, e, now)) MarkDirty(*job);
    return;
  }
  if (e.kind == JobEvent::Kind::kOutputLimit) return NoteOutputLimit(*job, node, e, now);
  if (e.kind == JobEvent::Kind::kCheckpoint) {
    NoteCheckpoint(*job, e, now);
    MarkDirty(*job);
    return;
  }
  if (e.launch_failed) part->launch_failed = true;
  if (!part->started) {
    if (!e.launch_failed) blame_.Watch(*job);
    part->started = true;
    part->gpu_sharing = e.gpu_sharing;
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
    if (blame_.Watched(job->id) && nodes_.BlameLaunchFailures(blame_, *job, now)) MarkDirty(*job);
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

void Controller::StopHits(const std::vector<NodeDesk::Hit>& hits, TimePoint now) {
  for (const NodeDesk::Hit& hit : hits) {
    Job& j = jobs_.at(hit.job);
    if (j.state == JobState::kRunning && j.preempt_deadline && hit.reason == StopReason::kPreempt &&
        now + hit.grace < *j.preempt_deadline) {
      // Preempted already, and now its node is reclaimed: the earlier SIGKILL, on every node.
      j.preempt_deadline = now + hit.grace;
      MarkDirty(j);
      StopParts(j, hit.reason, hit.grace, now);
      continue;
    }
    if (j.state != JobState::kRunning || j.stop_requested || j.preempt_requested) continue;
    // Back to the queue without spending a retry: it resumes from its last checkpoint.
    j.preempt_requested = true;
    if (hit.reason == StopReason::kPreempt) j.preempt_deadline = now + hit.grace;
    j.reason_detail = hit.detail;
    MarkDirty(j);
    StopParts(j, hit.reason, hit.grace, now);
  }
}

void Controller::OnTick(TimePoint now) {
  // Once a day: autoscaled nodes' stretches of days past the detail kept are folded.
  if (options_.node_charge_detail < kMaxDuration)
    node_costs_.Compact(PeriodStart(BudgetPeriod::kDay, now) - options_.node_charge_detail);
  for (ClusterEvent& alert : ledgers_.CheckBudgets(now)) events_.Raise(std::move(alert), now);
  ReclaimIdleSessions(now);
  if (gate_.WaitsForTime()) Recheck(gate_.Due(now), now);  // blocked jobs whose time has come
  for (JobId id : blame_.Proven(jobs_, now)) {
    if (Job& job = jobs_.at(id); nodes_.BlameLaunchFailures(blame_, job, now)) MarkDirty(job);
  }
  queue_.Tick(now, options_.full_pass_interval);
  nodes_.Watch(now);
  nodes_.PlanMig([&] { return queue_.First(kMigLook).first; }, now);
  // The jobs of lost nodes whose fence has passed go back to the queue (no retry spent).
  for (NodeRecord* node : nodes_.Fenced(now)) {
    // A copy: stopping the jobs may end them.
    const std::vector<JobId> on_node(node->running.begin(), node->running.end());
    for (JobId id : on_node) {
      if (Job& j = jobs_.at(id); j.state == JobState::kRunning)
        StopParts(j, StopReason::kNodeFailure, Duration(0), now);
    }
  }
}

}  // namespace baton::control
