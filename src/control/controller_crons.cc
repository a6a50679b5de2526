// Recurring jobs, as Slurm's scrontab: a job whose spec has a cron schedule is a series of
// runs. Each run is a job of its own; it waits (reason schedule) until the time its schedule
// names, runs, and when it ends however it ends, the next run is queued for the next time
// after that: a run that overlaps the times it should have started at skips them, and a
// controller that was down when a run was due starts it once when it comes back. Deleting
// the schedule (or cancelling the waiting run) ends the series.
#include <algorithm>

#include "control/admission.h"
#include "control/controller.h"

namespace baton::control {

void Controller::QueueNextRuns(TimePoint now) {
  for (JobId id : crons_.TakeDue()) {
    const Job& ended = jobs_.at(id);
    CronBook::Series* series = crons_.Find(ended.cron_id);
    if (series == nullptr || series->current != id) continue;  // deleted meanwhile
    JobSpec spec = ended.spec;
    spec.begin.reset();
    std::optional<TimePoint> at = CronBook::NextRunTime(spec, now);
    if (!at) {
      crons_.Erase(ended.cron_id);  // cannot happen for a schedule accepted at submit
      continue;
    }
    // Dependencies and a hold were for the first run.
    spec.after.clear();
    spec.after_any.clear();
    spec.after_notok.clear();
    spec.hold = false;
    spec.begin = at;
    Job& next = Add(DraftJob(spec, ended.spec.resources, ended.user, options_.policy, now), now);
    next.cron_id = ended.cron_id;
    next.step_key = ended.step_key;  // a batch script's runs share their series' secret
    series->last = id;
    series->current = next.id;
    series->runs += 1;
    counters_.jobs_submitted += 1;
    changed_.next_id = true;
    Enqueue(next, now);
    MarkDirty(next);
  }
}

Result<CronShown> Controller::Crons(const DeleteCron& c, TimePoint now) {
  CronBook::Series* series = crons_.Find(c.id);
  if (series == nullptr) {
    const Job* j = FindJob(c.id);
    if (j != nullptr && j->cron_id.value != 0 && j->cron_id != c.id) {
      return Err(NotFound("job " + c.id.ToString() + " is a run of recurring job " +
                          j->cron_id.ToString() + "; delete that"));
    }
    return Err(NotFound("no recurring job " + c.id.ToString() +
                        (j != nullptr && j->cron_id == c.id ? " (deleted before)" : "")));
  }
  Job& current = jobs_.at(series->current);
  if (!c.caller.admin && current.user != c.caller.user) {
    return Err(
        PermissionDenied("recurring job " + c.id.ToString() + " belongs to " + current.user));
  }
  CronShown r{Read().Cron(c.id, now)};
  crons_.Erase(c.id);
  current.cron_stopped = true;
  MarkDirty(current);
  if (current.state == JobState::kPending || current.state == JobState::kHeld) {
    current.reason = WaitReason::kNone;
    current.reason_detail = "its schedule was deleted by " + c.caller.user;
    SetState(current, JobState::kCancelled, now);
  }
  r.cron.current = JobAsShown(current, now);
  return r;
}

}  // namespace baton::control
