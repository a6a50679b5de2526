// Recurring jobs, as Slurm's scrontab: a job whose spec has a cron schedule is a series of
// runs. Each run is a job of its own; it waits (reason schedule) until the time its schedule
// names, runs, and when it ends however it ends, the next run is queued for the next time
// after that: a run that overlaps the times it should have started at skips them, and a
// controller that was down when a run was due starts it once when it comes back. Deleting
// the schedule (or cancelling the waiting run) ends the series.
#include <algorithm>

#include "control/controller.h"
#include "core/cron.h"

namespace baton::control {

std::optional<TimePoint> Controller::NextRunTime(const JobSpec& spec, TimePoint after) {
  auto schedule = ParseCron(spec.schedule, "schedule");
  if (!schedule) return std::nullopt;
  // A begin time delays the first run: the first time named at or after it.
  if (spec.begin && *spec.begin - Duration(1) > after) after = *spec.begin - Duration(1);
  return NextCronTime(*schedule, after);
}

void Controller::StartSeries(Job& job, TimePoint now) {
  job.cron_id = job.id;
  job.spec.begin = NextRunTime(job.spec, now);  // checked at submit
  crons_[job.id] = CronSeries{.current = job.id, .runs = 1};
}

void Controller::QueueNextRuns(TimePoint now) {
  std::vector<JobId> due;
  due.swap(cron_due_);
  for (JobId id : due) {
    const Job& ended = jobs_.at(id);
    auto series = crons_.find(ended.cron_id);
    if (series == crons_.end() || series->second.current != id) continue;  // deleted meanwhile
    JobSpec spec = ended.spec;
    spec.begin.reset();
    std::optional<TimePoint> at = NextRunTime(spec, now);
    if (!at) {
      crons_.erase(series);  // cannot happen for a schedule accepted at submit
      continue;
    }
    // Dependencies and a hold were for the first run.
    spec.after.clear();
    spec.after_any.clear();
    spec.after_notok.clear();
    spec.hold = false;
    spec.begin = at;
    Job& next = NewJob(spec, ended.spec.resources, ended.user, now);
    next.cron_id = ended.cron_id;
    next.step_key = ended.step_key;  // a batch script's runs share their series' secret
    series->second.last = id;
    series->second.current = next.id;
    series->second.runs += 1;
    counters_.jobs_submitted += 1;
    next_id_dirty_ = true;
    Enqueue(next, now);
    MarkDirty(next);
  }
}

CronEntry Controller::EntryOf(JobId id, TimePoint now) const {
  const CronSeries& s = crons_.at(id);
  CronEntry e{.id = id, .runs = s.runs, .current = JobAsShown(jobs_.at(s.current), now)};
  if (s.last.value != 0) e.last = JobAsShown(jobs_.at(s.last), now);
  return e;
}

Reply Controller::Crons(const ListCrons& c, TimePoint now) const {
  Reply r;
  for (const auto& [id, series] : crons_) {
    if (!c.user.empty() && jobs_.at(series.current).user != c.user) continue;
    r.crons.push_back(EntryOf(id, now));
  }
  return r;
}

Reply Controller::Crons(const DeleteCron& c, TimePoint now) {
  auto it = crons_.find(c.id);
  if (it == crons_.end()) {
    const Job* j = FindJob(c.id);
    if (j != nullptr && j->cron_id.value != 0 && j->cron_id != c.id) {
      return ErrorReply(NotFound("job " + c.id.ToString() + " is a run of recurring job " +
                                 j->cron_id.ToString() + "; delete that"));
    }
    return ErrorReply(NotFound("no recurring job " + c.id.ToString() +
                               (j != nullptr && j->cron_id == c.id ? " (deleted before)" : "")));
  }
  Job& current = jobs_.at(it->second.current);
  if (!c.caller.admin && current.user != c.caller.user) {
    return ErrorReply(
        PermissionDenied("recurring job " + c.id.ToString() + " belongs to " + current.user));
  }
  Reply r;
  r.crons.push_back(EntryOf(c.id, now));
  crons_.erase(it);
  current.cron_stopped = true;
  MarkDirty(current);
  if (current.state == JobState::kPending || current.state == JobState::kHeld) {
    current.reason = WaitReason::kNone;
    current.reason_detail = "its schedule was deleted by " + c.caller.user;
    SetState(current, JobState::kCancelled, now);
  }
  r.crons.back().current = JobAsShown(current, now);
  return r;
}

}  // namespace baton::control
