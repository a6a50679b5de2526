#include "sched/cluster_view.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>

namespace baton::sched {
namespace {

uint64_t NewShape() {
  static std::atomic<uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

}  // namespace

Stamp NewStamp() {
  static std::atomic<uint64_t> last{0};
  return Stamp{last.fetch_add(1, std::memory_order_relaxed) + 1};
}

int64_t ClusterView::FreeWholeGpus() const {
  int64_t n = 0;
  for (const auto& node : nodes) {
    if (!node.schedulable) continue;
    for (const auto& g : node.gpus) n += (g.usable && g.free_milli == 1000) ? 1 : 0;
  }
  return n;
}

const ClusterView::Totals& ClusterView::totals() const {
  if (shape != 0 && totals_shape == shape) return totals_kept;
  totals_kept = Totals{};
  for (const auto& n : nodes) {
    totals_kept.refuses_root |= n.refuses_root_jobs;
    totals_kept.spot |= n.spot;
    totals_kept.mps |= n.mps;
    if (!n.schedulable) continue;
    for (const auto& g : n.gpus) totals_kept.usable_milli += g.usable ? 1000 : 0;
  }
  totals_shape = shape;
  return totals_kept;
}

void ClusterView::AddNode(NodeSlots node) {
  const auto index = static_cast<int>(nodes.size());
  node.stamp = NewStamp();
  nodes.push_back(std::move(node));
  shape = NewShape();
  if (by_name.size() != static_cast<size_t>(index)) return;  // IndexOf makes it whole again
  auto at = std::upper_bound(by_name.begin(), by_name.end(), index, [&](int a, int b) {
    return nodes[a].name != nodes[b].name ? nodes[a].name < nodes[b].name : a < b;
  });
  by_name.insert(at, index);
}

int ClusterView::IndexOf(std::string_view name) const {
  if (!NamesIndexed()) {
    by_name.resize(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) by_name[i] = static_cast<int>(i);
    std::stable_sort(by_name.begin(), by_name.end(),
                     [&](int a, int b) { return nodes[a].name < nodes[b].name; });
  }
  auto it = std::lower_bound(by_name.begin(), by_name.end(), name,
                             [&](int i, std::string_view n) { return nodes[i].name < n; });
  return it != by_name.end() && nodes[*it].name == name ? *it : -1;
}

NodeSlots* ClusterView::FindNode(const std::string& name) {
  const int i = IndexOf(name);
  if (i < 0) return nullptr;
  shape = NewShape();  // the caller may change what the node holds
  nodes[i].stamp = NewStamp();
  return &nodes[i];
}

const NodeSlots* ClusterView::FindNode(const std::string& name) const {
  const int i = IndexOf(name);
  return i < 0 ? nullptr : &nodes[i];
}

void ClusterView::CopyFrom(const ClusterView& from) {
  if (shape == 0 || shape != from.shape || nodes.size() != from.nodes.size()) {
    *this = from;
    return;
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    NodeSlots& n = nodes[i];
    const NodeSlots& f = from.nodes[i];
    if (n.stamp.value == f.stamp.value) continue;  // neither changed since the last copy
    if (n.gpus.size() != f.gpus.size()) {
      n = f;
      continue;
    }
    n.free_cpus = f.free_cpus;
    n.free_memory_bytes = f.free_memory_bytes;
    n.schedulable = f.schedulable;
    n.host_reserved_from = f.host_reserved_from;
    n.host_reserved_for = f.host_reserved_for;
    n.jobs = f.jobs;
    n.exclusive = f.exclusive;
    n.reserved = f.reserved;
    n.stamp = f.stamp;
    for (size_t k = 0; k < n.gpus.size(); ++k) {
      GpuSlot& g = n.gpus[k];
      const GpuSlot& h = f.gpus[k];
      g.free_milli = h.free_milli;
      g.free_memory_bytes = h.free_memory_bytes;
      g.usable = h.usable;
      g.reserved_from = h.reserved_from;
      g.reserved_for = h.reserved_for;
      g.sharer = h.sharer;
    }
  }
  if (by_name.size() != from.by_name.size()) by_name = from.by_name;
  if (from.totals_shape == shape && totals_shape != shape) {
    totals_kept = from.totals_kept;
    totals_shape = shape;
  }
}

void ClusterView::ClearReservations() {
  for (auto& n : nodes) {
    if (!n.reserved) continue;
    n.reserved = false;
    n.stamp = NewStamp();
    n.host_reserved_from = kNever;
    n.host_reserved_for = JobId{};
    for (auto& g : n.gpus) {
      g.reserved_from = kNever;
      g.reserved_for = JobId{};
    }
  }
}

// FNV-1a. Two names of one number (about one in 2^64) would only let two users' fractions share
// a GPU, which its agent then runs without MPS for the second, and says so.
uint64_t UserKey(std::string_view user) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : user) h = (h ^ c) * 1099511628211ull;
  return h == 0 ? 1 : h;
}

void ApplyPart(NodeSlots& node, const NodeAllocation& part, const Resources& r, int sign,
               std::string_view user) {
  node.stamp = NewStamp();
  node.free_cpus -= sign * r.cpus;
  node.free_memory_bytes -= sign * r.memory_bytes;
  node.jobs += sign;
  node.exclusive += r.exclusive ? sign : 0;
  for (int idx : part.gpus) {
    if (idx < 0 || static_cast<size_t>(idx) >= node.gpus.size()) continue;
    GpuSlot& g = node.gpus[idx];
    if (part.milli_per_gpu < 1000 && sign > 0 && g.free_milli == 1000) g.sharer = UserKey(user);
    g.free_milli -= sign * part.milli_per_gpu;
    if (g.free_milli == 1000) g.sharer = 0;
    if (part.milli_per_gpu < 1000) g.free_memory_bytes -= sign * r.gpu_memory_bytes;
    // Oversubscription of a share or of GPU memory is a bug in a caller, never a user's doing.
    if (g.free_milli < 0 || g.free_milli > 1000 || g.free_memory_bytes < 0) std::abort();
  }
}

void ClusterView::Apply(const std::vector<NodeAllocation>& allocation, const Resources& r, int sign,
                        std::string_view user) {
  for (const auto& part : allocation) {
    const int i = IndexOf(part.node);
    if (i < 0) continue;  // a node that left; nothing to account on it
    ApplyPart(nodes[i], part, r, sign, user);
  }
}

}  // namespace baton::sched
