#include "control/feasibility_cache.h"

#include "control/mig_desk.h"

namespace baton::control {

const std::vector<sched::KnownNode>& FeasibilityCache::Known(const NodeTable& nodes,
                                                             const AutoscalingPolicy& scaling) {
  if (stale_) {
    known_.clear();
    for (const auto& [name, node] : nodes) {
      known_.push_back(sched::KnownNode{.info = &node.info,
                                        .registered = node.state != NodeRecord::State::kAwaiting});
    }
    templated_.clear();
    if (scaling.on()) {
      int left = kTemplateNodes;
      for (const NodeTemplate& t : scaling.templates) {
        auto spec = ParseGpuSpec(t.gpu_spec);
        for (int i = 1; i <= t.max && left > 0; ++i, --left) {
          NodeInfo info{.name = t.name + "-" + std::to_string(i),
                        .cpus = t.cpus,
                        .memory_bytes = t.memory_bytes,
                        .pool = t.pool,
                        .spot = t.spot};
          if (nodes.Find(info.name) != nullptr) continue;  // known as itself
          if (spec && spec->count > 0) info.gpus = SimulatedGpus(*spec, info.name);
          templated_.push_back(std::move(info));
        }
      }
      for (const NodeInfo& info : templated_) known_.push_back(sched::KnownNode{.info = &info});
    }
    shapes_.clear();
    stale_ = false;
  }
  return known_;
}

Result<Resources> FeasibilityCache::Check(const NodeTable& nodes, const AutoscalingPolicy& scaling,
                                          const JobSpec& spec, const std::string& user,
                                          bool pool_configured) {
  Known(nodes, scaling);  // and forgets the answers of an older set of nodes
  const Resources& r = spec.resources;
  const bool root = user == "root";
  const bool preemptible = Preemptible(spec);
  // The latest shapes first: a sweep or a burst of alike jobs finds its own at once.
  for (auto it = shapes_.rbegin(); it != shapes_.rend(); ++it) {
    if (it->root == root && it->preemptible == preemptible && it->request == r &&
        it->pool == spec.pool)
      return it->answer;
  }
  auto checked = sched::CheckFeasible(known_, r, spec.pool, pool_configured, user, preemptible);
  // A MIG profile no instance has now may be cut where agents re-plan MIG (mig_desk.h).
  if (const std::string profile = MigProfileWanted(r.gpu_type); !checked && !profile.empty()) {
    std::vector<NodeInfo> cut;
    for (const sched::KnownNode& k : known_) {
      if (k.info != nullptr && !k.info->mig_gpus.empty())
        cut.push_back(MigCutFor(*k.info, profile));
    }
    if (!cut.empty()) {
      std::vector<sched::KnownNode> known;
      size_t next = 0;
      for (const sched::KnownNode& k : known_) {
        known.push_back(k);
        if (k.info != nullptr && !k.info->mig_gpus.empty()) known.back().info = &cut[next++];
      }
      if (auto again =
              sched::CheckFeasible(known, r, spec.pool, pool_configured, user, preemptible))
        checked = std::move(again);
    }
  }
  Result<Resources> answer =
      checked ? Result<Resources>(checked->resources) : Result<Resources>(Err(checked.error()));
  if (shapes_.size() >= kShapes) shapes_.erase(shapes_.begin());
  shapes_.push_back(Shape{spec.pool, r, root, preemptible, answer});
  return answer;
}

}  // namespace baton::control
