#include "control/attempt_utilization.h"

namespace baton::control {

void AttemptUtilization::Add(JobId id, double mean_pct) {
  Readings& r = attempts_[id.value];
  r.sum += mean_pct;
  r.samples += 1;
}

void AttemptUtilization::Observe(const NodeRecord& node, const std::vector<GpuSample>& samples,
                                 const RunningJobs& running) {
  if (samples.empty()) return;
  // The node's own jobs: every node reports every 2 s, so a walk of all running jobs here
  // would cost nodes x jobs per interval.
  for (JobId id : node.running) {
    const Job* job = running.at(id);
    double sum = 0;
    int n = 0;
    for (const NodeAllocation& part : job->allocation) {
      if (part.node != node.info.name || !part.started || part.ended) continue;
      for (int g : part.gpus) {
        for (const GpuSample& s : samples) {
          if (s.index == g) {
            sum += s.utilization_pct;
            ++n;
          }
        }
      }
    }
    if (n == 0) continue;
    Add(id, sum / n);
  }
}

void AttemptUtilization::AddTo(JobId id, double* sum, int64_t* samples) const {
  if (auto it = attempts_.find(id.value); it != attempts_.end()) {
    *sum += it->second.sum;
    *samples += it->second.samples;
  }
}

void AttemptUtilization::Close(Job& job) {
  auto it = attempts_.find(job.id.value);
  if (it == attempts_.end()) return;
  job.utilization_sum += it->second.sum;
  job.utilization_samples += it->second.samples;
  attempts_.erase(it);
}

}  // namespace baton::control
