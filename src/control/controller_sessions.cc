// Sessions (`baton run` jobs). Tunnels to running jobs (`baton run`, `attach`, `forward`): the
// controller only checks who may open one and to what, and sends the order to the agent of the
// job's first node; the bytes never pass through here (api/relay.h). (An interactive pool's
// limits on sessions at submit are session_limits.h's.) Idle sessions: one whose pool is
// interactive, with no client attached (its agent reports those) and its GPUs below the pool's
// threshold (the latest samples) for the pool's idle_timeout is cancelled, after a warning in its
// terminal.
#include <algorithm>
#include <cstdio>

#include "control/controller.h"
#include "control/job_checks.h"

namespace baton::control {

Result<JobShown> Controller::Tunnel(const OpenTunnel& c, TimePoint now) {
  std::string name = TaskName(c.id, c.array_index);
  ASSIGN_OR_RETURN(const Job* job, FindOwned(jobs_, c.id, c.array_index, c.caller));
  if (job->array_id == job->id && job->array_index < 0 && !job->spec.array.empty())
    return Err(InvalidArgument("job " + name + " is an array: name one task (12_7)"));
  if (job->state != JobState::kRunning) {
    return Err(Conflict("job " + name + " is " + std::string(JobStateName(job->state)) +
                        (IsTerminal(job->state) ? "" : ": it is not running yet")));
  }
  if (c.step && (!job->spec.alloc || job->step_port <= 0)) {
    return Err(Conflict("job " + name +
                        " is not an allocation (`baton alloc` makes one; `baton run --in "
                        "ID` runs commands in it)"));
  }
  const int port = c.step ? job->step_port : c.port;
  if (port == 0 && job->spec.interactive == Interactive::kNone) {
    return Err(Conflict("job " + name +
                        " has no session to attach to (only jobs started with baton run "
                        "have one; baton logs -f follows any job's output)"));
  }
  const NodeAllocation* first = nullptr;
  for (const NodeAllocation& part : job->allocation) {
    if (!part.ended) {
      first = &part;
      break;
    }
  }
  const NodeRecord* node = first == nullptr ? nullptr : nodes_.Find(first->node);
  if (node == nullptr || node->state != NodeRecord::State::kReady ||
      ((port == 0 || c.step) && first != &job->allocation.front())) {
    return Err(Unavailable("job " + name + "'s node is not connected"));
  }
  Order o;
  o.kind = Order::Kind::kTunnel;
  o.tunnel = TunnelOrder{.id = c.tunnel,
                         .job = job->id,
                         .attempt = job->restarts,
                         .port = port,
                         .step_key = c.step ? job->step_key : ""};
  nodes_.Send(first->node, std::move(o));
  return JobShown{JobAsShown(*job, now)};
}

void Controller::ReclaimIdleSessions(TimePoint now) {
  // Every tick: nothing to walk unless some pool reclaims idle sessions.
  if (!IdleSessions::AnyPoolReclaims(options_.policy)) {
    idle_sessions_.Clear();
    return;
  }
  std::vector<Job*> sessions;
  for (const auto& [id, job] : running_) {
    if (job->spec.interactive != Interactive::kNone) sessions.push_back(job);
  }
  for (const IdleSessions::Verdict& v :
       idle_sessions_.Review(options_.policy, sessions, nodes_.table(), now)) {
    if (v.kind == IdleSessions::Verdict::Kind::kStop) {
      StopIdleSession(*v.job, *v.pool, v.idle_for, now);
      continue;
    }
    const Job& job = *v.job;
    Order o;
    o.kind = Order::Kind::kNote;
    o.note = SessionNote{
        .job = job.id,
        .attempt = job.restarts,
        .message = "baton: this session has been idle for " +
                   FormatDuration(std::chrono::duration_cast<std::chrono::seconds>(v.idle_for)) +
                   " (no client attached, GPUs below " +
                   std::to_string(v.pool->idle_utilization_pct) + "%); it will be stopped in " +
                   FormatDuration(std::chrono::duration_cast<std::chrono::seconds>(v.left)) +
                   " unless you attach (baton attach " + job.id.ToString() + ") or use its GPUs"};
    if (!job.allocation.empty()) nodes_.Send(job.allocation.front().node, std::move(o));
  }
}

void Controller::StopIdleSession(Job& job, const PoolPolicy& pool, Duration idle_for,
                                 TimePoint now) {
  // What it frees: its GPUs for the rest of its time limit.
  Duration left{0};
  if (job.started_at && job.spec.time_limit.count() > 0)
    left = std::max(Duration(0), *job.started_at + job.spec.time_limit - now);
  double gpu_seconds = static_cast<double>(job.spec.resources.milli_gpus) / 1000.0 *
                       std::chrono::duration<double>(left).count();
  ++counters_.sessions_reclaimed;
  counters_.reclaimed_gpu_seconds += gpu_seconds;
  char hours[32];
  std::snprintf(hours, sizeof hours, "%.2f", gpu_seconds / 3600);
  std::string why = "an idle session: no client attached and its GPUs below " +
                    std::to_string(pool.idle_utilization_pct) + "% for " +
                    FormatDuration(std::chrono::duration_cast<std::chrono::seconds>(idle_for));
  (void)ActOn(job, JobAction::Kind::kCancel, Caller{.user = "baton", .admin = true}, now);
  job.reason_detail = "cancelled: " + why;
  MarkDirty(job);
  events_.Raise(
      ClusterEvent{.kind = EventKind::kSessionReclaimed,
                   .severity = Severity::kInfo,
                   .node = job.allocation.empty() ? "" : job.allocation.front().node,
                   .job = job.id.value,
                   .message = "session " + job.id.ToString() + " of " + job.user + " stopped as " +
                              why + "; " + hours + " GPU-hours of its time limit freed"},
      now);
}

}  // namespace baton::control
