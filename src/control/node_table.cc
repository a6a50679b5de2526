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
                                                  uint64_t poll_id, TimePoint now,
                                                  Duration timeout) {
  while (!node.outbox.empty() && node.outbox.front().seq <= after) node.outbox.pop_front();
  Unpark(node);
  if (!node.outbox.empty()) return std::vector<Order>(node.outbox.begin(), node.outbox.end());
  node.parked_poll = poll_id;
  node.parked_at = now;
  const Duration wait = PollWait(node.session, poll_id, timeout);
  parked_.push_back(Parked{.at = now, .due = now + wait, .node = &node, .poll_id = poll_id});
  std::push_heap(parked_.begin(), parked_.end(), DueLater);
  return std::nullopt;
}

Duration NodeTable::PollWait(uint64_t session, uint64_t poll_id, Duration timeout) {
  if (timeout >= kMaxDuration) return timeout;             // never (the simulator's)
  uint64_t z = session * 0x9e3779b97f4a7c15ULL + poll_id;  // splitmix64
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  const Duration half = timeout / 2;
  return timeout - half + Duration(static_cast<Duration::rep>(z % (half.count() + 1)));
}

void NodeTable::Disconnect(NodeRecord& node) {
  Unpark(node);
  node.outbox.clear();
}

void NodeTable::ExpirePolls(TimePoint now) {
  // A clock set back makes the soonest look young for as long as it went back: it is due then.
  while (!parked_.empty() && (parked_.front().due <= now || now < parked_.front().at)) {
    std::pop_heap(parked_.begin(), parked_.end(), DueLater);
    const Parked p = parked_.back();
    parked_.pop_back();
    if (p.node->parked_poll == p.poll_id) Unpark(*p.node);
  }
  // Entries of polls answered since stay until their time: with a long timeout (the
  // simulator's never comes) they would pile up. Past twice the nodes, only the polls still
  // parked are kept.
  if (parked_.size() > 2 * nodes_.size() + 1024) {
    std::erase_if(parked_, [](const Parked& p) { return p.node->parked_poll != p.poll_id; });
    std::make_heap(parked_.begin(), parked_.end(), DueLater);
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
