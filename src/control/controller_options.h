// How a Controller (controller.h) is set up: its timeouts, launch-failure limits, how many
// waits a pass explains, and the scheduling policy.
#pragma once

#include <chrono>
#include <cstddef>

#include "core/policy.h"
#include "core/time.h"
#include "sched/scheduler.h"

namespace baton::control {

struct ControllerOptions {
  Duration node_timeout = std::chrono::seconds(60);  // silent agent -> node lost
  // An agent that has not reached a controller for node_timeout stops its jobs (its fence):
  // SIGTERM, and SIGKILL this long after. A lost node's jobs are requeued only once both have
  // surely happened (NodeWatch::FenceEnds), so that a job never runs twice.
  Duration fence_grace = std::chrono::seconds(10);
  Duration poll_timeout = std::chrono::seconds(20);  // longest an agent's poll is held
  // GPU readings the agents send, over all nodes, at most this many reports a second: each
  // agent is told to report its readings every max(2 s, nodes / this) seconds, and at least
  // four times per node_timeout (Controller::SampleInterval).
  int sample_reports_per_second = 1000;
  Duration full_pass_interval = std::chrono::seconds(2);  // re-order the queue (age, usage)
  // A node where this many jobs in a row could not start, and then started elsewhere, is
  // drained with the reason (a black hole would fail the whole queue); 0: never.
  int drain_after_launch_failures = 3;
  // Waiting jobs a full pass gives a reason to (Job::reason_detail and the place in the
  // queue), the first in order; the decisions are the same for any number. Passes that are
  // not full always explain sched::kExplainedWaits: the re-pass rule reads their reasons.
  int explained_waits = sched::kExplainedWaits;
  // Autoscaled nodes' stretches of use are kept as they were for this long, older UTC days
  // folded (NodeLedger::Compact); kMaxDuration: never folded (`baton sim`'s exact answers).
  Duration node_charge_detail = std::chrono::days(35);
  // Whether a batch's effects carry a copy of every job it changed, for the store to write
  // (Effects::store.jobs). false: nothing keeps them (`baton sim`, whose replay has no store
  // and would copy 400,000 jobs for nothing on the Philly trace).
  bool store_jobs = true;
  Policy policy;
};

// A job that could not start on this many nodes fails for good: the fault is its own.
inline constexpr size_t kLaunchNodesTried = 3;

}  // namespace baton::control
