#include "sched/placement.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "core/hostlist.h"
#include "core/node.h"
#include "core/quantity.h"

namespace baton::sched {
namespace {

bool GpuMatches(const GpuSlot& g, const Resources& r) {
  return g.usable && GpuTypeMatches(g.model, g.mig_profile, r.gpu_type) &&
         g.memory_bytes >= r.gpu_memory_bytes;
}

bool FreeBefore(const GpuSlot& g, const PlaceRules& rules) {
  return g.reserved_from >= rules.until || (rules.job.value != 0 && g.reserved_for == rules.job);
}

bool Named(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Whether an exclusive job may have node `n` to itself until rules.until: no job on it, and
// nothing of it held for another job before then.
bool EmptyUntil(const NodeSlots& n, const PlaceRules& rules) {
  if (n.jobs > 0) return false;
  if (n.host_reserved_from < rules.until &&
      !(rules.job.value != 0 && n.host_reserved_for == rules.job))
    return false;
  return std::all_of(n.gpus.begin(), n.gpus.end(),
                     [&](const GpuSlot& g) { return !g.usable || FreeBefore(g, rules); });
}

// Small-key counting for the few GPUs of one node: (key, count) pairs.
struct Groups {
  std::vector<std::pair<int, int>> counts;
  void Add(int key) {
    for (auto& [k, c] : counts) {
      if (k == key) {
        ++c;
        return;
      }
    }
    counts.emplace_back(key, 1);
  }
  // The smallest group holding at least `need`, lowest key on ties; -1 when none.
  std::optional<int> BestFit(int need) const {
    std::optional<int> best;
    int best_count = 0;
    for (auto [k, c] : counts) {
      if (c < need) continue;
      if (!best || c < best_count || (c == best_count && k < *best)) {
        best = k;
        best_count = c;
      }
    }
    return best;
  }
};

int Distinct(const std::vector<const GpuSlot*>& gpus, int GpuSlot::*field) {
  Groups g;
  for (const GpuSlot* s : gpus) g.Add(s->*field);
  return static_cast<int>(g.counts.size());
}

}  // namespace

std::string DescribeRequest(const Resources& r) {
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
  if (!r.nodelist.empty())
    s += (r.nodelist.size() == 1 ? " on node " : " on nodes ") + CompressHostList(r.nodelist);
  if (!r.exclude.empty()) s += " not on " + CompressHostList(r.exclude);
  if (r.exclusive) s += r.nodes > 1 ? ", its nodes to itself" : ", its node to itself";
  return s;
}

std::string Shortfall(const ClusterView& view, const Resources& r, std::string_view pool) {
  const int64_t per_node = r.milli_gpus / std::max(r.nodes, 1);
  const std::string kind = r.gpu_type.empty() ? "" : " of type " + r.gpu_type;
  bool any_free = false, typed_free = false;
  int64_t best_gpus = 0;    // the most free GPUs (milli) of the kind asked, on one node
  int nodes_with_gpus = 0;  // nodes with enough of them for one part
  int best_cpus = 0;        // ... and among those, the most free CPUs
  int64_t best_memory = 0;  // ... and memory
  for (const NodeSlots& n : view.nodes) {
    if (!n.schedulable || n.pool != pool) continue;
    int64_t whole = 0, largest_share = 0;
    for (const GpuSlot& g : n.gpus) {
      if (!g.usable || g.free_milli == 0) continue;
      any_free = true;
      if (!GpuTypeMatches(g.model, g.mig_profile, r.gpu_type)) continue;
      typed_free = true;
      if (g.memory_bytes < r.gpu_memory_bytes) continue;
      whole += g.free_milli == 1000 ? 1000 : 0;
      largest_share = std::max(largest_share, g.free_milli);
    }
    int64_t free = per_node < 1000 ? largest_share : whole;
    best_gpus = std::max(best_gpus, free);
    if (free < per_node) continue;
    ++nodes_with_gpus;
    best_cpus = std::max(best_cpus, n.free_cpus);
    best_memory = std::max(best_memory, n.free_memory_bytes);
  }
  if (r.milli_gpus > 0) {
    if (!any_free) return "GPUs: none free in pool " + std::string(pool);
    if (!typed_free) return "GPU type: no free GPU" + kind + " (the free ones are other models)";
    if (best_gpus == 0 && r.gpu_memory_bytes > 0) {
      return "GPU memory: no free GPU" + kind + " has " + FormatSize(r.gpu_memory_bytes);
    }
    if (nodes_with_gpus < std::max(r.nodes, 1)) {
      if (r.nodes > 1 && best_gpus >= per_node) {
        return "nodes: only " + std::to_string(nodes_with_gpus) +
               (nodes_with_gpus == 1 ? " has " : " have ") + FormatMilli(per_node) + " GPUs" +
               kind + " free, " + std::to_string(r.nodes) + " asked";
      }
      return "GPUs: at most " + FormatMilli(best_gpus) + kind + " free on one node, " +
             FormatMilli(per_node) + " asked";
    }
  } else {
    nodes_with_gpus = 0;
    for (const NodeSlots& n : view.nodes) {
      if (!n.schedulable || n.pool != pool) continue;
      ++nodes_with_gpus;
      best_cpus = std::max(best_cpus, n.free_cpus);
      best_memory = std::max(best_memory, n.free_memory_bytes);
    }
  }
  const std::string where = r.milli_gpus > 0 ? "the nodes with the GPUs free have" : "nodes have";
  if (r.cpus > best_cpus) {
    return "CPUs: " + where + " at most " + std::to_string(best_cpus) + " free, " +
           std::to_string(r.cpus) + " asked";
  }
  if (r.memory_bytes > best_memory) {
    return "memory: " + where + " at most " + FormatSize(best_memory) + " free, " +
           FormatSize(r.memory_bytes) + " asked";
  }
  return "";
}

std::vector<int> PickWholeGpus(const NodeSlots& node, const Resources& r, const PlaceRules& rules,
                               int need, Spread* spread) {
  std::vector<const GpuSlot*> set;
  for (const auto& g : node.gpus) {
    if (GpuMatches(g, r) && g.free_milli == 1000 && FreeBefore(g, rules)) set.push_back(&g);
  }
  if (static_cast<int>(set.size()) < need || need <= 0) return {};
  // Narrow to the tightest island, then PCIe switch, then NUMA node that still holds `need`.
  for (int GpuSlot::*field : {&GpuSlot::island, &GpuSlot::pcie_switch, &GpuSlot::numa_node}) {
    Groups groups;
    for (const GpuSlot* g : set) groups.Add(g->*field);
    std::optional<int> key = groups.BestFit(need);
    if (!key) continue;
    std::erase_if(set, [&](const GpuSlot* g) { return g->*field != *key; });
  }
  std::sort(set.begin(), set.end(), [](const GpuSlot* a, const GpuSlot* b) {
    return std::tie(a->island, a->pcie_switch, a->numa_node, a->index) <
           std::tie(b->island, b->pcie_switch, b->numa_node, b->index);
  });
  set.resize(need);
  if (spread != nullptr) {
    *spread = Spread{.islands = Distinct(set, &GpuSlot::island),
                     .switches = Distinct(set, &GpuSlot::pcie_switch),
                     .numas = Distinct(set, &GpuSlot::numa_node)};
  }
  std::vector<int> picked;
  picked.reserve(need);
  for (const GpuSlot* g : set) picked.push_back(g->index);
  std::sort(picked.begin(), picked.end());
  return picked;
}

namespace {

PlacerIndex& KeptIndexOf(ClusterView& view) {
  std::shared_ptr<PlacerIndex>& kept = view.placer_index.index;
  if (kept == nullptr) kept = std::make_shared<PlacerIndex>();
  return *kept;
}

}  // namespace

Placer::Placer(ClusterView& view) : view_(view), ix_(KeptIndexOf(view)) {
  const size_t count = view_.nodes.size();
  if (view_.shape != 0 && ix_.shape == view_.shape && ix_.pos.size() == count) {
    // The last Placer's index of this shape: only the nodes changed since are indexed again.
    for (size_t i = 0; i < count; ++i) {
      if (ix_.stamps[i] == view_.nodes[i].stamp.value) continue;
      Unindex(static_cast<int>(i));
      Index(static_cast<int>(i));
    }
    CheckIndex();
    return;
  }
  ix_ = PlacerIndex{};
  ix_.shape = view_.shape;
  ix_.pos.resize(count);
  ix_.node_pool.resize(count);
  ix_.stamps.resize(count);
  for (size_t i = 0; i < count; ++i) {
    const std::string& name = view_.nodes[i].pool;
    auto it = std::find_if(ix_.pools.begin(), ix_.pools.end(),
                           [&](const auto& p) { return p.first == name; });
    if (it == ix_.pools.end()) it = ix_.pools.insert(it, {name, PlacerIndex::Pool{}});
    ix_.node_pool[i] = static_cast<int>(it - ix_.pools.begin());
  }
  for (size_t i = 0; i < count; ++i) Index(static_cast<int>(i));
}

void Placer::CheckIndex() const {
#ifndef NDEBUG
  // A change of a node that did not stamp it would show here: the kept index against the view.
  std::vector<int64_t> pool_milli(ix_.pools.size(), 0);
  for (size_t i = 0; i < view_.nodes.size(); ++i) {
    const NodeSlots& n = view_.nodes[i];
    const PlacerIndex::NodePos& p = ix_.pos[i];
    int64_t free = 0;
    int whole = 0;
    bool shared = false;
    for (const auto& g : n.gpus) {
      if (!g.usable) continue;
      free += g.free_milli;
      shared |= g.free_milli > 0 && g.free_milli < 1000;
      whole += g.free_milli == 1000 ? 1 : 0;
    }
    const PlacerIndex::Pool& pool = ix_.pools[ix_.node_pool[i]].second;
    const bool right =
        !n.schedulable
            ? p.bucket < 0
            : p.bucket == whole && p.free_milli == free && p.shared == shared &&
                  std::binary_search(pool.buckets[p.bucket].begin(), pool.buckets[p.bucket].end(),
                                     static_cast<int>(i)) &&
                  pool.shared.count(static_cast<int>(i)) == (shared ? 1U : 0U);
    if (!right) {
      std::fprintf(stderr, "the kept placement index of node %s is not the node's\n",
                   n.name.c_str());
      std::abort();
    }
    pool_milli[ix_.node_pool[i]] += n.schedulable ? free : 0;
  }
  for (size_t k = 0; k < ix_.pools.size(); ++k) {
    if (ix_.pools[k].second.free_milli == pool_milli[k]) continue;
    std::fprintf(stderr, "the kept placement index of pool %s is not the pool's\n",
                 ix_.pools[k].first.c_str());
    std::abort();
  }
#endif
}

const PlacerIndex::Pool* Placer::FindPool(std::string_view pool) const {
  for (const auto& [name, index] : ix_.pools) {
    if (name == pool) return index.indexed ? &index : nullptr;
  }
  return nullptr;
}

void Placer::Hide(const std::vector<Slot>& slots) {
  for (const Slot& s : slots) {
    const NodeSlots& n = view_.nodes[s.node];
    if (!(s.gpu >= 0 ? n.gpus[s.gpu].usable : n.schedulable)) continue;
    SetUsable(s.node, s.gpu, false);
    hidden_.push_back(s);
  }
}

void Placer::Unhide() {
  for (const Slot& s : hidden_) SetUsable(s.node, s.gpu, true);
  hidden_.clear();
}

void Placer::SetUsable(int node, int gpu, bool usable) {
  Unindex(node);
  NodeSlots& n = view_.nodes[node];
  if (gpu >= 0) {
    n.gpus[gpu].usable = usable;
  } else {
    n.schedulable = usable;
  }
  n.stamp = NewStamp();
  view_.ForgetTotals();
  Index(node);
}

int Placer::NodeIndex(const std::string& name) const { return view_.IndexOf(name); }

int Placer::PoolAt(std::string_view pool) const {
  for (size_t k = 0; k < ix_.pools.size(); ++k) {
    if (ix_.pools[k].first == pool) return static_cast<int>(k);
  }
  return -1;
}

int64_t Placer::free_milli(std::string_view pool) const {
  const PlacerIndex::Pool* index = FindPool(pool);
  return index == nullptr ? 0 : index->free_milli;
}

void Placer::Index(int node) {
  const NodeSlots& n = view_.nodes[node];
  PlacerIndex::NodePos& p = ix_.pos[node];
  p = PlacerIndex::NodePos{};
  ix_.stamps[node] = n.stamp.value;
  if (!n.schedulable) return;
  PlacerIndex::Pool& pool = ix_.pools[ix_.node_pool[node]].second;
  pool.indexed = true;
  int whole = 0;  // FreeWhole, in the same walk of the GPUs
  for (const auto& g : n.gpus) {
    if (!g.usable) continue;
    p.free_milli += g.free_milli;
    p.shared |= g.free_milli > 0 && g.free_milli < 1000;
    whole += g.free_milli == 1000 ? 1 : 0;
  }
  if (pool.buckets.size() <= static_cast<size_t>(whole)) {
    const size_t first_new = pool.buckets.size();
    pool.buckets.resize(whole + 1);
    // Room for every node in each: no growth of the buckets while a pass indexes its view.
    for (size_t b = first_new; b < pool.buckets.size(); ++b)
      pool.buckets[b].reserve(ix_.pos.size());
  }
  p.bucket = whole;
  std::vector<int>& bucket = pool.buckets[whole];
  bucket.insert(std::lower_bound(bucket.begin(), bucket.end(), node), node);
  pool.free_milli += p.free_milli;
  if (p.shared) pool.shared.insert(node);
}

void Placer::Unindex(int node) {
  PlacerIndex::NodePos& p = ix_.pos[node];
  if (p.bucket < 0) return;
  PlacerIndex::Pool& pool = ix_.pools[ix_.node_pool[node]].second;
  std::vector<int>& bucket = pool.buckets[p.bucket];
  bucket.erase(std::lower_bound(bucket.begin(), bucket.end(), node));
  pool.free_milli -= p.free_milli;
  if (p.shared) pool.shared.erase(node);
  p = PlacerIndex::NodePos{};
}

void Placer::Apply(const std::vector<NodeAllocation>& allocation, const Resources& r, int sign,
                   std::string_view user) {
  for (const auto& part : allocation) {
    int i = NodeIndex(part.node);
    if (i < 0) continue;
    Unindex(i);
    ApplyPart(view_.nodes[i], part, r, sign, user);
    Index(i);
  }
}

bool NodeLimits::Allows(const NodeSlots& n) const {
  if ((root && n.refuses_root_jobs) || (no_spot && n.spot)) return false;
  return avoid == nullptr || std::find(avoid->begin(), avoid->end(), n.name) == avoid->end();
}

std::optional<NodeAllocation> FitOnNodeSlots(const NodeSlots& n, const Resources& r,
                                             const PlaceRules& rules, int64_t per_node_milli,
                                             Spread* spread) {
  if (!n.schedulable || n.pool != rules.pool || !rules.limits.Allows(n)) return std::nullopt;
  // A job holds it alone, or this one would and cannot.
  if (n.exclusive > 0 || (r.exclusive && !EmptyUntil(n, rules))) return std::nullopt;
  if (!r.exclude.empty() && Named(r.exclude, n.name)) return std::nullopt;
  if (n.free_cpus < r.cpus || n.free_memory_bytes < r.memory_bytes) return std::nullopt;
  if ((r.cpus > 0 || r.memory_bytes > 0) && n.host_reserved_from < rules.until &&
      !(rules.job.value != 0 && n.host_reserved_for == rules.job)) {
    return std::nullopt;
  }
  NodeAllocation part{.node = n.name, .milli_per_gpu = std::min<int64_t>(per_node_milli, 1000)};
  if (per_node_milli == 0) return part;
  if (per_node_milli < 1000) {
    // Best fit among GPUs: the one whose free share is smallest yet enough. Under MPS, among
    // the whole ones and those the job's user shares already.
    const uint64_t user = n.mps ? UserKey(rules.limits.user) : 0;
    const GpuSlot* best = nullptr;
    for (const auto& g : n.gpus) {
      if (!GpuMatches(g, r) || !FreeBefore(g, rules) || g.free_milli < per_node_milli) continue;
      if (g.free_memory_bytes < r.gpu_memory_bytes) continue;
      if (user != 0 && g.sharer != 0 && g.sharer != user) continue;
      if (best == nullptr || g.free_milli < best->free_milli) best = &g;
    }
    if (best == nullptr) return std::nullopt;
    part.gpus.push_back(best->index);
    if (spread != nullptr) *spread = Spread{1, 1, 1};
    return part;
  }
  part.gpus = PickWholeGpus(n, r, rules, static_cast<int>(per_node_milli / 1000), spread);
  if (part.gpus.empty()) return std::nullopt;
  return part;
}

std::optional<std::vector<NodeAllocation>> Placer::Find(const Resources& r,
                                                        const PlaceRules& rules) {
  const PlacerIndex::Pool* found = FindPool(rules.pool);
  if (found == nullptr) return std::nullopt;
  const PlacerIndex::Pool& pool = *found;
  if (pool.free_milli < r.milli_gpus) return std::nullopt;
  const int64_t per_node = r.milli_gpus / r.nodes;
  std::vector<NodeAllocation> out;
  auto take = [&](int node) {
    if (static_cast<int>(out.size()) == r.nodes) return;
    for (const auto& part : out) {
      if (part.node == view_.nodes[node].name) return;
    }
    if (auto part = FitOnNodeSlots(view_.nodes[node], r, rules, per_node, nullptr))
      out.push_back(std::move(*part));
  };
  // The nodes it must have first (--nodelist), each or none; the rest as any job's.
  for (const std::string& name : r.nodelist) {
    const int node = NodeIndex(name);
    const size_t before = out.size();
    if (node >= 0) take(node);
    if (out.size() == before) return std::nullopt;
  }
  if (!r.nodelist.empty() && static_cast<int>(out.size()) == r.nodes) return out;
  if (per_node > 0 && per_node < 1000) {
    for (int node : pool.shared) {
      take(node);
      if (!out.empty()) return out;
    }
  }
  const int first_bucket =
      per_node >= 1000 ? static_cast<int>(per_node / 1000) : (per_node > 0 ? 1 : 0);
  if (per_node >= 1000 && r.nodes == 1) {
    // Topology first, then packing: the best spread among the first few fits, scanning from
    // the fullest nodes that can hold the job.
    std::optional<NodeAllocation> best;
    Spread best_spread;
    int examined = 0;
    const int need = static_cast<int>(per_node / 1000);
    for (size_t b = first_bucket; b < pool.buckets.size() && examined < 4; ++b) {
      for (int node : pool.buckets[b]) {
        Spread s;
        auto part = FitOnNodeSlots(view_.nodes[node], r, rules, per_node, &s);
        if (!part) continue;
        ++examined;
        if (!best || s < best_spread) {
          best = std::move(part);
          best_spread = s;
        }
        bool ideal = s.islands == 1 && (s.switches == 1 || static_cast<int>(b) == need);
        if (ideal || examined >= 4) break;
      }
      if (best && best_spread.islands == 1 &&
          (best_spread.switches == 1 || static_cast<int>(b) == need))
        break;
    }
    if (!best) return std::nullopt;
    out.push_back(std::move(*best));
    return out;
  }
  for (size_t b = first_bucket; b < pool.buckets.size(); ++b) {
    for (int node : pool.buckets[b]) {
      take(node);
      if (static_cast<int>(out.size()) == r.nodes) return out;
    }
  }
  return std::nullopt;
}

std::optional<std::vector<NodeAllocation>> Placer::Place(const Resources& r,
                                                         const PlaceRules& rules) {
  auto found = Find(r, rules);
  if (found) Apply(*found, r, +1, rules.limits.user);
  return found;
}

bool Placer::EverFits(const Resources& r, std::string_view pool) const {
  const int64_t per_node = r.milli_gpus / r.nodes;
  if (!r.nodelist.empty() || !r.exclude.empty()) {
    // Nodes named: a walk over the nodes themselves, which the summary does not name.
    auto holds = [&](const NodeSlots& n) {
      if (!n.schedulable || n.pool != pool || n.total_cpus < r.cpus ||
          n.total_memory_bytes < r.memory_bytes || Named(r.exclude, n.name))
        return false;
      int64_t matching = 0;
      for (const GpuSlot& g : n.gpus) matching += GpuMatches(g, r) ? 1 : 0;
      return per_node < 1000 ? (per_node == 0 || matching > 0) : matching * 1000 >= per_node;
    };
    for (const std::string& name : r.nodelist) {
      const int i = view_.IndexOf(name);
      if (i < 0 || !holds(view_.nodes[i])) return false;
    }
    return std::count_if(view_.nodes.begin(), view_.nodes.end(), holds) >= r.nodes;
  }
  const FitSummary& fit = Fit();
  int nodes_ok = 0;
  for (const FitSummary::Node& n : fit.nodes) {
    if (n.pool != pool || n.cpus < r.cpus || n.memory_bytes < r.memory_bytes) continue;
    int64_t matching = 0;
    for (size_t i = n.first; i < n.last; ++i) {
      const FitSummary::Group& g = fit.groups[i];
      if (GpuTypeMatches(g.model, g.mig_profile, r.gpu_type) &&
          g.memory_bytes >= r.gpu_memory_bytes)
        matching += g.count;
    }
    bool ok = per_node < 1000 ? (per_node == 0 || matching > 0) : matching * 1000 >= per_node;
    nodes_ok += ok ? n.count : 0;
  }
  return nodes_ok >= r.nodes;
}

const FitSummary& Placer::Fit() const {
  if (!hidden_.empty()) {
    Summarize(hidden_fit_);
    return hidden_fit_;
  }
  const std::shared_ptr<const FitSummary>& kept = view_.fit;
  if (kept != nullptr && kept->shape == view_.shape && (view_.shape != 0 || fit_made_))
    return *kept;
  auto made = std::make_shared<FitSummary>();
  Summarize(*made);
  made->shape = view_.shape;
  view_.fit = made;
  fit_made_ = true;
  return *made;
}

void Placer::Summarize(FitSummary& into) const {
  into.nodes.clear();
  into.groups.clear();
  into.mig = false;
  std::vector<FitSummary::Group>& groups = into.groups;
  for (const auto& n : view_.nodes) {
    if (!n.schedulable) continue;
    FitSummary::Node f{n.pool, n.total_cpus, n.total_memory_bytes, groups.size(), 0, 1};
    for (const auto& g : n.gpus) {
      if (!g.usable) continue;
      if (groups.size() > f.first && groups.back().model == g.model &&
          groups.back().memory_bytes == g.memory_bytes) {
        ++groups.back().count;
      } else {
        groups.push_back(FitSummary::Group{g.model, g.mig_profile, g.memory_bytes, 1});
        into.mig |= !g.mig_profile.empty();
      }
    }
    f.last = groups.size();
    // The same as the node before: counted with it.
    if (!into.nodes.empty()) {
      FitSummary::Node& last = into.nodes.back();
      auto same = [](const FitSummary::Group& a, const FitSummary::Group& b) {
        return a.model == b.model && a.memory_bytes == b.memory_bytes && a.count == b.count;
      };
      if (last.pool == f.pool && last.cpus == f.cpus && last.memory_bytes == f.memory_bytes &&
          std::equal(groups.begin() + static_cast<std::ptrdiff_t>(last.first),
                     groups.begin() + static_cast<std::ptrdiff_t>(last.last),
                     groups.begin() + static_cast<std::ptrdiff_t>(f.first),
                     groups.begin() + static_cast<std::ptrdiff_t>(f.last), same)) {
        ++last.count;
        groups.resize(f.first);
        continue;
      }
    }
    into.nodes.push_back(std::move(f));
  }
}

}  // namespace baton::sched
