#include "sched/running_summary.h"

#include <algorithm>

#include "sched/ordering.h"

namespace baton::sched {

RunningSummary SummarizeRunning(const std::vector<RunningJob>& running, const Policy& policy,
                                TimePoint now) {
  RunningSummary s;
  s.releases.reserve(running.size());
  s.stopping.resize(running.size());
  if (policy.las_preemption) s.levels.reserve(running.size());
  for (size_t i = 0; i < running.size(); ++i) {
    const RunningJob& r = running[i];
    TimePoint end =
        r.stopping ? std::min(r.expected_end, now + policy.preempt_grace) : r.expected_end;
    s.Add(Release{end, r.allocation, r.resources, r.user});
    s.stopping[i] = r.stopping;
    if (policy.las_preemption) s.levels.push_back(LasLevel(policy, r.service));
    if (r.stopping) continue;
    s.lowest_class = std::min(s.lowest_class, static_cast<int>(r.priority));
    // Only a job LAS may still preempt is a victim it could find.
    if (policy.las_preemption && LasBudgetLeft(policy, r))
      s.highest_level = std::max(s.highest_level, s.levels.back());
  }
  return s;
}

}  // namespace baton::sched
