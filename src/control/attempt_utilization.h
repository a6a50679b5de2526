// What the GPUs of each running attempt were doing: per job, the sum of its readings' mean
// utilisation and their count, until the attempt ends and they join the job's own
// (Job::utilization_sum, utilization_samples; GET /v1/jobs/{id}/metrics shows their mean).
// Not stored: a restart loses a running attempt's readings so far. Owned by the Controller;
// not thread-safe.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "control/node_table.h"
#include "control/running_jobs.h"
#include "core/job.h"

namespace baton::control {

class AttemptUtilization {
 public:
  // One reading of the running attempt of job `id`: the mean utilisation of its GPUs on a node.
  void Add(JobId id, double mean_pct);
  // A report's GPU readings of `node`: one reading for each of the node's running jobs with a
  // started part there, the mean of its GPUs' (a job with none of them read gets none).
  void Observe(const NodeRecord& node, const std::vector<GpuSample>& samples,
               const RunningJobs& running);
  // The attempt's readings so far added to `sum` and `samples` (a job's, for a read-out).
  void AddTo(JobId id, double* sum, int64_t* samples) const;
  // The attempt ended: its readings join the job's, and are forgotten here.
  void Close(Job& job);

  size_t size() const { return attempts_.size(); }

 private:
  struct Readings {
    double sum = 0;
    int64_t samples = 0;
  };
  std::unordered_map<int64_t, Readings> attempts_;  // by job id
};

}  // namespace baton::control
