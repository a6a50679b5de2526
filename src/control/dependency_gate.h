// What keeps a pending job out of the queue, and what lets it in (docs/scheduling.md,
// "Dependencies"): its dependencies (after-ok, after-any, after-notok; an array's id standing
// for all its tasks), the singleton rule, its begin time (a recurring job's next run), and its
// array's throttle. It judges a job against the jobs it names, and keeps the blocked jobs with
// the indexes that say which of them may go when time passes or a job ends; the controller
// moves jobs between it and the queue (controller_waiting.cc). Owned by the Controller; not
// thread-safe.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/job.h"

namespace baton::control {

class DependencyGate {
 public:
  using Jobs = std::map<JobId, Job>;

  // Why a pending job may not enter the queue; reason kNone: nothing. `never`: a dependency
  // can no longer be met (the job fails, saying so).
  struct Waiting {
    WaitReason reason = WaitReason::kNone;
    bool never = false;
    std::string detail;
  };
  // The dependencies first (after-ok, after-any, after-notok), then the singleton rule, then
  // the begin time: the first that holds `job` back at `now` says why. `jobs`: every job, by
  // id (ids are in submit order).
  static Waiting Judge(const Job& job, const Jobs& jobs, TimePoint now);

  // A job array's throttle (`%N`): its tasks hold a place while queued or running; the others
  // wait, in index order, with reason array_limit.
  struct ArrayGate {
    int limit = 0;
    int active = 0;
    std::set<JobId> waiting;
  };
  // The throttle of `job`'s array (made at the first question); null: not a task of a
  // throttled array.
  ArrayGate* GateOf(const Job& job);
  // Forgets an array's throttle once no task holds or waits for a place.
  void DropGateIfIdle(JobId array);

  // Holds `job` back: for `w` (indexed by its begin time and singleton key), or, with
  // `w.reason` kNone, behind its array's throttle (its gate's waiting list).
  void Block(const Job& job, const Waiting& w);
  // Takes `job` out of the blocked set, and of the indexes too (`indexes`); false when it was
  // not blocked.
  bool Unblock(const Job& job, bool indexes = true);
  bool Blocked(JobId id) const { return blocked_.count(id) > 0; }
  // The blocked jobs, by id.
  const std::set<JobId>& blocked() const { return blocked_; }

  // The blocked jobs that may go now that `ended` has ended: those that name it (or its array)
  // and then the singletons of its name and user, earliest first.
  std::vector<JobId> AfterEnd(const Job& ended, const Jobs& jobs) const;
  // The blocked jobs whose begin time has come, by time.
  std::vector<JobId> Due(TimePoint now) const;
  // Whether any blocked job waits for a time (OnTick looks only then).
  bool WaitsForTime() const { return !begins_.empty(); }

 private:
  static std::string SingletonKey(const Job& job) { return job.user + '\n' + job.spec.name; }

  std::set<JobId> blocked_;  // pending jobs waiting for dependencies, a time or their array
  std::multimap<TimePoint, JobId> begins_;        // blocked jobs with a begin time, by it
  std::multimap<std::string, JobId> singletons_;  // blocked singleton jobs, by user and name
  std::map<JobId, ArrayGate> arrays_;  // throttled arrays with tasks queued, running or waiting
};

}  // namespace baton::control
