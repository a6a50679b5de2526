// Reservations of a scheduling pass (scheduler.cc): when and where a waiting job will fit as
// running jobs end (the shadow, for backfill), and the node a job holds when nothing says
// when it could start. Internal to sched/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sched/pass.h"
#include "sched/placement.h"

namespace baton::sched {

// A running job's GPUs coming free: at its start + time limit (kNever without one).
struct Release {
  TimePoint at;
  const std::vector<NodeAllocation>* allocation;
  const Resources* resources;
  const std::string* user = nullptr;  // the job's (GpuSlot::sharer)
  std::string_view User() const { return user != nullptr ? std::string_view(*user) : ""; }
};

// The earliest time and GPUs at which `r` fits as `releases` (sorted by time) happen, with
// the GPUs other reservations hold taken out; nullopt if none is found within the bounds.
// Works on the pass's own placer and leaves it as it was.
std::optional<Reservation> Shadow(Placer& placer, const std::vector<Release>& releases,
                                  const Resources& r, const std::string& pool, TimePoint now,
                                  NodeLimits limits = {});

// The node to hold for `r` when no release time says when it could start (running jobs
// without time limits); nullopt for gangs, fractions and one-GPU jobs (MayHoldUntimed), or
// when no node could ever hold it. A pass's reservations only narrow what it could hold: once
// nullopt, nullopt for the rest of the pass.
bool MayHoldUntimed(const Resources& r);
std::optional<Reservation> Untimed(Placer& placer, const Resources& r, const std::string& pool,
                                   TimePoint now, NodeLimits limits = {});

// The claims of earlier passes that stand in this one, by job id (a full pass's first step):
// those of jobs still waiting whose victims should have stopped no more than kClaimSlack ago
// (else a new search may run). Each is marked in `in.view`, holding the GPUs its victims give
// back for its claimer. A pass that is not full takes none.
std::unordered_map<int64_t, const Reservation*> StandingClaims(PassInput& in);

}  // namespace baton::sched
