// The nodes as the controller knows them: what each agent said (GPUs, readings, health), the
// node's state and session, its drains, and its outbox: the orders sent or waiting to be
// sent, numbered, until the agent acknowledges them, with the poll it parked to wait for more.
// The deliveries that answer parked polls are collected for the batch's Effects. The scheduler's
// slots of each node live in the controller's ClusterView, not here. Owned by the Controller;
// not thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "control/commands.h"

namespace baton::control {

struct NodeRecord {
  NodeInfo info;
  // kSuspended: an autoscaled node returned to its provider (control/autoscaler.h): gone, and
  // not missed; an agent registering under its name makes it ready again.
  enum class State { kAwaiting, kReady, kLost, kSuspended } state = State::kAwaiting;
  uint64_t session = 0;
  TimePoint last_seen{};
  std::deque<Order> outbox;  // sent or waiting to be sent, not yet acknowledged
  uint64_t next_seq = 1;
  std::optional<uint64_t> parked_poll;
  TimePoint parked_at{};
  std::vector<GpuSample> samples;
  std::vector<JobId> attached;  // its sessions with a client attached, as its last report said
  std::string drain_reason;     // non-empty: drained by an admin
  std::map<int, std::string> gpu_drains;  // GPU index -> reason
  std::vector<GpuHealth> health;          // per GPU, as the agent last judged it
  // A spot node's reclaim notice, as its agent said it: the node takes no new jobs. Lifted
  // by a registration without one (a new machine of the name).
  std::optional<ReclaimNotice> reclaim;
  TimePoint reclaim_heard{};  // when the controller first had it (its own clock)
  // A spot node of a pool another of whose spot nodes was reclaimed: no new jobs until then
  // (Policy::reclaim_cooloff; NodeDesk::Watch lifts it).
  std::optional<TimePoint> cooling_until;
  // Autoscaling is returning it to its provider (suspending, or failed): no new jobs.
  bool leaving = false;
  int launch_failures = 0;  // jobs in a row that could not start here and did elsewhere
  // The running jobs with a part here (Controller::SetState keeps it): what a report, a
  // registration or a lost node concerns, found without a walk of every running job.
  std::set<JobId> running;
  // A lost node's jobs are requeued at this time (Controller::FenceEnds), once its agent has
  // surely stopped them; TimePoint::max() while it is not lost.
  TimePoint requeue_at = TimePoint::max();
  // MIG on demand (control/mig_desk.h), for a node whose agent re-plans MIG: the changes
  // ordered and not yet reported by a registration (by physical GPU: the GPU reconfiguring,
  // none of its instances given to jobs), instances held from new jobs until the window after
  // (the busy instances a change waits for), and GPUs left alone after a change failed.
  struct MigOrdered {
    MigOrder order;
    TimePoint at{};
  };
  std::map<int, MigOrdered> mig_reconfiguring;
  std::set<int> mig_held;                     // GPU indices
  std::map<int, TimePoint> mig_failed_until;  // physical GPU -> left alone until
};

// The node's state as users see it: ready, drained (ready, with an admin's drain), lost,
// awaiting (known from a kept drain, not registered yet) or suspended; autoscaling's own
// states (resuming, suspending, failed) are the Autoscaler's to show.
NodeState ShownState(const NodeRecord& node);

class NodeTable {
 public:
  NodeRecord* Find(const std::string& name);
  const NodeRecord* Find(const std::string& name) const;
  // The node, added (awaiting its agent) if it was not known; `added` says which.
  NodeRecord& Ensure(const std::string& name, bool* added = nullptr);

  // A new session for an agent registering now: its outbox and numbering start over, and a
  // poll it had parked is answered empty.
  uint64_t StartSession(NodeRecord& node, TimePoint now);
  // Numbers `order` and queues it in the node's outbox; a parked poll gets it at the batch's end.
  void Send(NodeRecord& node, Order order);
  // An agent's poll, acknowledging the orders up to `after`: the orders still waiting, or none
  // and the poll parked (answered later by a delivery, or empty once it has waited its time:
  // see PollWait). An earlier parked poll is answered empty.
  std::optional<std::vector<Order>> Poll(NodeRecord& node, uint64_t after, uint64_t poll_id,
                                         TimePoint now, Duration timeout);
  // Answers the node's parked poll empty and drops its orders (the node is lost).
  void Disconnect(NodeRecord& node);
  // Answers parked polls that waited their time empty, so that agents poll again. Looks only
  // at the polls due (the soonest first), so it can run at every batch's end: ten thousand
  // agents' polls then expire a few at a time, not hundreds at once at each tick.
  void ExpirePolls(TimePoint now);
  // How long poll `poll_id` of `session` waits before it is answered empty: from half of
  // `timeout` to all of it, spread by the two numbers (the same each time). Agents that
  // registered together (a controller's start, a failover) would otherwise poll again
  // together every `timeout`, for ever: at ten thousand agents, waves of over a thousand
  // answers a second that held submits behind them (docs/performance.md). Each wait drawn
  // anew spreads them over the whole interval within a few rounds.
  static Duration PollWait(uint64_t session, uint64_t poll_id, Duration timeout);
  // The batch's deliveries: parked polls answered with the orders now waiting, and those
  // answered empty since the last call.
  std::vector<Delivery> TakeDeliveries();

  auto begin() { return nodes_.begin(); }
  auto end() { return nodes_.end(); }
  size_t size() const { return nodes_.size(); }
  auto begin() const { return nodes_.begin(); }
  auto end() const { return nodes_.end(); }

 private:
  void Unpark(NodeRecord& node);

  std::map<std::string, NodeRecord> nodes_;  // never erased: pointers to records stay valid
  uint64_t session_counter_ = 0;
  std::vector<Delivery> deliveries_;
  // Nodes sent an order while their poll was parked: what TakeDeliveries answers, instead of a
  // walk of every node at every batch's end. May hold a node twice, or one answered since.
  std::vector<NodeRecord*> to_deliver_;
  // Parked polls, a heap with the soonest due on top: when each parked and is due, where, and
  // which poll (an entry whose poll was answered since is skipped when its time comes).
  struct Parked {
    TimePoint at;
    TimePoint due;
    NodeRecord* node;
    uint64_t poll_id;
  };
  static bool DueLater(const Parked& a, const Parked& b) { return a.due > b.due; }
  std::vector<Parked> parked_;
};

}  // namespace baton::control
