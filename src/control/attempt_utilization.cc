#include "control/attempt_utilization.h"

namespace baton::control {

void AttemptUtilization::Add(JobId id, double mean_pct) {
  Readings& r = attempts_[id.value];
  r.sum += mean_pct;
  r.samples += 1;
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
