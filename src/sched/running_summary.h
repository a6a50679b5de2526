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
  // The releases that say when (a time limit, or the grace of a job being stopped), in the
  // running jobs' order, then those the pass adds (its starts with a time limit, its victims).
  // A job with no time limit gives its GPUs back at no known time and has none here: most jobs
  // of most clusters, and nothing a reservation can count on.
  std::vector<Release> releases;
  std::vector<uint8_t> stopping;  // per running job: 1 when stopping (bytes, not bits: read often)
  // Per running job, its LAS level (policy.las_preemption only): made by Levels, at a pass's
  // first victim search (most passes make none).
  std::vector<int> levels;
  // Of the jobs not stopping: the lowest priority class (above kCritical when none runs) and
  // the most served LAS level (-1 when none, or no LAS preemption).
  int lowest_class = static_cast<int>(Priority::kCritical) + 1;
  int highest_level = -1;
  int64_t timed_milli = 0;  // the GPUs `releases` give back, in milli-GPUs

  // `levels`, made at the first call.
  const std::vector<int>& Levels(const std::vector<RunningJob>& running, const Policy& policy);
  // A release the pass adds: a job it starts, ending at `at` (none when that is kNever).
  void Add(Release release) {
    if (release.at == kNever) return;
    timed_milli += release.resources->milli_gpus;
    releases.push_back(release);
  }
  // Running job `x` is stopped for a preemptor: its GPUs are back by `at`, or by its own end
  // if that is sooner.
  void BringForward(const RunningJob& x, TimePoint at) {
    for (Release& rel : releases) {
      if (rel.allocation != x.allocation) continue;
      rel.at = std::min(rel.at, at);
      return;
    }
    Add(Release{at, x.allocation, x.resources, x.user});
  }
};

RunningSummary SummarizeRunning(const std::vector<RunningJob>& running, const Policy& policy,
                                TimePoint now);

}  // namespace baton::sched
