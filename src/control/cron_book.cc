#include "control/cron_book.h"

#include "core/cron.h"

namespace baton::control {

std::optional<TimePoint> CronBook::NextRunTime(const JobSpec& spec, TimePoint after) {
  auto schedule = ParseCron(spec.schedule, "schedule");
  if (!schedule) return std::nullopt;
  // A begin time delays the first run: the first time named at or after it.
  if (spec.begin && *spec.begin - Duration(1) > after) after = *spec.begin - Duration(1);
  return NextCronTime(*schedule, after);
}

void CronBook::Restore(const std::map<JobId, Job>& jobs) {
  for (const auto& [id, j] : jobs) {
    if (j.cron_id.value == 0) continue;
    Series& series = series_[j.cron_id];
    series.runs += 1;
    series.current = id;
    if (IsTerminal(j.state)) series.last = id;
  }
  for (auto it = series_.begin(); it != series_.end();) {
    const Job& latest = jobs.at(it->second.current);
    if (latest.cron_stopped) {
      it = series_.erase(it);
      continue;
    }
    // Ended in the batch before a stop, its next not yet queued.
    if (IsTerminal(latest.state)) due_.push_back(latest.id);
    ++it;
  }
}

void CronBook::Start(Job& job, TimePoint now) {
  job.cron_id = job.id;
  job.spec.begin = NextRunTime(job.spec, now);  // checked at submit
  series_[job.id] = Series{.current = job.id, .runs = 1};
}

std::vector<JobId> CronBook::TakeDue() {
  std::vector<JobId> due;
  due.swap(due_);
  return due;
}

CronBook::Series* CronBook::Find(JobId series) {
  auto it = series_.find(series);
  return it == series_.end() ? nullptr : &it->second;
}

}  // namespace baton::control
