// `baton update` (PATCH /v1/jobs/{id}), as Slurm's `scontrol update`: which fields may change
// (a waiting job's time limit, priority, name, project, pool, begin time, dependencies and
// retries; a running job's time limit and name), and the spec an update makes, checked as a
// submit checks it. Pure functions; the Controller puts the spec in place (controller_update.cc)
// and checks that a new pool's nodes can hold the job.
#pragma once

#include <map>
#include <set>
#include <string>

#include "control/budget_book.h"
#include "control/commands.h"
#include "core/job.h"
#include "core/policy.h"
#include "core/status.h"

namespace baton::control {

// Whether an update of `fields` changes only what may change while a job runs.
bool ChangesOnlyWhatRunsOn(const std::set<std::string>& fields);

// The job's spec with the update's fields, checked (the spec's own rules, its pool's time
// limits, its dependencies, a new project's budget); nothing changes.
Result<JobSpec> Patched(const Job& job, const UpdateJob& c, const Policy& policy,
                        const std::map<JobId, Job>& jobs, const BudgetBook& budgets, TimePoint now);

}  // namespace baton::control
