#include "control/session_orders.h"

#include <algorithm>
#include <cstdio>

#include "control/job_checks.h"

namespace baton::control {

Result<TunnelTo> TunnelFor(const OpenTunnel& c, const std::map<JobId, Job>& jobs,
                           const NodeTable& nodes) {
  std::string name = TaskName(c.id, c.array_index);
  ASSIGN_OR_RETURN(const Job* job, FindOwned(jobs, c.id, c.array_index, c.caller));
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
  const NodeRecord* node = first == nullptr ? nullptr : nodes.Find(first->node);
  if (node == nullptr || node->state != NodeRecord::State::kReady ||
      ((port == 0 || c.step) && first != &job->allocation.front())) {
    return Err(Unavailable("job " + name + "'s node is not connected"));
  }
  TunnelTo to{.job = job, .node = first->node};
  to.order.kind = Order::Kind::kTunnel;
  to.order.tunnel = TunnelOrder{.id = c.tunnel,
                                .job = job->id,
                                .attempt = job->restarts,
                                .port = port,
                                .step_key = c.step ? job->step_key : ""};
  return to;
}

Order IdleWarning(const IdleSessions::Verdict& v) {
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
  return o;
}

Reclaimed ReclaimedSession(const Job& job, const PoolPolicy& pool, Duration idle_for,
                           TimePoint now) {
  Reclaimed r;
  // What it frees: its GPUs for the rest of its time limit.
  Duration left{0};
  if (job.started_at && job.spec.time_limit.count() > 0)
    left = std::max(Duration(0), *job.started_at + job.spec.time_limit - now);
  r.gpu_seconds = static_cast<double>(job.spec.resources.milli_gpus) / 1000.0 *
                  std::chrono::duration<double>(left).count();
  char hours[32];
  std::snprintf(hours, sizeof hours, "%.2f", r.gpu_seconds / 3600);
  r.why = "an idle session: no client attached and its GPUs below " +
          std::to_string(pool.idle_utilization_pct) + "% for " +
          FormatDuration(std::chrono::duration_cast<std::chrono::seconds>(idle_for));
  r.event =
      ClusterEvent{.kind = EventKind::kSessionReclaimed,
                   .severity = Severity::kInfo,
                   .node = job.allocation.empty() ? "" : job.allocation.front().node,
                   .job = job.id.value,
                   .message = "session " + job.id.ToString() + " of " + job.user + " stopped as " +
                              r.why + "; " + hours + " GPU-hours of its time limit freed"};
  return r;
}

}  // namespace baton::control
