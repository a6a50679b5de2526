// A job's output past its limit (LaunchOrder::output_limit, docs/operations.md "Job output"):
// what of its log the node keeps and the controller is to have, as a function of the limit
// and the log's size. The job writes its log directly (the shim hands it the file), so
// nothing slows a job that prints a lot; the agent bounds what it costs. Once the log passes
// the limit, the node keeps its first half (the head) as it is, writes a marker after it, and
// frees the middle of the file as it grows (a punched hole: the file's size grows on, its disk
// use does not), keeping the last half (the tail). The controller gets the head as the job
// runs, and, once the job has ended, a marker saying what was dropped and the tail, right
// after the head: its copy of the log is head, marker, tail, and the offsets it is read by
// only grow, as the API promises. Everything here follows from the limit and the log's size,
// so an agent that restarts ships the same bytes at the same offsets again. The agent reads,
// writes and punches the file (agent_output.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace baton::agent {

// The job's output as the controller is to have it: all of it, or past its output limit its
// first half (`head` bytes from the start) and, once it has ended, a marker of what was
// dropped and its last half (`tail` bytes: the marker's and the tail's).
struct LogPlan {
  int64_t size = 0;  // of output.log on the node
  bool over = false;
  int64_t head = 0;
  std::string marker;     // over and ended
  int64_t tail_from = 0;  // over: where the kept tail starts on the node
  int64_t tail = 0;       // over and ended: marker + tail
};

// The plan for a log of `size` bytes under `limit` (0: none) on node `node`; `ended`: the job
// has ended (then the marker and tail are due).
LogPlan PlanLog(int64_t size, int64_t limit, bool ended, const std::string& node);

// How much of the log the controller has: bytes of the head, and of the marker and tail.
struct LogShipped {
  int64_t head = 0;
  int64_t tail = 0;
};
// Whether the controller lacks some of what `plan` says it is to have now.
inline bool LogWaiting(const LogPlan& plan, const LogShipped& shipped) {
  return shipped.head < plan.head || shipped.tail < plan.tail;
}

// Written into the node's log right after the head once it passes the limit.
std::string NodeMarker(int64_t limit);
// What the controller is told (a job event) when the log passes the limit on `node`.
std::string LimitMessage(int64_t limit, const std::string& node);
// The middle of the node's log to free now, [from, to): past the head and its marker and
// what was freed before (`punched_to`), up to the tail, once that is a MiB or more.
std::optional<std::pair<int64_t, int64_t>> PunchRange(const LogPlan& plan, int64_t limit,
                                                      int64_t punched_to);

}  // namespace baton::agent
