// The waits of a pass (scheduler.cc): every job that does not start is counted, so that each
// knows how many jobs ahead of it wait too, and the first `explained` of them are told why
// (PassResult::waits), in words each said once a pass (PassResult::texts).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sched/pass.h"

namespace baton::sched {

class WaitBook {
 public:
  // `ahead`: the jobs counted before this pass's walk (PassInput::ahead); `pending` the jobs
  // the waits' indices point into.
  WaitBook(PassResult& result, const std::vector<PendingJob>& pending, int explained, int ahead)
      : result_(result), pending_(pending), explained_(std::max(explained, 0)), ahead_(ahead) {}

  // Jobs counted so far: those ahead of the next in the pass's order that did not start.
  int ahead() const { return ahead_; }
  // Whether the next job that waits gets a reason; once false, false for the rest of the pass.
  bool Explaining() const { return ahead_ < explained_; }
  // Jobs that wait without a word (deep in the queue, or a whole group of them).
  void Count(int jobs = 1) { ahead_ += jobs; }

  // A job that waits, with words of its own: consecutive jobs with the same words share them
  // (quota reasons repeat from job to job of one user).
  void Wait(const PendingJob& job, WaitReason reason, std::string words,
            std::optional<TimePoint> at = std::nullopt);
  // A job that waits with words already kept, PassResult::texts[text].
  void Wait(const PendingJob& job, WaitReason reason, uint32_t text,
            std::optional<TimePoint> at = std::nullopt) {
    if (Explaining()) Explain(job, reason, text, at);
    ++ahead_;
  }
  // The index in PassResult::texts of words said at most once a pass, made by `words()` on
  // first need; `cached` keeps it (-1 until then).
  template <typename Words>
  uint32_t TextOnce(int& cached, const Words& words) {
    if (cached < 0) {
      result_.texts.push_back(words());
      cached = static_cast<int>(result_.texts.size() - 1);
    }
    return static_cast<uint32_t>(cached);
  }

 private:
  void Explain(const PendingJob& job, WaitReason reason, uint32_t text,
               std::optional<TimePoint> at) {
    result_.waits.push_back(sched::Wait{.id = job.id,
                                        .reason = reason,
                                        .text = text,
                                        .ahead = ahead_,
                                        .estimated_start = at,
                                        .index = static_cast<uint32_t>(&job - pending_.data())});
  }

  PassResult& result_;
  const std::vector<PendingJob>& pending_;
  const int explained_;
  int ahead_;
};

}  // namespace baton::sched
