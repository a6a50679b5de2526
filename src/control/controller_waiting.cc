// What keeps a pending job out of the queue, and what lets it in: the controller's side of its
// DependencyGate (dependency_gate.h), which judges a job and keeps the blocked ones. Here jobs
// move between the gate and the queue.
#include <algorithm>

#include "control/controller.h"
#include "control/pass_records.h"

namespace baton::control {

void Controller::Enqueue(Job& job, TimePoint now) {
  job.queue_ahead = -1;  // the words of a pass before it left the queue are stale
  DependencyGate::Waiting w = DependencyGate::Judge(job, jobs_, now);
  if (w.never) {
    job.reason = WaitReason::kDependency;
    job.reason_detail = std::move(w.detail);
    SetState(job, JobState::kFailed, now);
    return;
  }
  if (w.reason != WaitReason::kNone) {
    gate_.Block(job, w);
    job.reason = w.reason;
    job.reason_detail = std::move(w.detail);
    return;
  }
  if (DependencyGate::ArrayGate* gate = gate_.GateOf(job)) {
    if (gate->active >= gate->limit) {
      gate_.Block(job, DependencyGate::Waiting{});  // behind its array's throttle
      job.reason = WaitReason::kArrayLimit;
      job.reason_detail = "array " + job.array_id.ToString() + " runs at most " +
                          std::to_string(gate->limit) + " tasks at once (%" +
                          std::to_string(gate->limit) + ")";
      return;
    }
    gate->active += 1;
  }
  queue_.Add(job, PendingOf(job, numbers_));
  job.reason = WaitReason::kPriority;
  job.reason_detail = "waiting for the scheduler";
}

void Controller::Dequeue(Job& job) {
  job.queue_ahead = -1;  // a pass's place in the queue means nothing outside it
  queue_.Remove(job);
  gate_.Unblock(job);
}

void Controller::LeaveGate(const Job& job, TimePoint now) {
  DependencyGate::ArrayGate* gate = gate_.GateOf(job);
  if (gate == nullptr) return;
  gate->active -= 1;
  while (gate->active < gate->limit && !gate->waiting.empty()) {
    Job& next = jobs_.at(*gate->waiting.begin());
    gate->waiting.erase(gate->waiting.begin());
    gate_.Unblock(next, /*indexes=*/false);
    Enqueue(next, now);  // takes a place, or waits again behind a dependency
    MarkDirty(next);
  }
  gate_.DropGateIfIdle(job.array_id);
}

void Controller::Recheck(const std::vector<JobId>& ids, TimePoint now) {
  for (JobId id : ids) {
    Job& j = jobs_.at(id);
    if (j.state != JobState::kPending || !gate_.Blocked(id)) continue;
    DependencyGate::Waiting w = DependencyGate::Judge(j, jobs_, now);
    if (!w.never && w.reason == j.reason && w.reason != WaitReason::kNone) {
      j.reason_detail = std::move(w.detail);  // still waiting, perhaps for another job
      continue;
    }
    gate_.Unblock(j);
    Enqueue(j, now);
    MarkDirty(j);
  }
}

}  // namespace baton::control
