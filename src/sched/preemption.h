// Preemption: which running jobs a waiting job may stop to start sooner, found within a pass.
//
// Eligible victims, preemptible (JobSpec::preemptible), in the waiting job's pool and not
// already stopping: a job of a lower priority class of the same project, or of a project
// borrowing beyond its guarantee; with least-attained-service preemption, a job of the same or
// a lower class that has had more GPU-time (a higher LAS level); and, when the waiting job's
// project is under its own guarantee, any job of another project that borrows. A job its
// project needs to stay within its guarantee is protected (else a high-priority borrower and a
// reclaiming owner would preempt each other in turn).
//
// Objective: the least GPU-time lost, counted from each victim's last checkpoint.
//   1. Per node, a lower bound on the loss of making room there: the candidates by loss per
//      GPU, the last one counted in part (the fractional cover). Nodes sorted by bound.
//   2. Per node in that order, exact: release candidates until the job fits (topology,
//      reservations of jobs ahead and all), then take back those not needed, the costliest
//      first. Stop once no remaining node's bound beats the worst plan kept.
//   3. The job's nodes are the cheapest plans (ties: fewer victims, lower node index); every
//      other project must stay at or above its guarantee after losing its victims.
// The claim reserves the freed GPUs for the job from now + policy.preempt_grace.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <vector>

#include "core/policy.h"
#include "sched/holdings.h"
#include "sched/pass.h"
#include "sched/placement.h"

namespace baton::sched {

// What a preemption search reads of the pass it runs in.
struct VictimSearch {
  const PassInput& in;
  const Policy& policy;
  TimePoint now;
  const Holdings& held;
  const std::vector<uint8_t>& stopping;  // per running job: 1 when stopping
  const std::vector<int>& levels;        // per running job, its LAS level (policy.las_preemption)
  Placer& placer;
  std::vector<std::vector<uint32_t>>& running_on_node;  // built at the first search
};

struct Claim {
  std::set<size_t> victims;  // indices into the pass's running jobs
  Reservation reservation;   // on the GPUs they give back
};

// Nothing when no set of eligible victims frees enough room within the rules.
std::optional<Claim> SearchVictims(const PendingJob& job, VictimSearch& ctx);

// Why `victim` yields to `job` (a victim SearchVictims chose).
PreemptReason WhyPreempted(const RunningJob& victim, const PendingJob& job, const Policy& policy);

}  // namespace baton::sched
