// Cluster events: what happened to nodes and GPUs that an admin wants to know about (a GPU
// failed and was fenced, came back, a node was lost). The controller keeps the latest ones and
// serves them at GET /v1/events; those of severity "alert" are what alert hooks act on.
#pragma once

#include <cstdint>
#include <string>

#include "core/time.h"

namespace baton {

struct ClusterEvent {
  int64_t seq = 0;  // increasing; GET /v1/events?after=SEQ pages on it
  TimePoint at{};
  std::string kind;      // gpu_failed | gpu_recovered | gpu_xid | node_lost | node_joined |
                         // job_failed | node_drained | budget | session_reclaimed |
                         // job_output_limit | log_dropped
  std::string severity;  // info | alert
  std::string node;
  int gpu = -1;         // -1 = the node as a whole
  int64_t job = 0;      // a job it concerns, 0 = none
  std::string project;  // a project it concerns (budget alerts), "" = none
  std::string message;
  bool operator==(const ClusterEvent&) const = default;
};

}  // namespace baton
