#include "control/pass_driver.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <tuple>
#include <utility>

#include "control/pass_records.h"
#include "sched/holdings.h"

namespace baton::control {

// Which jobs a pass looks at, and when the queue is ordered again, is the queue's to plan.
std::optional<PassDriver::Ran> PassDriver::Run(const Parts& parts, TimePoint now) {
  const Policy& policy = parts.policy;
  sched::JobQueue& queue = parts.queue;
  const bool head_is_enough = HeadIsEnough(parts);
  const bool quiet = head_is_enough && !policy.preemption;
  // Read by the queue only when GPUs were freed: no walk over the nodes for other batches.
  const bool stuck = quiet && queue.freed() && BlockerIsStuck(parts);
  // A full pass walks the queue's groups (sched/job_queue.h), merged as far as it goes, unless
  // it is given the head of the queue alone; the groups' order needs age to count upward.
  const bool grouped = !head_is_enough && policy.weights.age >= 0;
  Ran ran;
  sched::JobQueue::Plan& plan = ran.plan;
  plan = queue.Next(
      now, !policy.backfill,
      [&](JobId id) -> const Job* {
        const Job& j = parts.jobs.at(id);
        return j.state == JobState::kPending && !parts.gate.Blocked(id) ? &j : nullptr;
      },
      head_is_enough ? kStrictHead : 0, quiet, stuck, grouped);
  if (plan.jobs.empty() && !plan.grouped) return std::nullopt;
  const bool full = plan.kind == sched::JobQueue::Kind::kFull;
  sched::PassInput& in = ran.in;
  // The running jobs' records, brought to now and lent to the pass; given back before its
  // decisions start or stop any job.
  parts.running.AdvanceTo(now);
  in.running = std::move(running_);  // the last pass's buffer, given to `running` meanwhile
  parts.running.SwapRecords(in.running);
#ifndef NDEBUG
  // What is kept is what the jobs say: a change that was not marked dirty would show here.
  for (size_t i = 0; const auto& [id, job] : parts.running) {
    if (in.running[i++] == RunningOf(*job, parts.numbers, parts.view, now)) continue;
    std::fprintf(stderr, "the kept record of running job %s is not the job's\n",
                 id.ToString().c_str());
    std::abort();
  }
#endif
  parts.usage.Advance(now);
  in.usage = &parts.usage;
  in.policy = &policy;
  in.now = now;
  in.full = full;
  if (full) {
    in.explained = parts.explained_waits;
  } else if (parts.explained_waits == 0 && !RepassMayFollow(parts)) {
    // A pass that is not full explains its waits for the re-pass rule (ApplyPass) even where
    // no one reads the reasons (the simulator): not when that rule can find nothing in them.
    in.explained = 0;
  }
  in.blocker = plan.blocker;
  in.ahead = plan.ahead;
  if (full) in.claims = claims_;
  while (true) {
    if (plan.grouped) {
      in.queue = &queue;
      in.pending = std::move(pending_);  // filled as the pass walks: its last buffer
      in.pending.clear();
      in.pending.reserve(queue.size());
    } else if (!plan.records.empty()) {
      in.pending = std::move(plan.records);  // the queue's copies, made as the jobs joined it
    } else {
      in.pending.clear();
      in.pending.reserve(plan.jobs.size());
      for (const Job* j : plan.jobs) in.pending.push_back(PendingOf(*j, parts.numbers));
    }
    in.partial = plan.partial;
    view_.CopyFrom(parts.view);  // into the last pass's buffers: what changed since
#ifndef NDEBUG
    // A change of the controller's view, or of the last pass's copy, that did not stamp the
    // node would show here.
    if (view_.nodes != parts.view.nodes) {
      std::fprintf(stderr, "the pass's copy of the cluster view is not the controller's\n");
      std::abort();
    }
#endif
    in.view = std::move(view_);
    ran.result = sched::RunPassOn(in);
    view_ = std::move(in.view);
    if (!ran.result.wanted_more) break;
    // The head given was too short (a long run of jobs that start): a pass is pure, so it
    // runs again on a longer one.
    std::tie(plan.jobs, plan.partial) = queue.First(plan.jobs.size() * 4, &plan.records);
  }
  parts.running.SwapRecords(in.running);  // back before any job starts or stops
  if (full) {
    const Job* blocker = nullptr;
    if (ran.result.blocker) {
      blocker = plan.grouped ? &parts.jobs.at(in.pending[*ran.result.blocker].id)
                             : plan.jobs[*ran.result.blocker];
    }
    queue.Blocked(blocker);
  }
  return ran;
}

void PassDriver::TakeFull(Ran& ran, sched::JobQueue& queue, sched::ClusterView& view,
                          const Policy& policy, TimePoint now) {
  sched::PassResult& pass = ran.result;
  if (ran.in.queue != nullptr) {
    queue.OrderedHead(std::move(pass.order), pass.sorted, std::move(pass.rest), now, policy);
  } else {
    queue.Ordered(std::move(pass.order), pass.sorted, ran.plan.partial);
  }
  view.ClearReservations();
  claims_.clear();
  for (const auto& r : pass.reservations) {
    sched::MarkReservation(view, r);
    if (r.claim) claims_.push_back(r);
  }
}

void PassDriver::Done(Ran ran) {
  if (ran.plan.grouped) pending_ = std::move(ran.in.pending);
  running_ = std::move(ran.in.running);  // the buffer lent to the running jobs' records
}

bool PassDriver::BlockerIsStuck(const Parts& parts) {
  // Strict order: every job ahead of the blocker started (no limit held one back), and no
  // node has as much GPU capacity free as one part of it asks (a bound that ignores type,
  // memory, CPUs and reservations: it may say no when it could not start, never the reverse).
  std::optional<JobId> id = parts.queue.blocker();
  if (!id || sched::AnyLimit(parts.policy)) return false;
  auto found = parts.jobs.find(*id);
  if (found == parts.jobs.end() || found->second.state != JobState::kPending) return false;
  const Job& j = found->second;
  const Resources& r = j.spec.resources;
  const int64_t per_node = r.milli_gpus / std::max(r.nodes, 1);
  if (per_node <= 0) return false;
  for (const sched::NodeSlots& n : parts.view.nodes) {
    if (!n.schedulable || n.pool != j.spec.pool) continue;
    int64_t free = 0;
    for (const sched::GpuSlot& g : n.gpus) free += g.usable ? g.free_milli : 0;
    if (free >= per_node) return false;
  }
  return true;
}

bool PassDriver::HeadIsEnough(const Parts& parts) const {
  // Strict order (no backfill) by a score that only the class makes, and no claims to put
  // first: the pass's order is the queue's own, and it walks only to the first job that
  // waits and the kExplainedWaits after it. Every other job would only be counted.
  const Policy& p = parts.policy;
  const Weights& w = p.weights;
  return !p.backfill && claims_.empty() && w.fairshare == 0 && w.age == 0 && w.size == 0 &&
         w.las == 0 && (w.priority > 0 || parts.queue.OneClass());
}

int PassDriver::LowestRunningClass(const RunningJobs& running) {
  int lowest = static_cast<int>(Priority::kCritical) + 1;
  for (const auto& [id, job] : running)
    lowest = std::min(lowest, static_cast<int>(job->spec.priority));
  return lowest;
}

bool PassDriver::RepassMayFollow(const Parts& parts) {
  const Policy& p = parts.policy;
  if (!p.preemption) return false;
  if (p.default_project.guaranteed_milli > 0) return true;
  for (const auto& [name, project] : p.projects) {
    if (project.guaranteed_milli > 0) return true;
  }
  return parts.queue.HighestClass() > LowestRunningClass(parts.running);
}

}  // namespace baton::control
