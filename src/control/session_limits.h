// An interactive pool's limits on sessions (`baton run` jobs), judged at submit: how long one
// may run, and how many a user may have waiting or running at once (PoolPolicy). A pure
// function of the jobs the controller holds.
#pragma once

#include <map>
#include <string>

#include "core/job.h"
#include "core/policy.h"
#include "core/status.h"

namespace baton::control {

// Whether `user` may submit the session `spec` to `pool`: OK for a batch job or a pool that is
// not interactive; else why not (a time limit past the pool's, or as many open sessions as it
// allows, named).
Status AdmitSession(const std::map<JobId, Job>& jobs, const JobSpec& spec, const PoolPolicy& pool,
                    const std::string& user);

}  // namespace baton::control
