// The controller's cluster events (GPU faults, lost nodes, failed jobs, budget alerts): the
// latest `capacity` kept in memory for GET /v1/events, numbered from 1 in each run, and those
// raised in the current batch, which the batch's Effects hand to the log and the alert hooks.
// Not stored: events describe this run. Owned by the Controller; not thread-safe.
#pragma once

#include <cstddef>
#include <deque>
#include <vector>

#include "core/event.h"

namespace baton::control {

class EventRing {
 public:
  static constexpr size_t kDefaultCapacity = 10000;
  explicit EventRing(size_t capacity = kDefaultCapacity) : capacity_(capacity) {}

  // Numbers the event, stamps it with `now`, keeps it, and adds it to the batch's new events.
  void Raise(ClusterEvent event, TimePoint now);
  // The events the store kept (ascending seq): kept again, and numbering goes on after them.
  void Restore(std::vector<ClusterEvent> events);
  // Up to `limit` kept events numbered after `after`, oldest first. A number not handed out yet
  // belongs to another store (numbers start again at 1 in an empty one): every kept event then.
  std::vector<ClusterEvent> After(int64_t after, int limit) const;
  // The events raised since the last call (the batch's).
  std::vector<ClusterEvent> TakeNew();
  // Events raised in this run.
  int64_t raised() const { return next_seq_ - first_seq_; }

 private:
  size_t capacity_;
  std::deque<ClusterEvent> kept_;
  int64_t next_seq_ = 1;
  int64_t first_seq_ = 1;  // the first number of this run
  std::vector<ClusterEvent> new_;
};

}  // namespace baton::control
