#include "sched/running_summary.h"

#include <algorithm>

#include "sched/ordering.h"

namespace baton::sched {

RunningSummary SummarizeRunning(const std::vector<RunningJob>& running, const Policy& policy,
                                TimePoint now) {
  RunningSummary s;
  s.stopping.resize(running.size());
  // The most served job LAS may still preempt (only such a job is a victim it could find): the
  // highest level is its level, the levels rising with service.
  double most_served = -1;
  for (size_t i = 0; i < running.size(); ++i) {
    const RunningJob& r = running[i];
    TimePoint end =
        r.stopping ? std::min(r.expected_end, now + policy.preempt_grace) : r.expected_end;
    s.Add(Release{end, r.allocation, r.resources, r.user});  // none when it says no time
    s.stopping[i] = r.stopping ? 1 : 0;
    if (r.stopping) continue;
    s.lowest_class = std::min(s.lowest_class, static_cast<int>(r.priority));
    if (policy.las_preemption && LasBudgetLeft(policy, r))
      most_served = std::max(most_served, r.service);
  }
  if (most_served >= 0) s.highest_level = LasLevel(policy, most_served);
  return s;
}

const std::vector<int>& RunningSummary::Levels(const std::vector<RunningJob>& running,
                                               const Policy& policy) {
  if (!policy.las_preemption || levels.size() == running.size()) return levels;
  levels.clear();
  levels.reserve(running.size());
  for (const RunningJob& r : running) levels.push_back(LasLevel(policy, r.service));
  return levels;
}

}  // namespace baton::sched
