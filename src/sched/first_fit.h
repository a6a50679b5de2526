// The first scheduling policy: jobs in queue order (priority class, then submit order), each
// placed on the first node(s) where it fits whole; nothing is reserved, nothing preempted.
//
// Objective: start as many jobs as possible now, never oversubscribing a GPU.
// Placement: one node for single-node jobs; for N nodes, the first N nodes that each have
//   gpus/N whole GPUs free, allocated together or not at all (gang).
// Fractions (< 1 GPU): the first GPU whose free share and free memory cover the request,
//   preferring a GPU already shared so whole GPUs stay free.
// Tie-breaks: node order as registered, GPU index ascending.
// Cost: a pass stops examining GPU jobs once no GPU capacity is left.
#pragma once

#include <string>
#include <vector>

#include "core/job.h"
#include "sched/cluster_view.h"

namespace baton::sched {

enum class Fit { kPlaced, kNotNow, kNever };

struct Placement {
  Fit fit = Fit::kNotNow;
  std::vector<NodeAllocation> allocation;  // when placed
  std::string detail;                      // when not: why, for the researcher
};

// Tries to place `r` in `view`. On success the allocation is subtracted from `view`.
Placement PlaceFirstFit(ClusterView& view, const Resources& r);

struct Candidate {
  JobId id;
  const Resources* resources;  // borrowed; must outlive the pass
};

struct Start {
  JobId id;
  std::vector<NodeAllocation> allocation;
};

struct Wait {
  JobId id;
  std::string reason;  // "resources"
  std::string detail;
};

// Waiting jobs of one pass that get a reason (the first ones in queue order).
inline constexpr int kExplainedWaits = 256;

struct PassResult {
  std::vector<Start> starts;
  std::vector<Wait> waits;  // the first kExplainedWaits candidates not started
};

// One pass over `ordered` (highest first) against `view`, which it consumes.
PassResult RunFirstFitPass(ClusterView view, const std::vector<Candidate>& ordered);

}  // namespace baton::sched
