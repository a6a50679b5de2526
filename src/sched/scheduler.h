// One scheduling pass, as a pure function: (cluster, pending and running jobs, usage, policy,
// now) -> starts, preemptions, reservations and a reason for every job that waits.
//
// A full pass:
//   1. orders the queue by score = sum of weight x factor (priority class, fair share, age,
//      size), ties by submit order;
//   2. walks it once: a job over a quota or limit waits ("quota"); a job that fits now —
//      without touching GPUs reserved for a job ahead that it would still hold then — starts
//      (backfill); the first `policy.reservations` jobs that do not fit get a reservation:
//      the earliest time and GPUs at which they fit as running jobs end (time limits);
//   3. for a job that waits beyond the preemption grace, looks for victims: running jobs of
//      a lower priority class, or of projects borrowing beyond their guarantee while this
//      job's project is under its own; the set chosen loses the least GPU-time since each
//      victim's last checkpoint.
// An incremental pass (full = false) places only the given new arrivals against the
// reservations already in the view: no new reservations, no preemption.
// Cost: one sort of the queue; each job looks at the nodes of the buckets that can hold it;
// reservations and preemption searches are bounded per pass.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/job.h"
#include "core/policy.h"
#include "sched/cluster_view.h"
#include "sched/fair_share.h"

namespace baton::sched {

struct PendingJob {
  JobId id;
  const Resources* resources = nullptr;  // borrowed, like every pointer here
  Priority priority = Priority::kNormal;
  const std::string* project = nullptr;
  const std::string* user = nullptr;
  const std::string* pool = nullptr;
  TimePoint submitted{};
  Duration time_limit{0};  // 0 = none
  double service = 0;      // GPU-seconds it has run so far, over all its attempts
};

struct RunningJob {
  JobId id;
  const Resources* resources = nullptr;
  const std::vector<NodeAllocation>* allocation = nullptr;
  Priority priority = Priority::kNormal;
  const std::string* project = nullptr;
  const std::string* user = nullptr;
  const std::string* pool = nullptr;
  TimePoint started{};
  TimePoint expected_end = kNever;  // start + time limit; kNever when it has none
  TimePoint last_checkpoint{};      // the start when it reported none
  bool stopping = false;            // being stopped already (cancel, preemption)
  double service = 0;               // GPU-seconds run so far, this attempt included
};

using Factors = QueueFactors;

struct Start {
  JobId id;
  std::vector<NodeAllocation> allocation;
};

struct Wait {
  JobId id;
  std::string reason;  // "resources", "quota", "priority"
  std::string detail;
  std::optional<TimePoint> estimated_start;
};

struct Preemption {
  JobId victim;
  JobId for_job;
  std::string reason;  // "priority", "quota" or "service" (least attained service)
};

struct Reservation {
  JobId id;
  TimePoint from{};
  std::vector<NodeAllocation> allocation;
  Resources resources;
  bool claim = false;  // made by preemption: held for the job across passes until it starts
};

struct QueueEntry {
  JobId id;
  Factors factors;
};

// Waiting jobs of one pass that get a reason (the first ones in queue order).
inline constexpr int kExplainedWaits = 256;
// Preemption searches per full pass.
inline constexpr int kPreemptionSearches = 8;
// A claim lapses this long after its victims should have stopped (then a new search may run).
inline constexpr Duration kClaimSlack = std::chrono::seconds(60);

struct PassInput {
  ClusterView view;                 // consumed
  std::vector<PendingJob> pending;  // any order
  std::vector<RunningJob> running;
  const UsageLedger* usage = nullptr;
  const Policy* policy = nullptr;
  TimePoint now{};
  bool full = true;
  std::vector<Reservation> claims;  // the claims of the last full pass (PassResult::reservations)
};

struct PassResult {
  std::vector<Start> starts;
  std::vector<Preemption> preemptions;
  std::vector<Wait> waits;                // the first kExplainedWaits jobs not started
  std::vector<Reservation> reservations;  // full passes only
  std::vector<QueueEntry> order;          // every pending job, highest first
};

PassResult RunPass(PassInput in);
// The same, leaving `in.view` changed (it is the pass's scratch): a caller that runs passes
// often keeps one view and copies into it, which reuses its buffers.
PassResult RunPassOn(PassInput& in);

// Marks `allocation` reserved from `from` for a waiting job (GPUs, and host CPUs/memory when
// it asks for them).
void MarkReservation(ClusterView& view, const Reservation& r);

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
int LasLevel(const Policy& policy, double service);

Factors ComputeFactors(const PendingJob& job, const Policy& policy, TimePoint now,
                       int64_t cluster_milli, FairShareTable& shares);

}  // namespace baton::sched
