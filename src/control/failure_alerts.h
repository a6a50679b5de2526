// The job_failed alerts of jobs as they end: one for each failed job; for an array, the first
// failed task's, then, once all its tasks have ended, one line saying how many failed (a sweep
// of 1,000 tasks that all fail raises two alerts, not 1,000). Not kept across restarts: an
// array still failing after one is alerted again. Owned by the Controller; not thread-safe.
#pragma once

#include <functional>
#include <map>
#include <optional>

#include "core/event.h"
#include "core/job.h"

namespace baton::control {

class FailureAlerts {
 public:
  // An array's tasks: how many it has, and how many of them have ended.
  struct Tasks {
    int total = 0;
    int ended = 0;
  };

  // The tasks of `job`'s array: as many as its indices (a submit may still be making them),
  // else those made; and how many of them have ended.
  static Tasks ArrayTasks(const Job& job, const std::map<JobId, Job>& jobs);

  // `job` ended in state `to`: the alert to raise, if any. `tasks` is asked only at an array's
  // first failed task (the task itself counted as ended).
  std::optional<ClusterEvent> Ended(const Job& job, JobState to,
                                    const std::function<Tasks()>& tasks);

  // Arrays with a failure whose other tasks have not all ended.
  size_t open_arrays() const { return arrays_.size(); }

 private:
  struct Array {
    int failed = 0;  // since the first (alerted)
    int left = 0;    // tasks not ended yet
    int total = 0;
  };
  std::map<JobId, Array> arrays_;
};

}  // namespace baton::control
