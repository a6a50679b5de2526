// The data of one scheduling pass (sched/scheduler.h): the jobs it is given, borrowed from
// their owner for the pass, and what it decides.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/job.h"
#include "core/policy.h"
#include "sched/cluster_view.h"

namespace baton::sched {

class UsageLedger;
class JobQueue;

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
  // The (project, user) pair as a number, the same for the same pair throughout the pass's
  // input (pending and running); -1: none given, the names are compared.
  int32_t account = -1;
  // It may be preempted (JobSpec::preemptible); not: it never goes to a spot node, and, where
  // the policy sets guarantees, starts only within its project's (LimitReason).
  bool preemptible = true;
  NodeLimits Limits() const {
    return NodeLimits{.root = user != nullptr && *user == "root",
                      .no_spot = !preemptible,
                      .avoid = avoid,
                      .user = user != nullptr ? std::string_view(*user) : std::string_view()};
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
  int32_t account = -1;             // as PendingJob::account
  // The index in the pass's view (ClusterView::nodes) of its first part's node, where the one
  // who made the record knows it (the controller: nodes keep their place in its view); -1:
  // looked up by name.
  int32_t first_node = -1;
  bool preemptible = true;  // false: never a victim (JobSpec::preemptible)
  int32_t preemptions = 0;  // times it was preempted before (Policy::las_preemption_budget)
  std::string_view User() const { return user != nullptr ? std::string_view(*user) : ""; }
  bool operator==(const RunningJob&) const = default;
};

using Factors = QueueFactors;

struct Start {
  JobId id;
  std::vector<NodeAllocation> allocation;
  uint32_t index = 0;  // into PassInput::pending
};

// Many waiting jobs share their words ("waiting for 8 GPUs; 3 GPUs free in pool default"), and
// the part that differs from job to job (the jobs ahead, when it may start) is kept as numbers:
// a pass writes each sentence once, and QueueWords (core/job.h) says the rest when read.
struct Wait {
  JobId id;
  WaitReason reason = WaitReason::kResources;  // kResources, kQuota or kPriority
  uint32_t text = 0;                           // PassResult::texts[text]
  int ahead = 0;  // jobs before it in the pass's order that did not start
  std::optional<TimePoint> estimated_start;
  uint32_t index = 0;  // into PassInput::pending
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

// Whether two jobs' pools are one: by address first, as the controller gives every job of a
// pool the same string.
inline bool SamePool(const std::string* a, const std::string* b) { return a == b || *a == *b; }

struct QueueEntry {
  JobId id;
  Factors factors;
};

// Waiting jobs of one pass that get a reason (the first ones in queue order), unless the
// caller asks for fewer (PassInput::explained).
inline constexpr int kExplainedWaits = 256;
// ... and of those, how many first say which part of the request is short now (Shortfall).
inline constexpr int kDetailedWaits = 32;
// Preemption searches per full pass.
inline constexpr int kPreemptionSearches = 8;
// A claim lapses this long after its victims should have stopped (then a new search may run).
inline constexpr Duration kClaimSlack = std::chrono::seconds(60);

// What the order of a pass given the queue (PassInput::queue) is made of past the jobs it
// walked (JobQueue::OrderedHead): the size factor's whole, and each group's fair-share factor.
struct OrderRest {
  int64_t cluster_milli = 0;
  // By JobQueue group; NaN: none of its jobs waited; kUnweighed (ordering.h): the policy does
  // not weigh fair share.
  std::vector<double> fairshare;
};

struct PassInput {
  ClusterView view;                 // consumed
  std::vector<PendingJob> pending;  // any order
  // Instead of `pending` (left empty): the queue itself, whose groups are merged in order as
  // far as the pass walks (JobQueue). The jobs walked are added to `pending` as it goes, so
  // PassResult's indices are into it as ever.
  const JobQueue* queue = nullptr;
  std::vector<RunningJob> running;
  const UsageLedger* usage = nullptr;
  const Policy* policy = nullptr;
  TimePoint now{};
  bool full = true;
  std::vector<Reservation> claims;  // the claims of the last full pass (PassResult::reservations)
  // `pending` is only the head of a longer queue, in the pass's own order (strict order by
  // class and submit time): the pass says when it needed more (PassResult::wanted_more).
  bool partial = false;
  // Strict order, a pass given only arrivals (JobQueue's quiet strict pass): the job of an
  // earlier full pass that still waits ahead of them all, and how many waiting jobs are ahead
  // of the first of them. Each arrival waits behind it, as in a full pass.
  std::optional<JobId> blocker;
  int ahead = 0;
  // How many waiting jobs get a reason (PassResult::waits), the first in order. Fewer words,
  // the same decisions: past them the walk stops as soon as every job left would only be
  // counted. The simulator, whose reports hold no reasons, asks for none in its full passes.
  int explained = kExplainedWaits;
};

struct PassResult {
  std::vector<Start> starts;
  std::vector<Preemption> preemptions;
  std::vector<Wait> waits;                // the first PassInput::explained jobs not started
  std::vector<std::string> texts;         // the waits' words
  std::vector<Reservation> reservations;  // full passes only
  // Every pending job: the first `sorted` highest first, the rest in no order (a pass orders
  // the queue only as far as it walks it; JobQueue orders the rest when asked).
  std::vector<QueueEntry> order;
  size_t sorted = 0;
  OrderRest rest;  // given the queue: `order` is the jobs walked, and the rest is made of this
  // With PassInput::partial: the walk reached the end of the jobs it was given while a job
  // after them could still have been placed or explained. The caller runs it again with more.
  bool wanted_more = false;
  // Strict order (no backfill): the first job that waited for resources, which every job
  // after it waits behind (an index into PassInput::pending); none when none did.
  std::optional<uint32_t> blocker;

  // A wait in the words a researcher reads (Job::reason_detail followed by QueueWords).
  std::string Detail(const Wait& w, TimePoint now) const;
};

}  // namespace baton::sched
