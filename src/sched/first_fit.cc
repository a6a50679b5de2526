#include "sched/first_fit.h"

#include <algorithm>

#include "core/node.h"
#include "core/quantity.h"

namespace baton::sched {
namespace {

bool GpuMatches(const GpuSlot& g, const Resources& r) {
  if (!g.usable || !GpuTypeMatches(g.model, r.gpu_type)) return false;
  if (r.milli_gpus >= 1000) return g.memory_bytes >= r.gpu_memory_bytes;
  return g.memory_bytes >= r.gpu_memory_bytes;
}

bool NodeHasHostResources(const NodeSlots& n, const Resources& r, bool free_now) {
  int cpus = free_now ? n.free_cpus : n.total_cpus;
  int64_t mem = free_now ? n.free_memory_bytes : n.total_memory_bytes;
  return cpus >= r.cpus && mem >= r.memory_bytes;
}

std::string Describe(const Resources& r) {
  std::string s;
  if (r.milli_gpus == 0) {
    s = "CPU only";
  } else {
    s = FormatMilli(r.milli_gpus) + (r.milli_gpus == 1000 ? " GPU" : " GPUs");
  }
  if (!r.gpu_type.empty()) s += " of type " + r.gpu_type;
  if (r.gpu_memory_bytes > 0) s += " with " + FormatSize(r.gpu_memory_bytes) + " GPU memory";
  if (r.nodes > 1) s += " across " + std::to_string(r.nodes) + " nodes";
  if (r.cpus > 0) s += ", " + std::to_string(r.cpus) + " CPUs";
  if (r.memory_bytes > 0) s += ", " + FormatSize(r.memory_bytes) + " memory";
  return s;
}

// Picks GPUs on one node for a per-node share of `r`; empty when it does not fit now.
std::vector<int> PickOnNode(const NodeSlots& n, const Resources& r, int64_t per_node_milli) {
  std::vector<int> picked;
  if (!n.schedulable || !NodeHasHostResources(n, r, true)) return picked;
  if (per_node_milli == 0) return picked;
  if (per_node_milli < 1000) {
    // Best fit among shared GPUs first, so whole GPUs stay whole.
    int best = -1;
    int64_t best_free = 1001;
    for (const auto& g : n.gpus) {
      if (!GpuMatches(g, r) || g.free_milli < per_node_milli) continue;
      if (g.free_memory_bytes < r.gpu_memory_bytes) continue;
      if (g.free_milli < best_free) {
        best = g.index;
        best_free = g.free_milli;
      }
    }
    if (best >= 0) picked.push_back(best);
    return picked;
  }
  int64_t need = per_node_milli / 1000;
  for (const auto& g : n.gpus) {
    if (GpuMatches(g, r) && g.free_milli == 1000) {
      picked.push_back(g.index);
      if (static_cast<int64_t>(picked.size()) == need) return picked;
    }
  }
  picked.clear();
  return picked;
}

// Whether `r` could ever fit on an empty cluster of these nodes.
bool EverFits(const ClusterView& view, const Resources& r) {
  int64_t per_node = r.milli_gpus / r.nodes;
  int nodes_ok = 0;
  for (const auto& n : view.nodes) {
    if (!NodeHasHostResources(n, r, false)) continue;
    int64_t matching = 0;
    for (const auto& g : n.gpus) matching += GpuMatches(g, r) ? 1 : 0;
    bool ok = per_node < 1000 ? (per_node == 0 || matching > 0) : matching * 1000 >= per_node;
    nodes_ok += ok ? 1 : 0;
  }
  return nodes_ok >= r.nodes;
}

}  // namespace

Placement PlaceFirstFit(ClusterView& view, const Resources& r) {
  Placement p;
  int64_t per_node = r.milli_gpus / r.nodes;
  for (auto& n : view.nodes) {
    if (!n.schedulable || !NodeHasHostResources(n, r, true)) continue;
    std::vector<int> gpus = PickOnNode(n, r, per_node);
    if (per_node > 0 && gpus.empty()) continue;
    p.allocation.push_back(NodeAllocation{.node = n.name,
                                          .gpus = std::move(gpus),
                                          .milli_per_gpu = std::min<int64_t>(per_node, 1000)});
    if (static_cast<int>(p.allocation.size()) == r.nodes) break;
  }
  if (static_cast<int>(p.allocation.size()) == r.nodes) {
    p.fit = Fit::kPlaced;
    view.Apply(p.allocation, r, +1);
    return p;
  }
  p.allocation.clear();
  if (!EverFits(view, r)) {
    p.fit = Fit::kNever;
    p.detail = "no node in the cluster can ever hold " + Describe(r);
  } else {
    p.fit = Fit::kNotNow;
    p.detail = "waiting for " + Describe(r) + "; " + std::to_string(view.FreeWholeGpus()) +
               " whole GPUs free now";
  }
  return p;
}

PassResult RunFirstFitPass(ClusterView view, const std::vector<Candidate>& ordered) {
  PassResult result;
  // Identical requests fail identically: remember the first few failures with their words.
  std::vector<std::pair<const Resources*, std::string>> failed_shapes;
  int64_t free_gpu_milli = 0;
  for (const auto& n : view.nodes) {
    if (!n.schedulable) continue;
    for (const auto& g : n.gpus) free_gpu_milli += g.usable ? g.free_milli : 0;
  }
  int ahead = 0;
  auto wait = [&](JobId id, std::string detail) {
    // Words for the first waiting jobs only: past those, a pass over a long queue would spend
    // its time formatting reasons nobody reads this second (the others keep their last one).
    if (ahead >= kExplainedWaits) {
      ++ahead;
      return;
    }
    if (ahead > 0) detail += "; " + std::to_string(ahead) + (ahead == 1 ? " job" : " jobs") + " ahead in the queue";
    result.waits.push_back(Wait{.id = id, .reason = "resources", .detail = std::move(detail)});
    ++ahead;
  };
  for (const Candidate& c : ordered) {
    const Resources& r = *c.resources;
    if (r.milli_gpus > 0 && free_gpu_milli < r.milli_gpus) {
      // Cannot fit anywhere: no placement attempt, which keeps a pass over a long queue cheap.
      if (ahead >= kExplainedWaits) {
        ++ahead;
        continue;
      }
      wait(c.id, "waiting for " + FormatMilli(r.milli_gpus) + (r.milli_gpus == 1000 ? " GPU" : " GPUs") + "; " +
                     FormatMilli(free_gpu_milli) + " free now");
      continue;
    }
    auto known = std::find_if(failed_shapes.begin(), failed_shapes.end(),
                              [&](const auto& f) { return *f.first == r; });
    if (known != failed_shapes.end()) {
      wait(c.id, known->second);
      continue;
    }
    Placement p = PlaceFirstFit(view, r);
    if (p.fit == Fit::kPlaced) {
      free_gpu_milli -= r.milli_gpus;
      result.starts.push_back(Start{.id = c.id, .allocation = std::move(p.allocation)});
      continue;
    }
    if (failed_shapes.size() < 32) failed_shapes.emplace_back(&r, p.detail);
    wait(c.id, std::move(p.detail));
  }
  return result;
}

}  // namespace baton::sched
