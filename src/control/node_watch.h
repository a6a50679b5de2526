// Silent agents and their fences: which nodes have said nothing for the node timeout at a
// tick (lost), when a lost node's agent has surely stopped its jobs (its fence), and which
// lost nodes' fences have passed, so that their jobs go back to the queue and never run
// twice (docs/architecture.md, "Never two copies of a job"). A walk of the nodes is made only
// when one may be due: none was last seen before the bound the last walk made, and a node
// that joins or comes back resets it (Reset). Verdicts the controller acts on. Owned by the
// Controller; not thread-safe.
#pragma once

#include <algorithm>
#include <optional>
#include <vector>

#include "control/node_table.h"
#include "core/time.h"

namespace baton::control {

class NodeWatch {
 public:
  NodeWatch(Duration node_timeout, Duration fence_grace)
      : node_timeout_(node_timeout), fence_grace_(fence_grace) {}

  // When an agent last seen at `last_seen` has surely stopped its jobs: its fence (SIGTERM at
  // node_timeout after its last contact, which is no later than last_seen; SIGKILL
  // fence_grace later), plus the shims' one-second look at their lease and 2 % for clocks that
  // run at slightly different rates.
  TimePoint FenceEnds(TimePoint last_seen) const {
    Duration fence = node_timeout_ + fence_grace_;
    return last_seen + fence + fence / 50 + std::chrono::seconds(2);
  }

  // A node joined, came back or is new: the next tick walks the nodes.
  void Reset() { seen_since_.reset(); }

  // The nodes not lost that have been silent for longer than the node timeout at `now`, in
  // name order, to be marked lost (then Lost); none without a walk when none may be.
  std::vector<NodeRecord*> Silent(NodeTable& nodes, TimePoint now);
  // A node marked lost: its jobs are due to be requeued at its fence's end (requeue_at).
  void Lost(NodeRecord& node) {
    node.requeue_at = FenceEnds(node.last_seen);
    next_requeue_ = std::min(next_requeue_, node.requeue_at);
  }
  // The lost nodes whose fence has passed by `now`, in name order: their jobs go back.
  std::vector<NodeRecord*> Fenced(NodeTable& nodes, TimePoint now);

 private:
  Duration node_timeout_;
  Duration fence_grace_;
  // Every node that is not lost was last seen at or after this (none: not known).
  std::optional<TimePoint> seen_since_;
  // The earliest time a lost node's jobs are due to be requeued (NodeRecord::requeue_at).
  TimePoint next_requeue_ = TimePoint::max();
};

}  // namespace baton::control
