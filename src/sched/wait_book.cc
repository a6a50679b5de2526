#include "sched/wait_book.h"

namespace baton::sched {

void WaitBook::Wait(const PendingJob& job, WaitReason reason, std::string words,
                    std::optional<TimePoint> at) {
  if (Explaining()) {
    if (result_.texts.empty() || result_.texts.back() != words)
      result_.texts.push_back(std::move(words));
    Explain(job, reason, static_cast<uint32_t>(result_.texts.size() - 1), at);
  }
  ++ahead_;
}

}  // namespace baton::sched
