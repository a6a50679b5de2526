#include "agent/log_plan.h"

#include <algorithm>

#include "core/quantity.h"

namespace baton::agent {
namespace {

constexpr int64_t kPunchStep = 1 << 20;  // frees the middle a MiB or more at a time

int64_t HeadOf(int64_t limit) { return limit / 2; }
int64_t TailOf(int64_t limit) { return limit - limit / 2; }

}  // namespace

std::string NodeMarker(int64_t limit) {
  return "\n[baton: the output past its first " + FormatSize(HeadOf(limit)) +
         " is dropped here; its last " + FormatSize(TailOf(limit)) +
         " is kept at the end of this file (output limit " + FormatSize(limit) + ")]\n";
}

std::string LimitMessage(int64_t limit, const std::string& node) {
  return "its output on node " + node + " passed its limit of " + FormatSize(limit) +
         ": the log keeps its first " + FormatSize(HeadOf(limit)) + " and its last " +
         FormatSize(TailOf(limit));
}

LogPlan PlanLog(int64_t size, int64_t limit, bool ended, const std::string& node) {
  LogPlan p;
  p.size = size;
  p.head = size;
  const int64_t node_marker = limit > 0 ? static_cast<int64_t>(NodeMarker(limit).size()) : 0;
  if (limit <= 0 || size <= limit + node_marker) return p;
  p.over = true;
  p.head = HeadOf(limit);
  p.tail_from = std::max(p.head + node_marker, size - TailOf(limit));
  if (ended) {
    const int64_t dropped = p.tail_from - p.head;
    p.marker = "\n[baton: " + std::to_string(dropped) + " bytes (" + FormatSize(dropped) +
               ") of output dropped here, past the job's output limit of " + FormatSize(limit) +
               " on node " + node + ": its log keeps its first " + FormatSize(p.head) +
               " and its last " + FormatSize(TailOf(limit)) + "]\n";
    // At least as long as the node's marker: the controller may have had that much past the
    // head before the log went over, and the marker and tail must cover it.
    if (p.marker.size() < static_cast<size_t>(node_marker))
      p.marker.insert(p.marker.size() - 1, static_cast<size_t>(node_marker) - p.marker.size(), ' ');
    p.tail = static_cast<int64_t>(p.marker.size()) + (size - p.tail_from);
  }
  return p;
}

std::optional<std::pair<int64_t, int64_t>> PunchRange(const LogPlan& plan, int64_t limit,
                                                      int64_t punched_to) {
  if (!plan.over) return std::nullopt;
  const int64_t from =
      std::max(punched_to, plan.head + static_cast<int64_t>(NodeMarker(limit).size()));
  const int64_t to = plan.size - TailOf(limit);
  if (to - from < kPunchStep) return std::nullopt;
  return std::make_pair(from, to);
}

}  // namespace baton::agent
