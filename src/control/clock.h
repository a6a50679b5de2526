// Where `now` comes from. Production uses RealClock; tests and `baton sim` use SimulatedClock,
// which moves only when told.
#pragma once

#include <atomic>

#include "core/time.h"

namespace baton::control {

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

}  // namespace baton::control
