// A pass's first step (scheduler.cc): the running jobs as the pass sees them. When each gives
// its GPUs back (its time limit, or the preemption grace for one already stopping), which are
// stopping, and what a waiting job must outrank to preempt one of them. The pass goes on to
// add a release for each job it starts and to move those of the victims it stops.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/policy.h"
#include "sched/pass.h"
#include "sched/reservations.h"

namespace baton::sched {

struct RunningSummary {
  std::vector<Release> releases;  // per running job, in order; then the pass's starts
  std::vector<uint8_t> stopping;  // per running job: 1 when stopping (bytes, not bits: read often)
  // Per running job, its LAS level (policy.las_preemption only): made by Levels, at a pass's
  // first victim search (most passes make none).
  std::vector<int> levels;
  // Of the jobs not stopping: the lowest priority class (above kCritical when none runs) and
  // the most served LAS level (-1 when none, or no LAS preemption).
  int lowest_class = static_cast<int>(Priority::kCritical) + 1;
  int highest_level = -1;
  int timed_releases = 0;   // releases that say when (kNever does not)
  int64_t timed_milli = 0;  // ... and the GPUs they give back, in milli-GPUs

  // `levels`, made at the first call.
  const std::vector<int>& Levels(const std::vector<RunningJob>& running, const Policy& policy);
  // A release the pass adds: a job it starts, ending at `at` (kNever without a time limit).
  void Add(Release release) {
    CountTimed(release);
    releases.push_back(release);
  }
  // Counts `release` in timed_releases and timed_milli when it says when.
  void CountTimed(const Release& release) {
    timed_releases += release.at != kNever ? 1 : 0;
    timed_milli += release.at != kNever ? release.resources->milli_gpus : 0;
  }
  // A release brought forward to `at` (its job is stopped for a preemptor).
  void BringForward(Release& release, TimePoint at) {
    if (release.at == kNever && at != kNever) {
      timed_releases += 1;
      timed_milli += release.resources->milli_gpus;
    }
    release.at = std::min(release.at, at);
  }
};

RunningSummary SummarizeRunning(const std::vector<RunningJob>& running, const Policy& policy,
                                TimePoint now);

}  // namespace baton::sched
