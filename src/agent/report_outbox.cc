#include "agent/report_outbox.h"

#include <cstddef>

namespace baton::agent {

ReportOutbox::Draft ReportOutbox::Compose(
    const std::function<bool(const JobAttempt& job)>& end_waits) const {
  Draft draft;
  std::set<JobAttempt> held;
  for (size_t i = 0; i < events_.size(); ++i) {
    const JobEvent& e = events_[i];
    const JobAttempt key{e.job, e.attempt};
    if (held.count(key)) continue;
    if (e.kind == JobEvent::Kind::kExited) {
      if (end_waits(key)) {
        held.insert(key);
        continue;
      }
      draft.ends.insert(key);
    }
    draft.sent.push_back(i);
    draft.events.push_back(e);
  }
  draft.notices = notices_;
  draft.health = health_changed_;
  return draft;
}

void ReportOutbox::Acknowledged(const Draft& draft) {
  for (auto i = draft.sent.rbegin(); i != draft.sent.rend(); ++i)
    events_.erase(events_.begin() + static_cast<std::ptrdiff_t>(*i));
  notices_.erase(notices_.begin(),
                 notices_.begin() + static_cast<std::ptrdiff_t>(draft.notices.size()));
  // The loop is single-threaded: nothing changed between the draft and its acknowledgement.
  if (draft.health) health_changed_ = false;
}

void ReportOutbox::Registered(const std::set<JobAttempt>& held) {
  std::erase_if(events_, [&](const JobEvent& e) {
    return !held.count(JobAttempt{e.job, e.attempt});
  });
  health_changed_ = false;
}

}  // namespace baton::agent
