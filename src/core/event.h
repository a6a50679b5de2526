// Cluster events: what happened to nodes and GPUs that an admin wants to know about (a GPU
// failed and was fenced, came back, a node was lost). The controller keeps the latest ones and
// serves them at GET /v1/events; those of severity "alert" are what alert hooks act on.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/names.h"
#include "core/time.h"

namespace baton {

// What happened; named on the wire and in the store by kEventKindNames.
enum class EventKind {
  kGpuFailed,
  kGpuRecovered,
  kGpuXid,
  kNodeLost,
  kNodeJoined,
  kJobFailed,
  kNodeDrained,
  kBudget,
  kSessionReclaimed,
  kJobOutputLimit,
  kLogDropped,
  kNodeReclaimed,
  // Autoscaling (docs/operations.md "Elastic capacity"): nodes asked of the provider, returned
  // to it, a resume that failed (not registered in time, a partial start), a provider that
  // failed (exited non-zero, hung, answered nonsense).
  kNodeResuming,
  kNodeSuspending,
  kNodeResumeFailed,
  kProviderFailed,
  // A MIG GPU's instances changed on the controller's order, or the change failed (issue 42).
  kMigChanged,
};
inline constexpr std::array<std::string_view, 17> kEventKindNames = {
    "gpu_failed",      "gpu_recovered",  "gpu_xid",       "node_lost",         "node_joined",
    "job_failed",      "node_drained",   "budget",        "session_reclaimed", "job_output_limit",
    "log_dropped",     "node_reclaimed", "node_resuming", "node_suspending",   "node_resume_failed",
    "provider_failed", "mig_changed"};
inline std::string_view EventKindName(EventKind k) { return EnumName(kEventKindNames, k); }
inline Result<EventKind> ParseEventKind(std::string_view text, std::string_view field = "kind") {
  return ParseEnum<EventKind>(kEventKindNames, field, text);
}

// An alert is what alert hooks act on; info is only kept and shown.
enum class Severity { kInfo, kAlert };
inline constexpr std::array<std::string_view, 2> kSeverityNames = {"info", "alert"};
inline std::string_view SeverityName(Severity s) { return EnumName(kSeverityNames, s); }
inline Result<Severity> ParseSeverity(std::string_view text, std::string_view field = "severity") {
  return ParseEnum<Severity>(kSeverityNames, field, text);
}

struct ClusterEvent {
  int64_t seq = 0;  // increasing; GET /v1/events?after=SEQ pages on it
  TimePoint at{};
  EventKind kind = EventKind::kJobFailed;
  Severity severity = Severity::kInfo;
  std::string node;
  int gpu = -1;         // -1 = the node as a whole
  int64_t job = 0;      // a job it concerns, 0 = none
  std::string project;  // a project it concerns (budget alerts), "" = none
  std::string message;
  bool operator==(const ClusterEvent&) const = default;
};

}  // namespace baton
