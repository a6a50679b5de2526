#include "control/node_watch.h"

#include <algorithm>

namespace baton::control {

std::vector<NodeRecord*> NodeWatch::Silent(NodeTable& nodes, TimePoint now) {
  std::vector<NodeRecord*> silent;
  if (seen_since_ && now - *seen_since_ <= node_timeout_) return silent;
  TimePoint since = TimePoint::max();
  for (auto& [name, node] : nodes) {
    if (node.state == NodeRecord::State::kLost || node.state == NodeRecord::State::kSuspended)
      continue;
    if (now - node.last_seen > node_timeout_) {
      silent.push_back(&node);  // lost once the controller has marked it
      continue;
    }
    since = std::min(since, node.last_seen);
  }
  seen_since_ = since;
  return silent;
}

std::vector<NodeRecord*> NodeWatch::Fenced(NodeTable& nodes, TimePoint now) {
  std::vector<NodeRecord*> fenced;
  if (now < next_requeue_) return fenced;
  next_requeue_ = TimePoint::max();
  for (auto& [name, node] : nodes) {
    if (node.state != NodeRecord::State::kLost || node.requeue_at == TimePoint::max()) continue;
    if (node.requeue_at > now) {
      next_requeue_ = std::min(next_requeue_, node.requeue_at);
      continue;
    }
    fenced.push_back(&node);
  }
  return fenced;
}

}  // namespace baton::control
