// A scheduling pass run for the controller. The queue plans which jobs a pass looks at
// (sched/job_queue.h); this gives the pass its input (the queue's jobs, the running jobs' kept
// records brought to now, a copy of the view, the usage, the claims the last full pass left),
// runs it (again on a longer head when the head it was given was too short), and keeps the
// buffers for the next pass. The controller takes in the decisions (Controller::ApplyPass) and
// hands the pass back (Done). Owned by the Controller; not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "control/account_numbers.h"
#include "control/dependency_gate.h"
#include "control/running_jobs.h"
#include "core/job.h"
#include "core/policy.h"
#include "sched/cluster_view.h"
#include "sched/fair_share.h"
#include "sched/job_queue.h"
#include "sched/scheduler.h"

namespace baton::control {

class PassDriver {
 public:
  // The controller's parts a pass reads. The running jobs' records are lent to the pass and
  // given back, the usage is advanced to its time, and the queue learns a full pass's blocker.
  struct Parts {
    const Policy& policy;
    int explained_waits;  // ControllerOptions::explained_waits
    const std::map<JobId, Job>& jobs;
    const DependencyGate& gate;
    sched::JobQueue& queue;
    RunningJobs& running;
    const sched::ClusterView& view;
    sched::UsageLedger& usage;
    AccountNumbers& numbers;
  };
  // A pass that ran: what it was given, and its decisions.
  struct Ran {
    sched::JobQueue::Plan plan;
    sched::PassInput in;
    sched::PassResult result;
    // The job at `index` of the pass's input: the plan's own when it has them (no lookup in
    // the map of all jobs), else by id. The jobs are the controller's (`jobs`), lent to the
    // queue as const.
    Job& JobAt(uint32_t index, std::map<JobId, Job>& jobs) const {
      return in.queue != nullptr ? jobs.at(in.pending[index].id)
                                 : const_cast<Job&>(*plan.jobs[index]);
    }
  };

  // Runs the pass the queue plans now; none when it plans none (nothing changed).
  std::optional<Ran> Run(const Parts& parts, TimePoint now);
  // A full pass's order given to the queue, and its reservations marked in `view` (the last
  // ones cleared); those that claim GPUs preemption freed are held for the next full pass.
  void TakeFull(Ran& ran, sched::JobQueue& queue, sched::ClusterView& view, const Policy& policy,
                TimePoint now);
  // The pass's buffers, kept for the next.
  void Done(Ran ran);

  // The lowest priority class among the running jobs (above kCritical when none runs).
  static int LowestRunningClass(const RunningJobs& running);

 private:
  // Strict order by class alone: a full pass is given only the head of the queue, this long
  // at first (HeadIsEnough).
  static constexpr size_t kStrictHead = sched::kExplainedWaits + 64;
  // Whether a full pass needs only the head of the queue.
  bool HeadIsEnough(const Parts& parts) const;
  // Strict order: the last full pass's blocker cannot start on what is free now.
  static bool BlockerIsStuck(const Parts& parts);
  // Whether the re-pass rule could find an arrival that may preempt among a pass's waits (a
  // project has a guarantee, or a waiting job's class is above a running one's).
  static bool RepassMayFollow(const Parts& parts);

  std::vector<sched::Reservation> claims_;  // GPUs preemption freed, held for their claimers
  sched::ClusterView view_;                 // scratch for passes, kept for its buffers
  std::vector<sched::PendingJob> pending_;  // the same, for passes given the queue
  std::vector<sched::RunningJob> running_;  // ... and for every pass's running jobs
};

}  // namespace baton::control
