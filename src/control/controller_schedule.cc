// The controller's scheduling: a pass run (PassDriver) and what its decisions change: the
// reasons of the jobs that wait, preemptions, and the starts with the ports they meet at.
#include <algorithm>

#include "control/controller.h"
#include "control/master_ports.h"
#include "control/mig_desk.h"
#include "control/pass_records.h"

namespace baton::control {

// ---- scheduling ----

// The queue plans which jobs a pass looks at, the PassDriver runs it, and the controller takes
// in its decisions.
void Controller::Schedule(TimePoint now) {
  // The running jobs' records of the jobs changed in this batch, made again pass or no pass.
  KeepRunning(changed_.jobs, jobs_, numbers_, view_, running_);
  std::optional<PassDriver::Ran> ran =
      passes_.Run(PassDriver::Parts{.policy = options_.policy,
                                    .explained_waits = options_.explained_waits,
                                    .jobs = jobs_,
                                    .gate = gate_,
                                    .queue = queue_,
                                    .running = running_,
                                    .view = view_,
                                    .usage = ledgers_.usage(),
                                    .numbers = numbers_},
                  now);
  if (!ran) return;
  const sched::JobQueue::Kind kind = ran->plan.kind;
  const bool could_preempt = ApplyPass(*ran, now);
  passes_.Done(std::move(*ran));
  if (queue_.WantsRepass(kind, could_preempt, now)) Schedule(now);
}

bool Controller::ApplyPass(PassDriver::Ran& ran, TimePoint now) {
  sched::PassResult& pass = ran.result;
  auto job_at = [&](uint32_t index) -> Job& { return ran.JobAt(index, jobs_); };
  const bool full = ran.in.full;
  if (full) passes_.TakeFull(ran, queue_, view_, options_.policy, now);
  for (const sched::Wait& w : pass.waits) {
    Job& j = job_at(w.index);
    j.reason = w.reason;
    j.reason_detail = pass.texts[w.text];  // a copy into the buffer it has: no allocation
    // "no node ... can ever hold": the scheduler sees only the MIG instances there are.
    if (w.reason == WaitReason::kResources && j.reason_detail.starts_with("no node in pool")) {
      if (auto cut = MigCutWords(nodes_.table(), j.spec, options_.policy.mig_window))
        j.reason_detail = std::move(*cut);
    }
    j.queue_ahead = w.ahead;
    j.reason_at = now;
    j.estimated_start = w.estimated_start;
  }
  for (const sched::Preemption& p : pass.preemptions) {
    Job& victim = jobs_.at(p.victim);
    if (victim.state != JobState::kRunning || victim.stop_requested || victim.preempt_requested)
      continue;
    victim.preempt_requested = true;
    victim.preempt_deadline = now + options_.policy.preempt_grace;
    ++counters_.preemptions;
    victim.reason_detail = "preempted (" + std::string(PreemptReasonName(p.reason)) + ") for job " +
                           p.for_job.ToString();
    StopParts(victim, StopReason::kPreempt, options_.policy.preempt_grace, now);
  }
  // An arrival that waits but could preempt (a lower class runs, or its project has a
  // guarantee): the lowest class among the jobs running before this pass's starts.
  bool could_preempt = false;
  if (!full && options_.policy.preemption) {
    std::optional<int> lowest_running;  // walked only once a job waits for resources
    for (const sched::Wait& w : pass.waits) {
      if (w.reason != WaitReason::kResources) continue;
      const Job& j = job_at(w.index);
      if (!lowest_running) lowest_running = PassDriver::LowestRunningClass(running_);
      if (static_cast<int>(j.spec.priority) > *lowest_running ||
          options_.policy.Project(j.spec.project).guaranteed_milli > 0) {
        could_preempt = true;
        break;
      }
    }
  }
  std::optional<PortsByNode> ports;  // built at the pass's first start that needs one
  for (sched::Start& s : pass.starts) {
    Job& j = job_at(s.index);
    j.allocation = std::move(s.allocation);
    j.master_port = 0;
    j.step_port = 0;
    if (MeetsOverNetwork(j)) {
      if (!ports) ports = MasterPortsInUse(running_);
      j.master_port = TakeMasterPort(j, (*ports)[j.allocation.front().node]);
      if (j.spec.batch && (j.allocation.size() > 1 || j.spec.alloc))
        j.step_port = TakeStepPort(j, *ports);
    }
    StartJob(j, now);
  }
  return could_preempt;
}

void Controller::StartJob(Job& j, TimePoint now) {
  view_.Apply(j.allocation, j.spec.resources, +1, j.user);
  j.launched = false;
  j.stop_requested = false;
  j.preempt_requested = false;
  j.preempt_deadline.reset();
  j.last_checkpoint.reset();
  j.estimated_start.reset();
  j.reason = WaitReason::kNone;
  j.reason_detail.clear();
  SetState(j, JobState::kRunning, now);
  Launch(j);
}

}  // namespace baton::control
