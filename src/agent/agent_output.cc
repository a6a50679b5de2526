// A job's output past its limit (LaunchOrder::output_limit, docs/operations.md "Job output").
// The job writes its log directly (the shim hands it the file), so nothing slows a job that
// prints a lot; the agent bounds what it costs. Once the log passes the limit, the node keeps
// its first half (the head) as it is, writes a marker after it, and frees the middle of the
// file as it grows (a punched hole: the file's size grows on, its disk use does not), keeping
// the last half (the tail). The controller gets the head as the job runs, and, once the job
// has ended, a marker saying what was dropped and the tail, right after the head: its copy of
// the log is head, marker, tail, and the offsets it is read by only grow, as the API promises.
// Everything here follows from the limit and the log's size, so an agent that restarts
// ships the same bytes at the same offsets again.
#include <algorithm>

#include "agent/agent.h"
#include "core/quantity.h"

namespace baton::agent {
namespace {

constexpr int64_t kPunchStep = 1 << 20;  // frees the middle a MiB or more at a time

int64_t HeadOf(int64_t limit) { return limit / 2; }
int64_t TailOf(int64_t limit) { return limit - limit / 2; }

// Written into the node's log right after the head while the job runs.
std::string NodeMarker(int64_t limit) {
  return "\n[baton: the output past its first " + FormatSize(HeadOf(limit)) +
         " is dropped here; its last " + FormatSize(TailOf(limit)) +
         " is kept at the end of this file (output limit " + FormatSize(limit) + ")]\n";
}

}  // namespace

Agent::LogPlan Agent::PlanLog(const RunningJob& job) const {
  LogPlan p;
  p.size = SizeOf(JobDir(job.order.job) + "/output.log");
  p.head = p.size;
  const int64_t limit = job.order.output_limit;
  const int64_t node_marker = limit > 0 ? static_cast<int64_t>(NodeMarker(limit).size()) : 0;
  if (limit <= 0 || p.size <= limit + node_marker) return p;
  p.over = true;
  p.head = HeadOf(limit);
  p.tail_from = std::max(p.head + node_marker, p.size - TailOf(limit));
  if (job.exited) {
    const int64_t dropped = p.tail_from - p.head;
    p.marker = "\n[baton: " + std::to_string(dropped) + " bytes (" + FormatSize(dropped) +
               ") of output dropped here, past the job's output limit of " + FormatSize(limit) +
               " on node " + options_.name + ": its log keeps its first " + FormatSize(p.head) +
               " and its last " + FormatSize(TailOf(limit)) + "]\n";
    // At least as long as the node's marker: the controller may have had that much past the
    // head before the log went over, and the marker and tail must cover it.
    if (p.marker.size() < static_cast<size_t>(node_marker))
      p.marker.insert(p.marker.size() - 1, static_cast<size_t>(node_marker) - p.marker.size(), ' ');
    p.tail = static_cast<int64_t>(p.marker.size()) + (p.size - p.tail_from);
  }
  return p;
}

bool Agent::LogWaiting(const RunningJob& job) const {
  LogPlan p = PlanLog(job);
  return job.log_shipped < p.head || job.tail_sent < p.tail;
}

Result<std::optional<std::pair<LogChunk, bool>>> Agent::NextLogChunk(const RunningJob& job,
                                                                     size_t max) {
  using Next = std::optional<std::pair<LogChunk, bool>>;
  const std::string log = JobDir(job.order.job) + "/output.log";
  LogPlan p = PlanLog(job);
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
  LogPlan p = PlanLog(job);
  if (!p.over) return;
  const std::string log = JobDir(job.order.job) + "/output.log";
  const std::string marker = NodeMarker(limit);
  if (!job.limit_told) {
    job.limit_told = true;
    if (Status st = env_.WriteAt(log, p.head, marker); !st.ok())
      LogWarn(st.message(), Context(job.order.job));
    outbox_.Add(JobEvent{.job = job.order.job,
                         .attempt = job.order.attempt,
                         .kind = JobEvent::Kind::kOutputLimit,
                         .at = now,
                         .message = "its output on node " + options_.name +
                                    " passed its limit of " + FormatSize(limit) +
                                    ": the log keeps its first " + FormatSize(HeadOf(limit)) +
                                    " and its last " + FormatSize(TailOf(limit))});
  }
  const int64_t from = std::max(job.punched_to, p.head + static_cast<int64_t>(marker.size()));
  const int64_t to = p.size - TailOf(limit);
  if (job.punch_failed || to - from < kPunchStep) return;
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
