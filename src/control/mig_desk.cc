#include "control/mig_desk.h"

#include <algorithm>

namespace baton::control {
namespace {

// The instances GPU `physical` of `info` has, in memory-slice order, with their indices.
std::vector<std::pair<int, MigSlice>> InstancesOf(const NodeInfo& info, int physical) {
  std::vector<std::pair<int, MigSlice>> out;
  for (const Gpu& g : info.gpus) {
    if (g.vacant || g.physical != physical || g.mig_profile.empty()) continue;
    out.push_back({g.index, MigSlice{.profile = g.mig_profile, .start = g.mig_start}});
  }
  return out;
}

}  // namespace

std::vector<sched::MigGpu> MigGpusOf(const NodeTable& nodes, const RunningJobs& running,
                                     TimePoint now) {
  std::vector<sched::MigGpu> out;
  for (const auto& [name, node] : nodes) {
    if (node.info.mig_gpus.empty() || node.state != NodeRecord::State::kReady ||
        !node.drain_reason.empty() || node.leaving || node.reclaim)
      continue;
    // What holds each GPU index, and until when at the latest.
    std::map<int, TimePoint> held;
    for (JobId id : node.running) {
      const Job& j = *running.at(id);
      TimePoint ends = TimePoint::max();
      if (j.started_at && j.spec.time_limit.count() > 0) ends = *j.started_at + j.spec.time_limit;
      for (const NodeAllocation& part : j.allocation) {
        if (part.node != name || part.ended) continue;
        for (int g : part.gpus) {
          auto [it, added] = held.emplace(g, ends);
          if (!added) it->second = std::max(it->second, ends);
        }
      }
    }
    for (const MigParent& p : node.info.mig_gpus) {
      auto failed = node.mig_failed_until.find(p.physical);
      sched::MigGpu gpu{
          .node = name,
          .gpu = p.physical,
          .memory_bytes = p.memory_bytes,
          .reconfiguring = node.mig_reconfiguring.count(p.physical) != 0 ||
                           (failed != node.mig_failed_until.end() && failed->second > now)};
      for (const auto& [index, slice] : InstancesOf(node.info, p.physical)) {
        if (slice.start < 0) gpu.reconfiguring = true;  // where it sits is not known
        auto h = held.find(index);
        const bool unwell =
            node.gpu_drains.count(index) != 0 || (static_cast<size_t>(index) < node.health.size() &&
                                                  node.health[index].state != GpuHealthState::kOk);
        gpu.instances.push_back(sched::MigInstance{
            .profile = slice.profile,
            .start = slice.start,
            .busy = h != held.end() || unwell,  // an instance out of service stays as it is
            .ends = h != held.end() ? h->second : TimePoint::max()});
      }
      out.push_back(std::move(gpu));
    }
  }
  return out;
}

std::vector<std::string> MigWanted(const std::vector<const Job*>& waiting) {
  std::vector<std::string> out;
  for (const Job* j : waiting) {
    const Resources& r = j->spec.resources;
    std::string profile = MigProfileWanted(r.gpu_type);
    if (profile.empty() || r.milli_gpus <= 0) continue;
    const int64_t gpus = std::max<int64_t>(1, r.milli_gpus / 1000);
    for (int64_t k = 0; k < gpus && out.size() < kMigLook; ++k) out.push_back(profile);
  }
  return out;
}

NodeInfo MigCutFor(const NodeInfo& info, const std::string& profile) {
  NodeInfo out = info;
  out.gpus.clear();
  auto replanned = [&](int physical) {
    return std::any_of(info.mig_gpus.begin(), info.mig_gpus.end(),
                       [&](const MigParent& p) { return p.physical == physical; });
  };
  for (const Gpu& g : info.gpus) {
    if (g.physical >= 0 && replanned(g.physical)) continue;
    out.gpus.push_back(g);
  }
  const auto name = ParseMigProfile(profile);
  for (const MigParent& p : info.mig_gpus) {
    for (int k = 0; k < MigCapacity(profile, p.memory_bytes); ++k) {
      out.gpus.push_back(Gpu{.model = MigModel(p.model, profile),
                             .memory_bytes = name ? int64_t{name->memory_gb} << 30 : 0,
                             .island = 1'000'000 - 1 - p.physical,
                             .physical = p.physical,
                             .mig_profile = profile});
    }
  }
  for (size_t i = 0; i < out.gpus.size(); ++i) out.gpus[i].index = static_cast<int>(i);
  return out;
}

std::optional<std::string> MigCutWords(const NodeTable& nodes, const JobSpec& spec,
                                       Duration window) {
  const std::string profile = MigProfileWanted(spec.resources.gpu_type);
  if (profile.empty()) return std::nullopt;
  for (const auto& [name, node] : nodes) {
    if (node.info.pool != spec.pool || node.state != NodeRecord::State::kReady) continue;
    for (const MigParent& p : node.info.mig_gpus) {
      if (MigCapacity(profile, p.memory_bytes) > 0) {
        return "waiting for a " + profile + " MIG instance, which no GPU of pool " + spec.pool +
               " has free: the next MIG window (every " + FormatDuration(window) +
               ") cuts one from a GPU that is re-planned";
      }
    }
  }
  return std::nullopt;
}

Order MigOrderOf(const sched::MigChange& change) {
  Order o;
  o.kind = Order::Kind::kMig;
  o.mig.physical = change.gpu;
  for (const sched::MigInstance& m : change.destroy)
    o.mig.destroy.push_back(MigSlice{.profile = m.profile, .start = m.start});
  for (const sched::MigInstance& m : change.create)
    o.mig.create.push_back(MigSlice{.profile = m.profile, .start = m.start});
  return o;
}

std::vector<int> MigIndices(const NodeInfo& info, int physical,
                            const std::vector<sched::MigInstance>& slices) {
  std::vector<int> out;
  for (const auto& [index, slice] : InstancesOf(info, physical)) {
    for (const sched::MigInstance& m : slices) {
      if (m.profile == slice.profile && m.start == slice.start) out.push_back(index);
    }
  }
  return out;
}

std::string MigWords(const std::vector<MigSlice>& slices) {
  std::string out;
  for (const MigSlice& m : slices)
    out += (out.empty() ? "" : ", ") + m.profile + " at " + std::to_string(m.start);
  return out.empty() ? "none" : out;
}

ClusterEvent MigReported(const std::string& node, int physical, const NodeRecord::MigOrdered& o,
                         const NodeInfo& info, TimePoint now, bool* done) {
  std::vector<MigSlice> now_has;
  for (const auto& [index, slice] : InstancesOf(info, physical)) now_has.push_back(slice);
  *done = true;
  for (const MigSlice& c : o.order.create) {
    if (std::find(now_has.begin(), now_has.end(), c) == now_has.end()) *done = false;
  }
  for (const MigSlice& d : o.order.destroy) {
    if (std::find(o.order.create.begin(), o.order.create.end(), d) == o.order.create.end() &&
        std::find(now_has.begin(), now_has.end(), d) != now_has.end())
      *done = false;
  }
  const std::string gpu = "GPU " + std::to_string(physical) + " of " + node;
  const std::string has = "; its MIG instances now: " + MigWords(now_has);
  if (*done) {
    return ClusterEvent{.kind = EventKind::kMigChanged,
                        .severity = Severity::kInfo,
                        .node = node,
                        .message = gpu + " re-partitioned for the queue in " +
                                   FormatDuration(now - o.at) + ": destroyed " +
                                   MigWords(o.order.destroy) + ", created " +
                                   MigWords(o.order.create) + has};
  }
  return ClusterEvent{
      .kind = EventKind::kMigChanged,
      .severity = Severity::kAlert,
      .node = node,
      .message = gpu + ": the MIG change ordered (destroy " + MigWords(o.order.destroy) +
                 ", create " + MigWords(o.order.create) +
                 ") was not made; its agent's log says why" + has +
                 ". The GPU is left as it is for " + FormatDuration(kMigFailedRest)};
}

}  // namespace baton::control
