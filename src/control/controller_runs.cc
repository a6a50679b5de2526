// A job's runs (control/controller.h): its launch orders to each node of its allocation, the
// stops of its parts, a launch that failed there taken elsewhere, and its end.
#include <algorithm>
#include <csignal>

#include "control/controller.h"
#include "control/launch_blame.h"
#include "control/launch_orders.h"

namespace baton::control {

// ---- a job's runs: launch, stop, end ----

void Controller::Launch(Job& job, std::optional<size_t> only_rank) {
  for (auto& [node, order] : LaunchOrders(job, nodes_.table(), options_.policy, only_rank))
    nodes_.Send(node, std::move(order));
}

void Controller::StopParts(Job& job, StopReason reason, Duration grace, TimePoint now) {
  for (NodeAllocation& part : job.allocation) {
    if (part.ended) continue;
    NodeRecord* node = nodes_.Find(part.node);
    // A part on a lost node ends only once the node's fence has passed (OnTick): until
    // then its agent may still be running it.
    if (node != nullptr && node->state == NodeRecord::State::kLost && now < node->requeue_at)
      continue;
    if (node == nullptr || node->state == NodeRecord::State::kLost) {
      part.ended = true;
      part.lost = true;
      continue;
    }
    Order o;
    o.kind = Order::Kind::kStop;
    o.stop =
        StopOrder{.job = job.id, .attempt = job.restarts, .reason = reason, .grace_period = grace};
    nodes_.Send(part.node, std::move(o));
  }
  MarkDirty(job);
  bool all_ended = std::all_of(job.allocation.begin(), job.allocation.end(),
                               [](const NodeAllocation& p) { return p.ended; });
  if (all_ended) Finish(job, now);
}

void Controller::Finish(Job& job, TimePoint now) {
  view_.Apply(job.allocation, job.spec.resources, -1, job.user);
  queue_.Freed();
  bool lost = false, timed_out = false, ok = true;
  const NodeAllocation* failed = nullptr;
  // What ended the job: the first process that failed by itself, rather than one Baton stopped
  // (SIGTERM, SIGKILL; SIGUSR1 from agents before PRODUCT §4 changed) because another had
  // failed.
  auto stopped = [](const NodeAllocation& p) {
    return p.signal == SIGUSR1 || p.signal == SIGTERM || p.signal == SIGKILL;
  };
  for (const NodeAllocation& p : job.allocation) {
    lost |= p.lost;
    timed_out |= p.timed_out;
    // A batch script's other nodes serve its srun: stopped once it ended, they say nothing of
    // how it went.
    if (job.spec.batch && &p != &job.allocation.front() && stopped(p) && !p.timed_out) continue;
    if (p.exit_code != 0 || p.signal != 0 || p.lost) {
      ok = false;
      if (failed == nullptr || (stopped(*failed) && !stopped(p))) failed = &p;
    }
  }
  const NodeAllocation& report = failed != nullptr ? *failed : job.allocation.front();
  const bool preemption = job.preempt_deadline.has_value();
  job.preempt_deadline.reset();
  const bool unstarted = std::any_of(job.allocation.begin(), job.allocation.end(),
                                     [](const NodeAllocation& p) { return p.launch_failed; });
  std::string where;  // the nodes it could not start on, for the words below
  for (const NodeAllocation& p : job.allocation) {
    if (p.launch_failed) where += (where.empty() ? "" : ", ") + p.node;
  }
  if (!report.lost) {
    job.exit_code =
        report.signal != 0 ? std::optional<int>() : std::optional<int>(report.exit_code);
    job.exit_signal = report.signal != 0 ? std::optional<int>(report.signal) : std::optional<int>();
  }
  auto requeue = [&](std::string detail) {
    job.restarts += 1;
    job.launched = false;
    SetState(job, JobState::kPending, now);  // counts the attempt's GPU-seconds: before the reset
    job.allocation.clear();                  // after: SetState takes the job off its nodes
    job.started_at.reset();
    job.last_requeue = detail.substr(0, 256);
    job.reason_detail = std::move(detail);
  };
  // What Baton stopped it for (preemption, a failed GPU, a lost node): back to the queue, or,
  // for a job that is never requeued (Slurm's --no-requeue), its end.
  auto requeue_or_fail = [&](const std::string& why) {
    if (job.spec.requeue) return requeue("requeued: " + why);
    job.reason_detail = why + "; not requeued (requeue: false)";
    SetState(job, JobState::kFailed, now);
  };
  if (job.stop_requested) {
    if (!job.reason_detail.starts_with("cancelled")) job.reason_detail = "cancelled";
    SetState(job, JobState::kCancelled, now);
  } else if (job.preempt_requested) {
    std::string why = job.reason_detail.empty() ? "preempted" : job.reason_detail;
    job.preempt_requested = false;
    // A preemption (not a failed GPU's stop) spends the job's budget of them, not a retry.
    const std::optional<int> budget =
        job.spec.max_preemptions ? job.spec.max_preemptions : options_.policy.max_preemptions;
    if (preemption && job.spec.requeue && budget && job.preemptions >= *budget) {
      job.reason_detail =
          why + (*budget == 0 ? "; not requeued: it may not be preempted and requeued "
                                "(max_preemptions 0)"
                              : "; not requeued: its " + std::to_string(*budget) +
                                    (*budget == 1 ? " preemption is" : " preemptions are") +
                                    " spent (max_preemptions)");
      SetState(job, JobState::kFailed, now);
    } else {
      if (preemption && job.spec.requeue) ++job.preemptions;
      requeue_or_fail(why);
    }
  } else if (timed_out) {
    job.reason_detail = "stopped at its time limit of " + FormatDuration(job.spec.time_limit);
    SetState(job, JobState::kTimedOut, now);
  } else if (lost) {
    requeue_or_fail("its node was lost while it ran");
  } else if (unstarted && MayStartElsewhere(job, nodes_.Known(), kLaunchNodesTried)) {
    // Not the job's failure (yet): no retry spent.
    std::string words = job.reason_detail.empty() ? "" : ": " + job.reason_detail;
    requeue("requeued: could not start on node " + where + words);
  } else if (ok) {
    job.reason_detail.clear();
    SetState(job, JobState::kSucceeded, now);
  } else if (!unstarted && job.failures < job.spec.retries) {
    job.failures += 1;
    requeue("requeued after a failure (retry " + std::to_string(job.failures) + " of " +
            std::to_string(job.spec.retries) + ")");
  } else {
    std::string why = report.signal != 0 ? "killed by signal " + std::to_string(report.signal)
                                         : "exited with code " + std::to_string(report.exit_code);
    if (unstarted) {
      std::string nodes;
      for (const std::string& n : job.launch_failed_on) nodes += (nodes.empty() ? "" : ", ") + n;
      why = "could not start on " +
            std::string(job.launch_failed_on.size() == 1 ? "node " : "nodes ") + nodes;
    }
    if (!job.reason_detail.empty()) why += ": " + job.reason_detail;  // the agent's words
    job.reason_detail = std::move(why);
    SetState(job, JobState::kFailed, now);
    if (unstarted) job.started_at.reset();  // its shim ran; its program never did
  }
}

}  // namespace baton::control
