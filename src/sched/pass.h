// The data of one scheduling pass (sched/scheduler.h): the jobs it is given, borrowed from
// their owner for the pass, and what it decides.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/job.h"
#include "core/policy.h"
#include "sched/cluster_view.h"

namespace baton::sched {

class UsageLedger;

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
  const std::vector<std::string>* avoid = nullptr;  // nodes where it could not start
  NodeLimits Limits() const {
    return NodeLimits{.root = user != nullptr && *user == "root", .avoid = avoid};
  }
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
  WaitReason reason = WaitReason::kResources;  // kResources, kQuota or kPriority
  std::string detail;
  std::optional<TimePoint> estimated_start;
};

struct Preemption {
  JobId victim;
  JobId for_job;
  PreemptReason reason = PreemptReason::kPriority;
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
// ... and of those, how many first say which part of the request is short now (Shortfall).
inline constexpr int kDetailedWaits = 32;
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

}  // namespace baton::sched
