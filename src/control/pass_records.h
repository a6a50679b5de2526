// What a scheduling pass is given of a job, made from its record: a waiting job's
// (sched::PendingJob) and a running job's (sched::RunningJob, and as RunningJobs keeps it),
// with the controller's account numbers and shared pool names (AccountNumbers).
#pragma once

#include "control/account_numbers.h"
#include "control/running_jobs.h"
#include "core/job.h"
#include "sched/cluster_view.h"
#include "sched/pass.h"

namespace baton::control {

sched::PendingJob PendingOf(const Job& job, AccountNumbers& numbers);
// The running job's record with its time-dependent parts as of the job's start (RunningJobs
// brings them to a pass's time); its nodes must be in `view` (RunningJob::first_node).
RunningJobs::Kept KeptOf(const Job& job, AccountNumbers& numbers, const sched::ClusterView& view);
// The same, brought to `now`.
sched::RunningJob RunningOf(const Job& job, AccountNumbers& numbers, const sched::ClusterView& view,
                            TimePoint now);

}  // namespace baton::control
