// The controller's side of the nodes: agents registering, polling and reporting what they
// hold (sessions attached, GPU readings, health, notices, output the server dropped), nodes
// gone silent and their fences, drains and injected faults, and each node's slots in the
// scheduler's view. It owns the nodes (NodeTable), the watch over silent ones (NodeWatch) and
// the known nodes a request is checked against (FeasibilityCache). What reaches jobs — a
// registering agent's jobs reconciled, a job's events, the jobs on a failed GPU or a lost node
// stopped — the Controller does with what the desk returns. It shares the Controller's view,
// events, queue and running jobs, given at construction. Owned by the Controller; not
// thread-safe.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "control/commands.h"
#include "control/controller_options.h"
#include "control/event_ring.h"
#include "control/feasibility_cache.h"
#include "control/launch_blame.h"
#include "control/node_table.h"
#include "control/node_watch.h"
#include "control/replies.h"
#include "control/running_jobs.h"
#include "sched/cluster_view.h"
#include "sched/job_queue.h"
#include "store/store.h"

namespace baton::control {

class NodeDesk {
 public:
  // The Controller's parts the desk works with; they outlive it.
  struct Shared {
    const ControllerOptions& options;
    const std::map<JobId, Job>& jobs;
    const RunningJobs& running;
    sched::ClusterView& view;  // the nodes' slots are the desk's to make
    EventRing& events;
    sched::JobQueue& queue;             // a full pass is asked for when nodes change
    std::vector<store::Drain>& drains;  // set or lifted in this batch, for its store batch
  };
  explicit NodeDesk(Shared shared);

  NodeRecord* Find(const std::string& name) { return nodes_.Find(name); }
  const NodeRecord* Find(const std::string& name) const { return nodes_.Find(name); }
  NodeTable& table() { return nodes_; }
  const NodeTable& table() const { return nodes_; }
  // The node, added to the table and (unschedulable) to the view if it was not known.
  NodeRecord& Ensure(const std::string& name);
  void Send(const std::string& node, Order order);
  // Makes the node's slots in the view again: its GPUs, drains and health, and its running jobs.
  void RebuildSlots(const NodeRecord& node);
  // The drains a store kept (before any agent registers).
  void RestoreDrains(const std::vector<store::Drain>& drains);
  // The parked polls answered in this batch (Effects::deliveries).
  std::vector<Delivery> TakeDeliveries() { return nodes_.TakeDeliveries(); }

  // The known nodes (every node registered or awaited) as the feasibility checks take them,
  // and whether any set of them can ever hold `spec` (FeasibilityCache): its request as it
  // will run (its nodes chosen when it named none), or why no set of its pool's nodes can.
  const std::vector<sched::KnownNode>& Known() {
    return feasibility_.Known(nodes_, shared_.options.policy.autoscaling);
  }
  Result<Resources> Feasible(const JobSpec& spec, const std::string& user) {
    const Policy& policy = shared_.options.policy;
    return feasibility_.Check(nodes_, policy.autoscaling, spec, user,
                              policy.Pool(spec.pool) != nullptr);
  }
  // Pools may have come or gone: the known nodes are made again.
  void PoolsChanged() { feasibility_.MarkStale(); }

  // An admin's drain or undrain of a node or some of its GPUs; an injected fault sent to a
  // simulated node's agent.
  Status Drain(const DrainNode& c);
  Status Inject(const InjectFault& c);
  // Counts the launch failures that `job` proved not its own against their nodes (`blame`'s
  // verdict, LaunchBlame::Blame), and drains the nodes at the limit
  // (ControllerOptions::drain_after_launch_failures); whether that changed the job's record.
  bool BlameLaunchFailures(LaunchBlame& blame, Job& job, TimePoint now);

  // An agent registering: its node ready with a new session, what it says of its hardware, its
  // slots made again. The Controller then reconciles the node's jobs and health.
  Result<NodeRecord*> Join(const NodeInfo& info, TimePoint now);
  Result<PollAnswer> Poll(const AgentPoll& c, TimePoint now);
  // A report of the node's current session: heard now, its attached sessions and GPU readings
  // kept, output the server dropped said. The Controller then takes its jobs' events and
  // health, and the GPUs' notices (Notices) last.
  Result<NodeRecord*> Heard(const AgentReport& c, TimePoint now);
  void Notices(const NodeRecord& node, const std::vector<GpuNotice>& notices, TimePoint now);

  // A running job on a GPU that failed, or on a node reclaimed: to be stopped (for `reason`,
  // with `grace`) and requeued without a retry spent (`detail`: why).
  struct Hit {
    JobId job;
    std::string detail;
    StopReason reason = StopReason::kNodeFailure;
    Duration grace{0};
  };
  // What the agent says of its GPUs' health: failed GPUs fenced (hardware faults drained),
  // recovered ones back, said as events. Returns the jobs on the GPUs that failed, in order.
  std::vector<Hit> Health(NodeRecord& node, const std::vector<GpuHealth>& health, TimePoint now);

  // A spot node's reclaim notice as its agent says it now (a registration's or a report's;
  // none at a registration lifts an earlier one): the node out of scheduling, said once as a
  // node_reclaimed event. Returns its running jobs, to be stopped with the time left until the
  // deadline as their grace (at least 1 s: SIGTERM first) and requeued elsewhere.
  std::vector<Hit> Reclaim(NodeRecord& node, const std::optional<ReclaimNotice>& notice,
                           bool registering, TimePoint now);

  // Autoscaling returns the node to its provider (`leaving`: it takes no new jobs), or lets it
  // stay after all.
  void Leave(NodeRecord& node, bool leaving);
  // Autoscaling returned the node to its provider: suspended, its polls answered, not missed
  // when its agent falls silent. One that still runs jobs (it never should) is lost instead,
  // so that they are requeued once its fence has passed.
  void Suspend(NodeRecord& node, TimePoint now);

  // At a tick: the nodes silent for the node timeout marked lost (their polls answered, their
  // orders dropped, said as an event).
  void Watch(TimePoint now);
  // Parked polls that waited the poll timeout answered empty, so that their agents poll again.
  void ExpirePolls(TimePoint now) { nodes_.ExpirePolls(now); }
  // The lost nodes whose fence has passed by `now`: their jobs go back to the queue.
  std::vector<NodeRecord*> Fenced(TimePoint now) { return watch_.Fenced(nodes_, now); }

  // MIG on demand (control/mig_desk.h), at a tick: once every Policy::mig_window, the changes
  // of MIG GPUs that give `waiting` jobs (the queue's first, in its order; asked only when a
  // node re-plans MIG) the instances they ask for, ordered or waited for.
  void PlanMig(const std::function<std::vector<const Job*>()>& waiting, TimePoint now);

 private:
  void MarkLost(NodeRecord& node, TimePoint now);
  // After `reclaimed`'s notice: the other spot nodes of its pool cool off (take no new jobs)
  // for Policy::reclaim_cooloff; the words the event adds ("" when none do).
  std::string CoolOff(const NodeRecord& reclaimed, TimePoint now);
  void NoteLogsDropped(const AgentReport& c, TimePoint now);

  Shared shared_;
  NodeTable nodes_;
  FeasibilityCache feasibility_;  // what could ever hold a request, by the known nodes
  NodeWatch watch_;               // silent nodes, their fences, the lost nodes' jobs due back
  std::pair<JobId, TimePoint> last_log_drop_{};  // the last log_dropped alert: of what, when
  TimePoint cooling_ends_ = TimePoint::max();    // the earliest end of a spot node's cool-off
  TimePoint next_mig_plan_{};                    // PlanMig's next window
  int mig_nodes_ = 0;  // nodes whose agents registered GPUs to re-plan (NodeInfo::mig_gpus)
};

}  // namespace baton::control
