// The agent's side of a job's output limit (log_plan.h says what is kept and shipped): the
// log's next chunk for a report, and the node's copy bounded (the marker written, the middle
// freed) as the log grows.
#include <algorithm>

#include "agent/agent.h"
#include "agent/log_plan.h"

namespace baton::agent {

LogPlan Agent::PlanOf(const RunningJob& job) const {
  return PlanLog(SizeOf(JobDir(job.order.job) + "/output.log"), job.order.output_limit, job.exited,
                 options_.name);
}

bool Agent::LogWaiting(const RunningJob& job) const {
  return agent::LogWaiting(PlanOf(job), LogShipped{.head = job.log_shipped, .tail = job.tail_sent});
}

Result<std::optional<std::pair<LogChunk, bool>>> Agent::NextLogChunk(const RunningJob& job,
                                                                     size_t max) {
  using Next = std::optional<std::pair<LogChunk, bool>>;
  const std::string log = JobDir(job.order.job) + "/output.log";
  LogPlan p = PlanOf(job);
  if (job.log_shipped < p.head) {
    size_t want = std::min<size_t>(max, static_cast<size_t>(p.head - job.log_shipped));
    ASSIGN_OR_RETURN(std::string data, env_.ReadRange(log, job.log_shipped, want));
    if (data.empty()) return Next();
    return Next(
        {LogChunk{.job = job.order.job, .offset = job.log_shipped, .data = std::move(data)}, true});
  }
  if (job.tail_sent >= p.tail) return Next();
  // The marker, then the tail, right after the head in the controller's copy.
  const int64_t marker = static_cast<int64_t>(p.marker.size());
  std::string data;
  if (job.tail_sent < marker) data = p.marker.substr(static_cast<size_t>(job.tail_sent), max);
  if (data.size() < max) {
    int64_t into_tail = std::max<int64_t>(0, job.tail_sent - marker);
    ASSIGN_OR_RETURN(std::string tail,
                     env_.ReadRange(log, p.tail_from + into_tail, max - data.size()));
    data += tail;
  }
  if (data.empty()) return Next();
  return Next(
      {LogChunk{.job = job.order.job, .offset = p.head + job.tail_sent, .data = data}, false});
}

void Agent::EnforceOutputLimit(RunningJob& job, TimePoint now) {
  const int64_t limit = job.order.output_limit;
  if (limit <= 0) return;
  LogPlan p = PlanOf(job);
  if (!p.over) return;
  const std::string log = JobDir(job.order.job) + "/output.log";
  if (!job.limit_told) {
    job.limit_told = true;
    if (Status st = env_.WriteAt(log, p.head, NodeMarker(limit)); !st.ok())
      LogWarn(st.message(), Context(job.order.job));
    outbox_.Add(JobEvent{.job = job.order.job,
                         .attempt = job.order.attempt,
                         .kind = JobEvent::Kind::kOutputLimit,
                         .at = now,
                         .message = LimitMessage(limit, options_.name)});
  }
  if (job.punch_failed) return;
  std::optional<std::pair<int64_t, int64_t>> punch = PunchRange(p, limit, job.punched_to);
  if (!punch) return;
  auto [from, to] = *punch;
  if (Status st = env_.PunchHole(log, from, to - from); !st.ok()) {
    // Said once: the job's output then fills the disk as it would without a limit, though
    // the controller still gets only its head and tail.
    job.punch_failed = true;
    LogWarn("job " + job.order.job.ToString() + ": " + st.message() +
                ": its log grows on this node past its output limit",
            Context(job.order.job));
    return;
  }
  job.punched_to = to;
}

}  // namespace baton::agent
