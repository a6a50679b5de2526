// What the agent owes the controller, kept until a report that carries it is acknowledged:
// the jobs' events in the order they happened, the GPU health notices, and whether the GPUs'
// health changed since the controller last had it. A value the agent's main loop fills and
// drains (agent.cc: SendReport); the report's logs and the request are the agent's.
//
// A job's end is told only with the last of its output: a `baton wait` that sees the job
// ended then finds its whole log on the controller (issue 16: a 2.6 MB log was cut at 256 KiB
// right after the end). Later events of a job whose end waits, wait with it.
#pragma once

#include <cstddef>
#include <functional>
#include <set>
#include <vector>

#include "core/ids.h"
#include "core/protocol.h"

namespace baton::agent {

class ReportOutbox {
 public:
  void Add(JobEvent event) { events_.push_back(std::move(event)); }
  void Notice(GpuNotice notice) { notices_.push_back(std::move(notice)); }
  // `changed`: the GPUs' health changed (a sample, an XID, a readmission).
  void HealthChanged(bool changed) { health_changed_ |= changed; }

  size_t events() const { return events_.size(); }
  // Whether there is health to tell: a change, or a notice.
  bool health_news() const { return health_changed_ || !notices_.empty(); }

  // What the next report carries.
  struct Draft {
    std::vector<JobEvent> events;
    std::vector<GpuNotice> notices;
    bool health = false;        // the report carries the GPUs' health
    std::set<JobAttempt> ends;  // the jobs whose end it carries
    std::vector<size_t> sent;   // the events' places in the outbox
  };
  // Every event, but a job's end (and its later events) while `end_waits` says the report does
  // not carry the last of its output; every notice; the health if it changed.
  Draft Compose(const std::function<bool(const JobAttempt& job)>& end_waits) const;
  // The controller acknowledged the report of `draft`: what it carried is owed no more.
  void Acknowledged(const Draft& draft);
  // A registration told the controller every job and the GPUs' health: the events and the
  // health change are owed no more (the notices still are), but for the jobs in `held`, whose
  // end it did not tell because the controller lacks some of their output.
  void Registered(const std::set<JobAttempt>& held = {});

 private:
  std::vector<JobEvent> events_;
  std::vector<GpuNotice> notices_;
  bool health_changed_ = false;
};

}  // namespace baton::agent
