// Idle sessions of the interactive pools that reclaim them (a pool's idle_timeout,
// docs/operations.md): since when each running session has been idle (no client attached, its
// GPUs below the pool's threshold in their latest samples) and whether it was warned, and what
// to do about each at a tick, as verdicts the controller acts on. Not stored: a restarted
// controller starts their clocks again. Owned by the Controller; not thread-safe.
#pragma once

#include <map>
#include <vector>

#include "control/node_table.h"
#include "core/job.h"
#include "core/policy.h"

namespace baton::control {

class IdleSessions {
 public:
  struct Verdict {
    enum class Kind {
      kWarn,  // say so in its terminal: it is stopped in `left` unless used
      kStop,  // idle for the pool's idle_timeout: cancel it
    };
    Kind kind = Kind::kWarn;
    Job* job = nullptr;
    const PoolPolicy* pool = nullptr;
    Duration idle_for{0};
    Duration left{0};
  };

  // Whether any pool of `policy` reclaims idle sessions (else there is nothing to review).
  static bool AnyPoolReclaims(const Policy& policy);
  // Forgets every session's clock (no pool reclaims any more).
  void Clear() { idle_.clear(); }

  // Reviews `sessions` (every running interactive job, in id order) at `now`: a session seen
  // first, or in use, starts its clock again; one idle past its pool's warning is warned once,
  // one idle for its pool's timeout is stopped (and forgotten). The clocks of sessions that no
  // longer run are forgotten. Jobs being stopped or preempted are left alone.
  std::vector<Verdict> Review(const Policy& policy, const std::vector<Job*>& sessions,
                              const NodeTable& nodes, TimePoint now);

  size_t size() const { return idle_.size(); }

 private:
  struct Idle {
    TimePoint since{};
    bool warned = false;
  };
  std::map<JobId, Idle> idle_;
};

}  // namespace baton::control
