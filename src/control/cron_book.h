// Recurring jobs, as Slurm's scrontab (docs/scheduling.md): each series by its first run's id,
// with the run waiting or running, the latest run that ended and how many there were; and the
// runs that ended whose series' next run is owed (queued at the batch's end by the
// controller, controller_crons.cc). Not stored: a restore makes it again from the jobs. Owned by
// the Controller; not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "core/job.h"

namespace baton::control {

class CronBook {
 public:
  struct Series {
    JobId current;  // the run waiting or running
    JobId last{0};  // the latest run that ended; 0: none yet
    int64_t runs = 0;
  };

  // The first time `spec`'s schedule names after `after` (or at its begin, if later); none when
  // the schedule cannot be read or never comes.
  static std::optional<TimePoint> NextRunTime(const JobSpec& spec, TimePoint after);

  // Made again from `jobs` (a restore): each run counted into its series; a series whose latest
  // run was stopped is gone, and one whose latest run ended owes its next.
  void Restore(const std::map<JobId, Job>& jobs);
  // `job` (new, not yet queued) is the first run of its series: its begin is the first time its
  // schedule names (checked at submit).
  void Start(Job& job, TimePoint now);
  // A run of a series not deleted ended: its next is owed.
  void Ended(JobId run) { due_.push_back(run); }
  bool Owed() const { return !due_.empty(); }
  // The ended runs owed a next, each once.
  std::vector<JobId> TakeDue();

  Series* Find(JobId series);
  void Erase(JobId series) { series_.erase(series); }
  // Every series not deleted, by its first run's id.
  const std::map<JobId, Series>& all() const { return series_; }

 private:
  std::map<JobId, Series> series_;
  std::vector<JobId> due_;
};

}  // namespace baton::control
