// What autoscaling is given to plan from (control/autoscaler.h): the jobs that wait for
// capacity.
#include "control/controller.h"

namespace baton::control {

std::vector<ScaleDemand> Controller::ScaleDemands() const {
  std::vector<ScaleDemand> waiting;
  // The last full pass's order: the jobs it found waiting for GPUs (resources), or for the
  // capacity a job before them holds reserved (priority). Those held back by a quota, a
  // limit, a dependency or a time wait for no node.
  for (const sched::QueueEntry& e : queue_.order()) {
    const Job* j = control::FindJob(jobs_, e.id, -1);
    if (j == nullptr || j->state != JobState::kPending || gate_.Blocked(e.id)) continue;
    if (j->reason != WaitReason::kResources && j->reason != WaitReason::kPriority) continue;
    ScaleDemand d{.job = j->id,
                  .pool = j->spec.pool,
                  .resources = j->spec.resources,
                  .preemptible = Preemptible(j->spec),
                  .exclude = j->spec.resources.exclude};
    d.exclude.insert(d.exclude.end(), j->launch_failed_on.begin(), j->launch_failed_on.end());
    waiting.push_back(std::move(d));
  }
  return waiting;
}

}  // namespace baton::control
