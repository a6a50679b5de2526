#include "agent/stop_clock.h"

#include <algorithm>
#include <csignal>

namespace baton::agent {

StopClock::Signals StopClock::Stop(const LaunchOrder& order, Duration grace, TimePoint now) {
  if (phase_ == Phase::kTerminating && grace.count() != 0) {
    if (now + grace < kill_at_) {
      kill_at_ = now + grace;
      kill_moved_ = true;
    }
    return {};
  }
  if (phase_ == Phase::kKilled && grace.count() != 0) return {};
  return Begin(order, grace, false, now);
}

StopClock::Signals StopClock::Begin(const LaunchOrder& order, Duration grace, bool time_limit,
                                    TimePoint now) {
  timed_out_ = timed_out_ || time_limit;
  if (grace.count() == 0) {
    phase_ = Phase::kKilled;
    return {SIGKILL};
  }
  Signals out;
  if (order.interactive == Interactive::kTty) out.push_back(SIGHUP);
  out.push_back(SIGTERM);
  phase_ = Phase::kTerminating;
  kill_at_ = now + grace;
  return out;
}

StopClock::Signals StopClock::Tick(const LaunchOrder& order, TimePoint started_at, TimePoint now) {
  const bool limited = order.time_limit.count() > 0;
  if (phase_ == Phase::kRunning && limited && now >= started_at + order.time_limit)
    return Begin(order, order.grace_period, true, now);
  Signals out;
  // The notice the job asked for, once, that long before its limit.
  if (phase_ == Phase::kRunning && order.signal != 0 && !notice_sent_ && limited &&
      now >= started_at + order.time_limit - order.signal_before) {
    out.push_back(order.signal);
    notice_sent_ = true;
  }
  if (phase_ == Phase::kTerminating && now >= kill_at_) {
    out.push_back(SIGKILL);
    phase_ = Phase::kKilled;
  }
  return out;
}

void StopClock::LimitChanged(const LaunchOrder& order, TimePoint started_at, TimePoint now) {
  if (order.signal != 0 && order.time_limit.count() > 0 &&
      now < started_at + order.time_limit - order.signal_before)
    notice_sent_ = false;
}

}  // namespace baton::agent
