// The jobs' lease, the agent's side of the fence (PRODUCT.md: a node that has reached no
// controller for the node timeout stops its jobs, so that a controller may run them elsewhere
// without a job running twice). Each time the agent reaches a controller it renews the lease:
// a deadline, the time the request was sent plus the fence, that it writes to run/lease,
// where every job's shim reads it and stops its job once it has passed (SIGTERM, SIGKILL the
// grace later). A value the agent drives with the boot clock's milliseconds (CLOCK_BOOTTIME,
// which counts a suspended machine's sleep, as the shims' does); the agent writes the file
// and the log lines.
#pragma once

#include <cstdint>
#include <optional>

#include "core/time.h"

namespace baton::agent {

class JobLease {
 public:
  // What the controller said at registration (milliseconds); a fence of 0: none.
  void Set(int64_t fence_ms, int64_t grace_ms) {
    fence_ms_ = fence_ms;
    grace_ms_ = grace_ms;
  }
  int64_t fence_ms() const { return fence_ms_; }
  int64_t grace_ms() const { return grace_ms_; }

  // A request sent at boot time `sent_ms` reached a controller: the deadline to write
  // (sent + fence), or none when there is no fence or it would move the last one written by
  // less than a second (the file is written about once a second at most).
  std::optional<int64_t> Renewal(int64_t sent_ms) const;
  // The deadline is written: whether the lease had run out before (the agent says it is
  // renewed).
  bool Written(int64_t deadline_ms);
  // At boot time `now_ms`: true once when the lease has run out (the agent says the shims are
  // stopping the jobs), again only after a renewal.
  bool RunOut(int64_t now_ms);
  // The longest wait between tries to reach a controller: ten tries within the fence (1 s to
  // 30 s), so that a controller back well within its node timeout is reached before any job
  // is stopped; none without a fence.
  std::optional<Duration> ContactCap() const;

 private:
  int64_t fence_ms_ = 0;
  int64_t grace_ms_ = 0;
  int64_t deadline_ms_ = 0;  // the last deadline written; 0: none
  bool run_out_ = false;     // said to have run out, not renewed since
};

}  // namespace baton::agent
