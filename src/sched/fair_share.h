// Fair-share usage: GPU-seconds per project and per user inside a project, decayed with a
// half-life so that last month's burst weighs little today. Running jobs are charged at
// their GPU rate continuously (the exact integral of the decay, not samples), so the
// ledger gives the same numbers however often it is read.
#pragma once

#include <map>
#include <string>

#include "core/time.h"

namespace baton::sched {

class UsageLedger {
 public:
  explicit UsageLedger(Duration half_life = std::chrono::hours(24 * 7));

  // Brings the ledger to `now`: decays what was used and charges the running rates.
  void Advance(TimePoint now);
  // Changes the GPUs (milli) a project/user holds from now on. Call Advance(now) first.
  void AddRate(const std::string& project, const std::string& user, int64_t milli);
  // Adds GPU-seconds used in [start, end], decayed as seen at the ledger's time.
  void AddPast(const std::string& project, const std::string& user, int64_t milli, TimePoint start,
               TimePoint end);

  double project(const std::string& name) const;
  double user(const std::string& project, const std::string& user) const;
  double total() const { return total_; }
  const std::map<std::string, double>& projects() const { return projects_; }
  // Users of a project, with their usage.
  const std::map<std::string, double>* users(const std::string& project) const;
  TimePoint at() const { return at_; }
  Duration half_life() const { return half_life_; }
  // Decays with `half_life` from the ledger's time on (call Advance(now) first).
  void SetHalfLife(Duration half_life) {
    half_life_ = half_life > Duration(0) ? half_life : Duration(1);
  }

 private:
  Duration half_life_;
  TimePoint at_{};
  double total_ = 0;
  std::map<std::string, double> projects_;
  std::map<std::string, std::map<std::string, double>> users_;
  std::map<std::string, std::map<std::string, int64_t>> rates_;  // project -> user -> milli
};

}  // namespace baton::sched
