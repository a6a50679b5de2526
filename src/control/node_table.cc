#include "control/node_table.h"

#include <algorithm>

namespace baton::control {

NodeRecord* NodeTable::Find(const std::string& name) {
  auto it = nodes_.find(name);
  return it == nodes_.end() ? nullptr : &it->second;
}

const NodeRecord* NodeTable::Find(const std::string& name) const {
  auto it = nodes_.find(name);
  return it == nodes_.end() ? nullptr : &it->second;
}

NodeRecord& NodeTable::Ensure(const std::string& name, bool* added) {
  auto [it, inserted] = nodes_.try_emplace(name);
  if (inserted) it->second.info.name = name;
  if (added != nullptr) *added = inserted;
  return it->second;
}

void NodeTable::Unpark(NodeRecord& node) {
  if (!node.parked_poll) return;
  deliveries_.push_back(Delivery{.poll_id = *node.parked_poll});
  node.parked_poll.reset();
}

uint64_t NodeTable::StartSession(NodeRecord& node, TimePoint now) {
  Unpark(node);
  // Unique across restarts too: the time in the high bits, a counter in the low ones.
  node.session = ++session_counter_ + (static_cast<uint64_t>(ToMillis(now)) << 16);
  node.outbox.clear();
  node.next_seq = 1;
  return node.session;
}

void NodeTable::Send(NodeRecord& node, Order order) {
  order.seq = node.next_seq++;
  node.outbox.push_back(std::move(order));
  // A poll parks only on an empty outbox, so a parked poll has orders to take only from here.
  if (node.parked_poll) to_deliver_.push_back(&node);
}

std::optional<std::vector<Order>> NodeTable::Poll(NodeRecord& node, uint64_t after,
                                                  uint64_t poll_id, TimePoint now) {
  while (!node.outbox.empty() && node.outbox.front().seq <= after) node.outbox.pop_front();
  Unpark(node);
  if (!node.outbox.empty()) return std::vector<Order>(node.outbox.begin(), node.outbox.end());
  node.parked_poll = poll_id;
  node.parked_at = now;
  first_parked_ = std::min(first_parked_, now);
  return std::nullopt;
}

void NodeTable::Disconnect(NodeRecord& node) {
  Unpark(node);
  node.outbox.clear();
}

void NodeTable::ExpirePolls(TimePoint now, Duration timeout) {
  if (first_parked_ == TimePoint::max() || now - first_parked_ < timeout) return;
  first_parked_ = TimePoint::max();
  for (auto& [name, node] : nodes_) {
    if (node.parked_poll && now - node.parked_at >= timeout) Unpark(node);
    if (node.parked_poll) first_parked_ = std::min(first_parked_, node.parked_at);
  }
}

std::vector<Delivery> NodeTable::TakeDeliveries() {
  // In the order of the nodes' names, as a walk of the table gave them: the simulator's
  // decisions follow the order in which agents poll again.
  std::sort(to_deliver_.begin(), to_deliver_.end(),
            [](const NodeRecord* a, const NodeRecord* b) { return a->info.name < b->info.name; });
  for (NodeRecord* node : to_deliver_) {
    if (node->parked_poll && !node->outbox.empty()) {
      deliveries_.push_back(Delivery{.poll_id = *node->parked_poll,
                                     .orders = {node->outbox.begin(), node->outbox.end()}});
      node->parked_poll.reset();
    }
  }
  to_deliver_.clear();
  std::vector<Delivery> out = std::move(deliveries_);
  deliveries_.clear();
  return out;
}

NodeState ShownState(const NodeRecord& node) {
  switch (node.state) {
    case NodeRecord::State::kReady:
      return node.drain_reason.empty() && !node.reclaim ? NodeState::kReady : NodeState::kDrained;
    case NodeRecord::State::kLost:
      return NodeState::kLost;
    case NodeRecord::State::kSuspended:
      return NodeState::kSuspended;
    case NodeRecord::State::kAwaiting:
      break;
  }
  return NodeState::kAwaiting;
}

}  // namespace baton::control
