// What a scheduling pass is given of a job, made from its record: a waiting job's
// (sched::PendingJob) and a running job's (sched::RunningJob, and as RunningJobs keeps it),
// with the controller's account numbers and shared pool names (AccountNumbers).
#pragma once

#include <map>
#include <set>

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
// Makes again what `running` keeps of the running jobs among `changed` (the jobs a batch
// changed: every change to a job is saved, so marked): before each pass, and at a batch's end
// for what the last pass's decisions changed.
void KeepRunning(const std::set<JobId>& changed, const std::map<JobId, Job>& jobs,
                 AccountNumbers& numbers, const sched::ClusterView& view, RunningJobs& running);
// The same, brought to `now`.
sched::RunningJob RunningOf(const Job& job, AccountNumbers& numbers, const sched::ClusterView& view,
                            TimePoint now);

}  // namespace baton::control
