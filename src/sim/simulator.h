// `baton sim`: replays a trace on a described cluster through the real Controller and
// scheduler, with a virtual clock and simulated agents speaking the agent protocol's
// commands in process. Jobs "run" for their trace duration; time limits, preemption and
// requeues behave as in production, because it is the production code.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/policy.h"
#include "core/status.h"
#include "core/usage.h"
#include "sim/trace.h"

namespace baton::sim {

struct SimNode {
  std::string name;
  std::string gpus;  // --gpus SPEC
  std::string pool = "default";
  bool mps = false;  // its GPUs' fractions go to one user at a time (NodeInfo::mps)
  // Its MIG GPUs' instances are re-planned for the queue (NodeInfo::mig_gpus), each change
  // registered `mig_delay` after it was ordered (its agent's NVML calls and registration).
  bool mig_reconfigure = false;
  Duration mig_delay = std::chrono::seconds(5);
};

// What became of one trace job; times in seconds from the trace's start, -1 when not reached.
struct JobOutcome {
  int64_t id = 0;
  std::string name, user, project;
  int64_t milli_gpus = 0;
  double submit = 0;
  double start = -1;  // first start
  double end = -1;    // final end
  int restarts = 0;
  std::string state;  // succeeded, timed_out, pending (never ran), refused (can never run), ...
};

// A trace job the controller refused at submit because no set of the cluster's nodes can ever
// hold it (sched/feasibility.h): counted and named, never left silently pending.
struct Unrunnable {
  std::string name;
  int line = 0;  // in the trace
  std::string reason;
};

struct Summary {
  int64_t jobs = 0;
  int64_t finished = 0;
  double makespan_s = 0;
  double avg_jct_s = 0, p50_jct_s = 0, p95_jct_s = 0;
  double avg_wait_s = 0;
  double gpu_utilization = 0;  // GPU-seconds run / (GPUs x makespan)
  int64_t preemptions = 0;
  // Per job (Job::preemptions, the requeues after a preemption): how many jobs were preempted
  // at least once, and the most times one job was. A policy that preempts little on average
  // can still preempt one job again and again; this says whether any job was.
  int64_t preempted_jobs = 0;
  int max_job_preemptions = 0;
  double jain_fairness = 1;  // over users' mean slowdown (JCT / duration)
  // The worst user's mean slowdown: Jain's index falls when one user is slowed while the others
  // are not, even if everyone is better off than under another policy; this says how bad the
  // worst-off user has it.
  double max_user_slowdown = 1;
  // The mean share of the cluster's GPUs left idle while jobs waited in the queue: free but of
  // the wrong type, on the wrong node, or in pieces too small for what waits (fragmentation),
  // or held back for a reservation.
  double idle_while_waiting = 0;
  int64_t events = 0;                       // commands the controller applied
  int64_t unrunnable = 0;                   // jobs refused: no node set can ever hold them
  std::vector<Unrunnable> unrunnable_jobs;  // the first few of them, in trace order
  // With autoscaling (the cluster file's autoscaling:): the nodes it resumed, and what its
  // nodes cost from the trace's first submit on, as GET /v1/usage's `nodes` says it.
  int64_t resumed_nodes = 0;
  std::optional<NodeCosts> nodes;
  // With MIG GPUs re-planned (SimNode::mig_reconfigure): how many there are, the changes made,
  // and the mean fragmentation of their free memory slices over time (sched::MigFragmentation:
  // 0 when each GPU's free slices are one run, towards 1 as they scatter).
  int64_t mig_gpus = 0;
  int64_t mig_changes = 0;
  double mig_fragmentation = 0;
};

struct SimResult {
  Summary summary;
  std::vector<JobOutcome> jobs;
  // (seconds, busy GPUs, pending jobs) at each change: for the report's pictures.
  std::vector<std::tuple<double, double, int64_t>> timeline;
  // With SimOptions::decisions: what the controller decided, a line each, in order: "120.000
  // start 7 a1 n1 gpus=0,1", "130.000 stop 7 a1 n1 preempt", "150.000 end 9 a0 n2". Pinned by
  // the golden tests: a change of the scheduler's behaviour shows as a diff.
  std::vector<std::string> decisions;
};

struct SimOptions {
  bool decisions = false;
  // With autoscaling, the simulator is the provider: a node it is asked to resume registers
  // this long after (its boot), one it is asked to suspend is gone at once.
  Duration boot_delay = std::chrono::minutes(2);
};

// Policies by name: fifo, priority, fairshare, backfill, default (PRODUCT.md §2).
Result<Policy> NamedPolicy(const std::string& name, const Policy& configured);

Result<SimResult> Simulate(const std::vector<SimNode>& nodes, const std::vector<TraceJob>& trace,
                           const Policy& policy, const SimOptions& options = {});

}  // namespace baton::sim
