#include "sched/cluster_view.h"

#include <cstdlib>

namespace baton::sched {

int64_t ClusterView::FreeWholeGpus() const {
  int64_t n = 0;
  for (const auto& node : nodes) {
    if (!node.schedulable) continue;
    for (const auto& g : node.gpus) n += (g.usable && g.free_milli == 1000) ? 1 : 0;
  }
  return n;
}

NodeSlots* ClusterView::FindNode(const std::string& name) {
  for (auto& n : nodes) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

const NodeSlots* ClusterView::FindNode(const std::string& name) const {
  for (const auto& n : nodes) {
    if (n.name == name) return &n;
  }
  return nullptr;
}

void ClusterView::ClearReservations() {
  for (auto& n : nodes) {
    n.host_reserved_from = kNever;
    n.host_reserved_for = JobId{};
    for (auto& g : n.gpus) {
      g.reserved_from = kNever;
      g.reserved_for = JobId{};
    }
  }
}

void ApplyPart(NodeSlots& node, const NodeAllocation& part, const Resources& r, int sign) {
  node.free_cpus -= sign * r.cpus;
  node.free_memory_bytes -= sign * r.memory_bytes;
  for (int idx : part.gpus) {
    if (idx < 0 || static_cast<size_t>(idx) >= node.gpus.size()) continue;
    GpuSlot& g = node.gpus[idx];
    g.free_milli -= sign * part.milli_per_gpu;
    if (part.milli_per_gpu < 1000) g.free_memory_bytes -= sign * r.gpu_memory_bytes;
    // Oversubscription of a share or of GPU memory is a bug in a caller, never a user's doing.
    if (g.free_milli < 0 || g.free_milli > 1000 || g.free_memory_bytes < 0) std::abort();
  }
}

void ClusterView::Apply(const std::vector<NodeAllocation>& allocation, const Resources& r,
                        int sign) {
  for (const auto& part : allocation) {
    NodeSlots* node = FindNode(part.node);
    if (node == nullptr) continue;  // a node that left; nothing to account on it
    ApplyPart(*node, part, r, sign);
  }
}

}  // namespace baton::sched
