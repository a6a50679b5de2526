#include "agent/job_lease.h"

#include <algorithm>
#include <chrono>

namespace baton::agent {

std::optional<int64_t> JobLease::Renewal(int64_t sent_ms) const {
  if (fence_ms_ <= 0) return std::nullopt;
  const int64_t deadline = sent_ms + fence_ms_;
  if (deadline < deadline_ms_ + 1000) return std::nullopt;
  return deadline;
}

bool JobLease::Written(int64_t deadline_ms) {
  deadline_ms_ = deadline_ms;
  const bool was_out = run_out_;
  run_out_ = false;
  return was_out;
}

bool JobLease::RunOut(int64_t now_ms) {
  if (run_out_ || deadline_ms_ == 0 || now_ms < deadline_ms_) return false;
  run_out_ = true;
  return true;
}

std::optional<Duration> JobLease::ContactCap() const {
  if (fence_ms_ <= 0) return std::nullopt;
  return std::clamp<Duration>(std::chrono::milliseconds(fence_ms_ / 10), std::chrono::seconds(1),
                              std::chrono::seconds(30));
}

}  // namespace baton::agent
