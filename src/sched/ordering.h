// Queue order: each waiting job's score is the sum of weight x factor over its priority class,
// its project's and user's fair share (decayed usage against configured shares, Slurm's
// "fair tree" in two levels), its age (up to policy.max_age), its size, and its least-attained-
// service level; the highest score goes first, ties by submit order (lower id).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/policy.h"
#include "sched/fair_share.h"
#include "sched/pass.h"

namespace baton::sched {

// The factors of one job; `shares` caches per-project/user fair-share factors of a pass.
class FairShareTable {
 public:
  FairShareTable(const UsageLedger* usage, const Policy* policy,
                 const std::vector<PendingJob>& pending, const std::vector<RunningJob>& running);
  double Factor(const std::string& project, const std::string& user);

 private:
  double Lookup(const std::string& project, const std::string& user);

  const UsageLedger* usage_;
  const Policy* policy_;
  double share_total_ = 0;
  std::map<std::string, std::map<std::string, double>> cache_;
  std::map<std::string, int> users_per_project_;
  std::string last_project_, last_user_;  // the last Factor asked, and its answer in cache_
  const double* last_ = nullptr;
};

// The least-attained-service level of a job that has run `service` GPU-seconds: the number of
// Policy::las_thresholds it has reached.
inline int LasLevel(const Policy& policy, double service) {
  const auto& t = policy.las_thresholds;
  return static_cast<int>(std::upper_bound(t.begin(), t.end(), service) - t.begin());
}

Factors ComputeFactors(const PendingJob& job, const Policy& policy, TimePoint now,
                       int64_t cluster_milli, FairShareTable& shares);

// The pass's waiting jobs in start order (indices into in.pending); their factors go to
// `entries`, in that order.
std::vector<uint32_t> OrderQueue(const PassInput& in, const Policy& policy,
                                 std::vector<QueueEntry>& entries);

}  // namespace baton::sched
