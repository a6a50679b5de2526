// A running job's clock, the first of the agent's decisions made a value it drives with `now`
// (agent.cc carries out what it returns): the job's time limit, the notice it asked for before
// it (Slurm's --signal), and a stop's grace. PRODUCT.md §4: a stop is SIGTERM (checkpoint
// now, the convention training code already handles), then SIGKILL once the grace has passed;
// a terminal's job is hung up first, as a closed terminal would be (an interactive shell
// ignores SIGTERM, and ends with its jobs on SIGHUP). A grace of 0 kills at once.
#pragma once

#include <utility>
#include <vector>

#include "core/protocol.h"
#include "core/time.h"

namespace baton::agent {

class StopClock {
 public:
  // Signals to send to the job's process group, in this order.
  using Signals = std::vector<int>;

  // The controller (or a reclaim notice) asks the job to stop (cancel, preemption, a lost
  // node's requeue) with this grace. A stop already under way goes on, its SIGKILL brought
  // forward to this one's where that is earlier (at once for no grace).
  Signals Stop(const LaunchOrder& order, Duration grace, TimePoint now);
  // Time has passed: the time limit reached (a stop with the job's own grace), the notice due,
  // a stop's grace over (SIGKILL).
  Signals Tick(const LaunchOrder& order, TimePoint started_at, TimePoint now);
  // The job's time limit is now order.time_limit (`baton update --time`): a later limit earns
  // its notice again.
  void LimitChanged(const LaunchOrder& order, TimePoint started_at, TimePoint now);

  // Whether a stop has begun (its SIGTERM, or SIGKILL, was sent).
  bool stopping() const { return phase_ != Phase::kRunning; }
  // Whether the stop was the job's time limit.
  bool timed_out() const { return timed_out_; }
  // While stopping (SIGTERM sent): when SIGKILL follows.
  TimePoint kill_at() const { return kill_at_; }
  // Whether a stop since the last call brought the SIGKILL forward (the job's deadline file is
  // to be written again).
  bool TakeKillMoved() { return std::exchange(kill_moved_, false); }

 private:
  enum class Phase { kRunning, kTerminating, kKilled };
  Signals Begin(const LaunchOrder& order, Duration grace, bool time_limit, TimePoint now);

  Phase phase_ = Phase::kRunning;
  bool notice_sent_ = false;
  bool timed_out_ = false;
  TimePoint kill_at_{};  // kTerminating: when SIGKILL follows
  bool kill_moved_ = false;
};

}  // namespace baton::agent
