// LLM-aware sizing at submit (`baton submit --model`): a job that names the model it serves or
// trains gets the GPUs and GPU memory it does not give from core/sizing.h's estimate, on the
// GPU models its pool's nodes have.
#pragma once

#include <string>
#include <vector>

#include "core/job.h"
#include "core/policy.h"
#include "core/status.h"
#include "sched/feasibility.h"

namespace baton::control {

// Sizes the specs of a submit that name a model (JobSpec::model): `own` becomes their copy,
// sized, and `sized` says how each was (both left empty when none names one). The models are
// the catalog's (`policy`) and the built-in ones; `known`: the cluster's nodes
// (FeasibilityCache::Known). An error names the spec (jobs[i]) when there are several.
Status SizeModels(const std::vector<JobSpec>& specs, const Policy& policy,
                  const std::vector<sched::KnownNode>& known, std::vector<JobSpec>* own,
                  std::vector<std::string>* sized);

}  // namespace baton::control
