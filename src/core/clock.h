// Where `now` comes from, for the parts of Baton that need the time of day: RealClock in
// production, SimulatedClock (moves only when told) in tests and `baton sim`. An interface
// only; what core/ itself computes still takes `now` as a parameter.
#pragma once

#include <atomic>

#include "core/time.h"

namespace baton {

// Thread-safe: Now may be called from any thread.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint Now() = 0;
};

class RealClock : public Clock {
 public:
  TimePoint Now() override {
    return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
  }
};

class SimulatedClock : public Clock {
 public:
  explicit SimulatedClock(TimePoint start = TimePoint{}) : now_ms_(ToMillis(start)) {}
  TimePoint Now() override { return FromMillis(now_ms_.load()); }
  void Advance(Duration d) { now_ms_ += d.count(); }
  void Set(TimePoint t) { now_ms_ = ToMillis(t); }

 private:
  std::atomic<int64_t> now_ms_;
};

}  // namespace baton
