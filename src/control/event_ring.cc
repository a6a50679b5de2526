#include "control/event_ring.h"

#include <algorithm>

namespace baton::control {

void EventRing::Raise(ClusterEvent event, TimePoint now) {
  event.seq = next_seq_++;
  event.at = now;
  kept_.push_back(event);
  if (kept_.size() > capacity_) kept_.pop_front();
  new_.push_back(std::move(event));
}

void EventRing::Restore(std::vector<ClusterEvent> events) {
  kept_.clear();
  for (ClusterEvent& e : events) {
    if (!kept_.empty() && e.seq <= kept_.back().seq) continue;  // ascending, each once
    kept_.push_back(std::move(e));
    if (kept_.size() > capacity_) kept_.pop_front();
  }
  next_seq_ = first_seq_ = kept_.empty() ? 1 : kept_.back().seq + 1;
}

std::vector<ClusterEvent> EventRing::After(int64_t after, int limit) const {
  if (after >= next_seq_) after = 0;
  auto it = std::upper_bound(kept_.begin(), kept_.end(), after,
                             [](int64_t seq, const ClusterEvent& e) { return seq < e.seq; });
  std::vector<ClusterEvent> out;
  for (; it != kept_.end() && static_cast<int>(out.size()) < limit; ++it) out.push_back(*it);
  return out;
}

std::vector<ClusterEvent> EventRing::TakeNew() {
  std::vector<ClusterEvent> out = std::move(new_);
  new_.clear();
  return out;
}

}  // namespace baton::control
