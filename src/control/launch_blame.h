// Launch failures (a job that could not start on a node and went to another): which running
// jobs have still to prove that the nodes they failed on were at fault, and the verdicts once
// they do. A job proves it when its program runs where it went: an exit of its own, or still
// running kProvenAfter after its start (a program that cannot be executed fails within
// milliseconds). Then each node it failed on counts one more failure in a row (a node where
// a program runs starts over), and one at the limit is to be drained, unless it is already.
// Verdicts the controller acts on, as IdleSessions' are. Rebuilt from the running jobs at a
// restore (Job::launch_blamed says how far a job's failures were counted). Owned by the
// Controller; not thread-safe.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "control/node_table.h"
#include "core/job.h"
#include "sched/feasibility.h"

namespace baton::control {

// A program that cannot be executed fails within milliseconds of its start: one still running
// this long after started.
inline constexpr Duration kProvenAfter = std::chrono::seconds(3);

// A launch of `job` failed on some of its nodes (NodeAllocation::launch_failed): adds them to
// the nodes it could not start on (Job::launch_failed_on), and says whether it may try
// another: one of `nodes` (the known nodes) not among those could hold it, and fewer than
// `tried_limit` have failed it.
bool MayStartElsewhere(Job& job, std::vector<sched::KnownNode> nodes, size_t tried_limit);

class LaunchBlame {
 public:
  // A node to drain: `limit` launch failures in a row (ControllerOptions).
  struct Drain {
    std::string node;
    std::string reason;
  };

  // A running job, at a restore or when a part of it starts: watched while some of the nodes
  // it failed on are not counted yet.
  void Watch(const Job& job) {
    if (job.launch_blamed < static_cast<int>(job.launch_failed_on.size())) unproven_.insert(job.id);
  }
  bool Watched(JobId id) const { return unproven_.count(id) > 0; }

  // The watched jobs that have proven themselves by `now` (launched everywhere without a
  // failure, and running kProvenAfter). A watched job no longer running is forgotten: its
  // failures are counted, if at all, when it next starts.
  std::vector<JobId> Proven(const std::map<JobId, Job>& jobs, TimePoint now);

  // Counts `job`'s failures not counted yet against their nodes (not one it now runs on): the
  // nodes to drain, at `limit` failures in a row (0: never). Marks them counted in the job
  // (true when that changed it) and stops watching it.
  std::vector<Drain> Blame(Job& job, NodeTable& nodes, int limit, bool* changed);

 private:
  std::set<JobId> unproven_;
};

}  // namespace baton::control
