// A spot node's reclaim notice (reclaim_watch.h): looked for on a thread of its own, taken by
// the main loop, which stops every job at once with the time left as its grace (SIGTERM now,
// SIGKILL at the deadline) and tells the controller, which drains the node and requeues the
// jobs elsewhere as preempted. The agent does not wait for the controller: a notice gives two
// minutes at most (30 s on GCP), and a job's checkpoint needs all of them.
//
// Each stop's deadline is written to the job's $BATON_PREEMPT_DEADLINE before its SIGTERM:
// DATA/deadlines/ID.ATTEMPT, one line, the RFC 3339 UTC time its SIGKILL is due. The directory
// is the agent's (0711 under root, so that a job's user passes through by name; 0700 else), each
// file 0600 and its job's user's: no user reads another's, none can put a link there for the
// agent to write through.
#include <csignal>

#include "agent/agent.h"

namespace baton::agent {

void Agent::WatchReclaim() {
  std::string failing;  // the source's last error, said once until it answers again
  while (!stopping_) {
    {
      std::lock_guard lock(mu_);
      if (reclaim_seen_) return;  // seen at the start: nothing more to look for
    }
    auto look = reclaim_watch_->Look(clock_.Now());
    if (!look) {
      if (!stopping_ && look.error().message() != failing) {
        LogWarn("reclaim notices: " + look.error().message() + " (looked at again every " +
                    FormatDuration(options_.reclaim_poll) + ")",
                Context());
      }
      failing = look.error().message();
    } else {
      if (!failing.empty()) LogInfo("reclaim notices: the source answers again", Context());
      failing.clear();
      if (*look) {
        std::lock_guard lock(mu_);
        reclaim_seen_ = **look;
        cv_.notify_all();
        return;  // a notice stays: the node is going
      }
    }
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, options_.reclaim_poll, [&] { return stopping_.load(); });
  }
}

void Agent::TakeReclaim(TimePoint now) {
  if (reclaim_) return;
  {
    std::lock_guard lock(mu_);
    if (!reclaim_seen_) return;
    reclaim_ = reclaim_seen_;
  }
  // SIGTERM first, always: a deadline already past still leaves its jobs a second.
  const Duration left = std::max<Duration>(std::chrono::seconds(1), reclaim_->deadline - now);
  int stopping = 0;
  for (auto& [key, job] : jobs_) {
    if (job.exited) continue;
    Order o;
    o.kind = Order::Kind::kStop;
    o.stop = StopOrder{.job = key.job,
                       .attempt = key.attempt,
                       .reason = StopReason::kPreempt,
                       .grace_period = left};
    Carry(jobs_.Take(o, now), now);
    ++stopping;
  }
  LogWarn("spot reclaim notice (" + reclaim_->source + "): this node is taken back at " +
              FormatRfc3339(reclaim_->deadline) + "; " + std::to_string(stopping) +
              (stopping == 1 ? " job" : " jobs") + " stopping (SIGTERM now, SIGKILL in " +
              FormatDuration(left) + ")",
          Context());
}

void Agent::WriteDeadlines(const JobBook::Effects& fx) {
  // A stop's SIGTERM (not the notice a job asked for as --signal TERM@..., sent while it runs
  // on), and stops brought forward.
  std::vector<JobAttempt> due = fx.deadlines;
  for (const auto& [key, sig] : fx.signals) {
    if (sig == SIGTERM && jobs_[key].stop.stopping()) due.push_back(key);
  }
  for (const JobAttempt& key : due) {
    RunningJob& job = jobs_[key];
    const std::string path = DeadlineFileOf(options_.data_dir, key.job, key.attempt);
    Status st = env_.WriteFileAtomic(path, FormatRfc3339(job.stop.kill_at()) + "\n",
                                     {.mode = 0600, .sync = false});
    if (st.ok() && as_root_) {
      auto user = LookupUnixUser(job.order.user);
      st = user ? env_.SetOwner(path, user->uid, user->gid) : Status(user.error());
    }
    if (!st.ok()) {
      LogWarn("job " + key.job.ToString() +
                  ": its $BATON_PREEMPT_DEADLINE is not written: " + st.message(),
              Context(key.job));
    }
  }
}

}  // namespace baton::agent
