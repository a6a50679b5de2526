#include "agent/job_end.h"

#include <chrono>

#include "core/quantity.h"

namespace baton::agent {

std::string OomWords(int64_t memory_bytes) {
  return memory_bytes > 0 ? "killed by the out-of-memory killer at its memory limit of " +
                                FormatSize(memory_bytes)
                          : "killed by the out-of-memory killer";
}

JobEvent EndEvent(const LaunchOrder& order, const EndFacts& facts, const std::string& node,
                  TimePoint now) {
  const ExitStatus status = facts.status.value_or(ExitStatus{});
  JobEvent e{.job = order.job,
             .attempt = order.attempt,
             .kind = JobEvent::Kind::kExited,
             .at = now,
             .exit_code = status.exit_code,
             .signal = status.signal,
             .timed_out = facts.timed_out,
             // Stopped by its fence: whatever a controller made of it meanwhile, it did not fail.
             .lost = !facts.status || status.fenced,
             .launch_failed = status.unstarted};
  if (status.unstarted) e.message = facts.shims_words;
  if (status.fenced) {
    e.message = "stopped on node " + node + ", which reached no controller for " +
                FormatDuration(std::chrono::milliseconds(facts.fence_ms)) + " (its fence)";
  }
  if (facts.oom_killed) e.message = OomWords(order.memory_bytes);
  return e;
}

}  // namespace baton::agent
