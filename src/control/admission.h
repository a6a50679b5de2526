// What a submitted spec must meet, judged at submit: its pool's limits (the longest time limit,
// GPUs per job) and the cluster's on output kept, and an interactive pool's limits on sessions
// (`baton run` jobs: how long one may run, how many a user may have waiting or running at
// once); and the new job's record a spec makes. Pure functions of the policy and the jobs the
// controller holds. (Its dependencies are job_checks.h's; its budget the Ledgers'; whether any
// nodes can hold it the NodeDesk's.)
#pragma once

#include <map>
#include <string>

#include "core/job.h"
#include "core/policy.h"
#include "core/status.h"
#include "core/time.h"

namespace baton::control {

// The time limit a job of `spec` gets in `pool` when it names none: an interactive pool's
// session time limit for a session, else the pool's default (0: none).
Duration DefaultTimeLimit(const JobSpec& spec, const PoolPolicy& pool);

// Whether `spec` is within the output the cluster keeps of a job and, in a pool `policy`
// configures, the pool's longest time limit and GPUs per job; InvalidArgument naming the one it
// passes.
Status AdmitToPool(const JobSpec& spec, const Policy& policy);

// Whether a job of `spec` that is not preemptible can ever start: where the policy sets
// guarantees, it runs within its project's (sched::LimitReason), so it may not ask for more;
// InvalidArgument saying so, and that --preemptible lets it use idle GPUs beyond.
Status AdmitNotPreemptible(const JobSpec& spec, const Policy& policy);

// Whether `user` may submit the session `spec` to `pool`: OK for a batch job or a pool that is
// not interactive; else why not (a time limit past the pool's, or as many open sessions as it
// allows, named).
Status AdmitSession(const std::map<JobId, Job>& jobs, const JobSpec& spec, const PoolPolicy& pool,
                    const std::string& user);

// A new job of `spec` as a submit by `user` at `now` makes it, before it has an id: its request
// `resources` as it will run, its pool's default time limit when it names none.
Job DraftJob(const JobSpec& spec, const Resources& resources, const std::string& user,
             const Policy& policy, TimePoint now);

}  // namespace baton::control
