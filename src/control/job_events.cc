#include "control/job_events.h"

#include <algorithm>

namespace baton::control {

bool NoteMetric(Job& job, const JobEvent& e, TimePoint now) {
  if (job.spec.best_metric.empty()) return false;
  MetricPoint p{
      .value = e.value, .step = e.step, .checkpoint = e.message, .at = std::min(e.at, now)};
  const Boxed<MetricPoint>& best = job.metric_best;
  if (!best || (job.spec.best_max ? p.value > best->value : p.value < best->value))
    job.metric_best = p;
  job.metric_last = std::move(p);
  return true;
}

void NoteCheckpoint(Job& job, const JobEvent& e, TimePoint now) {
  job.last_checkpoint = std::max(job.last_checkpoint.value_or(TimePoint{}), std::min(e.at, now));
}

}  // namespace baton::control
