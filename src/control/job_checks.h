// What every command that names jobs checks against the jobs the controller holds: that the job
// a caller names exists and is the caller's to act on, and that the jobs a spec waits for exist
// (and are not the job itself). Pure functions; the words are the API's.
#pragma once

#include <map>

#include "control/commands.h"
#include "core/job.h"
#include "core/status.h"

namespace baton::control {

// Task `array_index` of array `id` (with array_index < 0, job `id` itself) as FindJob finds it,
// when `caller` may act on it (its user, or an admin); else NotFound or PermissionDenied.
Result<const Job*> FindOwned(const std::map<JobId, Job>& jobs, JobId id, int array_index,
                             const Caller& caller);

// Whether every job `spec` waits for (after, after_any, after_notok) exists, and, for the spec
// of a job already made (`self`), is not that job or its array.
Status CheckDependencies(const std::map<JobId, Job>& jobs, const JobSpec& spec,
                         const Job* self = nullptr);

}  // namespace baton::control
