// Idle sessions: one whose pool is interactive, with no client attached (its agent reports
// those) and its GPUs below the pool's threshold (the latest samples) for the pool's
// idle_timeout is cancelled, after a warning in its terminal. The clocks and verdicts are
// IdleSessions'; the warning and what a stop frees are session_orders.h's.
#include "control/controller.h"
#include "control/session_orders.h"

namespace baton::control {

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
    Job& job = *v.job;
    if (v.kind == IdleSessions::Verdict::Kind::kWarn) {
      if (!job.allocation.empty()) nodes_.Send(job.allocation.front().node, IdleWarning(v));
      continue;
    }
    (void)ActOn(job, JobAction::Kind::kCancel, Caller{.user = "baton", .admin = true}, now);
    Reclaimed r = ReclaimedSession(job, *v.pool, v.idle_for, now);
    ++counters_.sessions_reclaimed;
    counters_.reclaimed_gpu_seconds += r.gpu_seconds;
    job.reason_detail = "cancelled: " + r.why;
    MarkDirty(job);
    events_.Raise(std::move(r.event), now);
  }
}

}  // namespace baton::control
