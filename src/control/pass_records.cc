#include "control/pass_records.h"

#include "sched/job_queue.h"

namespace baton::control {

sched::PendingJob PendingOf(const Job& job, AccountNumbers& numbers) {
  // The queue's plain record, with the account number and the shared pool and project names.
  sched::PendingJob p = sched::JobQueue::PendingRecord(job);
  p.pool = numbers.PoolOf(job);
  p.project = numbers.ProjectOf(job);
  p.account = numbers.AccountOf(job);
  return p;
}

RunningJobs::Kept KeptOf(const Job& job, AccountNumbers& numbers, const sched::ClusterView& view) {
  const TimePoint start = job.started_at.value_or(TimePoint{});  // RunningJobs::AtTime if none
  const Duration limit = job.spec.time_limit;
  return RunningJobs::Kept{
      .record =
          sched::RunningJob{
              .id = job.id,
              .resources = &job.spec.resources,
              .allocation = &job.allocation,
              .priority = job.spec.priority,
              .project = numbers.ProjectOf(job),
              .user = &job.user,
              .pool = numbers.PoolOf(job),
              .started = start,
              .expected_end = limit.count() > 0 ? start + limit : sched::kNever,
              .last_checkpoint = job.last_checkpoint.value_or(start),
              .stopping = job.stop_requested || job.preempt_requested,
              .service = 0,
              .account = numbers.AccountOf(job),
              .first_node = job.allocation.empty() ? -1 : view.IndexOf(job.allocation.front().node),
              .preemptible = Preemptible(job.spec),
              .preemptions = job.preemptions},
      .clock =
          RunningJobs::Clock{.gpu_seconds = job.gpu_seconds,
                             .gpus = static_cast<double>(job.spec.resources.milli_gpus) / 1000.0,
                             .time_limit = limit,
                             .started = job.started_at.has_value(),
                             .checkpointed = job.last_checkpoint.has_value()}};
}

void KeepRunning(const std::set<JobId>& changed, const std::map<JobId, Job>& jobs,
                 AccountNumbers& numbers, const sched::ClusterView& view, RunningJobs& running) {
  for (JobId id : changed) {
    if (const Job& j = jobs.at(id); j.state == JobState::kRunning)
      running.Keep(id, KeptOf(j, numbers, view));
  }
}

sched::RunningJob RunningOf(const Job& job, AccountNumbers& numbers, const sched::ClusterView& view,
                            TimePoint now) {
  RunningJobs::Kept kept = KeptOf(job, numbers, view);
  RunningJobs::AtTime(kept.record, kept.clock, now);
  return kept.record;
}

}  // namespace baton::control
