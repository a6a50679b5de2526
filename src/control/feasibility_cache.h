// Whether any set of a pool's nodes can ever hold a request (sched::CheckFeasible), asked at
// every submit and update: the known nodes as the check takes them, made again only once nodes
// or pools changed, and the answers for the latest request shapes, so that a sweep or a burst of
// alike jobs is judged once. Owned by the Controller; not thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "control/node_table.h"
#include "core/job.h"
#include "core/status.h"
#include "sched/feasibility.h"

namespace baton::control {

class FeasibilityCache {
 public:
  // How many request shapes' answers are kept (the oldest goes first).
  static constexpr size_t kShapes = 64;

  // A node joined, came back with other hardware, or the pools changed: the known nodes are
  // made again at the next question, and every answer is forgotten.
  void MarkStale() { stale_ = true; }

  // Every node of `nodes`, registered or awaited, and every node autoscaling could start
  // (each template's maximum, under the names it would give them), as the checks take them.
  // The entries point into `nodes`, which must not change until MarkStale.
  const std::vector<sched::KnownNode>& Known(const NodeTable& nodes,
                                             const AutoscalingPolicy& scaling);

  // The request of `spec` as it will run (its nodes chosen when it named none), or why no set of
  // its pool's nodes can ever hold it; `pool_configured`: the policy names spec.pool.
  Result<Resources> Check(const NodeTable& nodes, const AutoscalingPolicy& scaling,
                          const JobSpec& spec, const std::string& user, bool pool_configured);

  // Nodes of templates a feasibility check counts at most (beyond, a template's maximum is
  // taken as this many).
  static constexpr int kTemplateNodes = 4096;

 private:
  struct Shape {
    std::string pool;
    Resources request;
    bool root = false;
    bool preemptible = true;
    Result<Resources> answer;
  };
  std::vector<sched::KnownNode> known_;
  std::vector<NodeInfo> templated_;  // the nodes autoscaling could start
  bool stale_ = true;
  std::vector<Shape> shapes_;  // the latest request shapes and their answers, oldest first
};

}  // namespace baton::control
