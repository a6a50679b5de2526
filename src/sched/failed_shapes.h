// The requests that failed to fit in a pass (scheduler.cc), and what their waits say. The view
// only fills during a pass, so a request of a shape (resources and pool) that failed fails
// again, unless its job would end sooner than the one that failed and may use a hole before a
// reservation: the pass places each shape once, and words it once.
#pragma once

#include <string>
#include <vector>

#include "sched/pass.h"
#include "sched/placement.h"

namespace baton::sched {

struct FailedShape {
  const Resources* r = nullptr;
  const std::string* pool = nullptr;
  bool never = false;           // no node of the pool could ever hold it
  TimePoint until{};            // the soonest end of a job of this shape that did not fit
  std::string words;            // what its waits say (none past the explained waits)
  int text = -1;                // words' index in PassResult::texts, once a wait said them
  bool untimed_failed = false;  // no node to hold for it (Untimed), for the rest of the pass
  int shadow_none_at = -1;      // the pass's count of changes when Shadow last found nothing
};

class FailedShapes {
 public:
  // Shapes kept; the rest are worked out again for each job (a pass rarely sees more).
  static constexpr size_t kKept = 32;

  FailedShapes() { shapes_.reserve(kKept); }

  // The shape of `r` in `pool` that failed this pass, or nullptr.
  FailedShape* Find(const Resources& r, const std::string* pool) {
    for (FailedShape& s : shapes_) {
      if (SamePool(s.pool, pool) && *s.r == r) return &s;
    }
    return nullptr;
  }
  // Keeps `shape`; nullptr when kKept are kept already. What Find returned stays valid.
  FailedShape* Keep(const FailedShape& shape) {
    if (shapes_.size() >= kKept) return nullptr;
    shapes_.push_back(shape);
    return &shapes_.back();
  }

 private:
  std::vector<FailedShape> shapes_;
};

// Which nodes of a pass's view refuse some jobs: root's (their agents refuse them), all but
// preemptible ones (spot nodes), or fractions of GPUs another user shares (MPS nodes).
struct Refusing {
  bool root = false;
  bool spot = false;
  bool mps = false;
};

// What a job that does not fit now waits for, in words: no node of its pool can ever hold it
// (`never`); for a job some nodes refuse (root's, where nodes refuse root's jobs; one that is
// not preemptible, where there are spot nodes), the free GPUs of the others and why they do;
// else the pool's free GPUs and, with `shortfall`, what part of it is short; for a fraction,
// where MPS nodes are, how much of that other users' jobs share.
std::string NoFitWords(const Placer& placer, const PendingJob& job, const PlaceRules& rules,
                       bool never, Refusing refusing, bool shortfall);

}  // namespace baton::sched
