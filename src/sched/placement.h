// Placement: where a job's GPUs go. Topology first — the fewest NVLink islands, then PCIe
// switches, then NUMA nodes — then packing: among nodes that fit, the one with the fewest
// free whole GPUs, so whole nodes and islands stay free for big jobs (no 7/6/7-of-8
// fragmentation). Fractions go to the already-shared GPU they fill best (where MPS shares a
// node's GPUs, one their own user shares, NodeSlots::mps). A gang of N nodes
// is placed on N nodes at once or not at all. GPUs a waiting job reserved from time T are
// used only by jobs that end before T (backfill).
//
// Nodes are kept in buckets by free whole GPUs per pool, each in the view's order (among alike
// nodes, the first in it), so a placement looks at the few nodes that can hold it, not the
// whole cluster.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/job.h"
#include "sched/cluster_view.h"

namespace baton::sched {

struct PlaceRules {
  std::string_view pool = "default";
  NodeLimits limits;
  TimePoint until = kNever;  // when the job will have ended at the latest (now + time limit)
  JobId job;                 // the job placed: its own reservations are open to it
};

// How spread a set of GPUs is; fewer is better, compared in this order.
struct Spread {
  int islands = 0;
  int switches = 0;
  int numas = 0;
  auto operator<=>(const Spread&) const = default;
};

// Picks `need` whole GPUs among `gpus` for `r` under `rules`, topology first; empty if the
// node cannot hold them now. Exposed for tests.
std::vector<int> PickWholeGpus(const NodeSlots& node, const Resources& r, const PlaceRules& rules,
                               int need, Spread* spread = nullptr);

// What node `n` can give `r` now (per_node_milli of it) under `rules`; nullopt if nothing.
std::optional<NodeAllocation> FitOnNodeSlots(const NodeSlots& n, const Resources& r,
                                             const PlaceRules& rules, int64_t per_node_milli,
                                             Spread* spread = nullptr);

// What Placer::EverFits reads of a view: what nodes and GPUs there are, not what is free. A
// node's GPUs are nearly always one model, and a cluster mostly runs of one kind of node: a run of
// alike GPUs is a group, and a run of alike nodes one entry.
struct FitSummary {
  struct Group {
    std::string model;
    std::string mig_profile;  // GpuSlot's
    int64_t memory_bytes;
    int count;  // usable GPUs of this model and memory in a row on the node
  };
  struct Node {
    std::string pool;
    int cpus;
    int64_t memory_bytes;
    size_t first, last;  // its groups
    int count;           // alike nodes in a row
  };
  uint64_t shape = 0;  // ClusterView::shape it was made of
  bool mig = false;    // a usable GPU is a MIG instance
  std::vector<Node> nodes;
  std::vector<Group> groups;
};

// What a Placer indexed of a view: its nodes in buckets by free whole GPUs per pool. Kept in
// the view (ClusterView::placer_index) from one Placer to the next while the view's shape lasts;
// the next looks again only at the nodes whose stamps changed since.
struct PlacerIndex {
  struct Pool {
    // [free whole GPUs] -> node indices, in order: among alike nodes a search takes the first
    // in the view's order, whatever the placements before it.
    std::vector<std::vector<int>> buckets;
    std::set<int> shared;    // nodes with a GPU partly used by fractions
    int64_t free_milli = 0;  // usable GPU capacity free in the pool
    bool indexed = false;    // a schedulable node of it was indexed
  };
  struct NodePos {
    int bucket = -1;  // the bucket it is in; -1: none (not schedulable)
    bool shared = false;
    int64_t free_milli = 0;
  };
  uint64_t shape = 0;  // ClusterView::shape it indexes
  std::vector<std::pair<std::string, Pool>> pools;
  std::vector<int> node_pool;    // per node, its pool's place in pools
  std::vector<NodePos> pos;      // per node, where it is
  std::vector<uint64_t> stamps;  // per node, the stamp it had when indexed
};

class Placer {
 public:
  // Indexes `view`, which must outlive the Placer and change only through it (or by changes
  // that stamp the nodes they change, between Placers).
  explicit Placer(ClusterView& view);
  // Takes GPUs (gpu >= 0) or nodes' hosts (gpu = -1: CPUs and memory) that are in use out of
  // use, for a search that must not count them, until Unhide puts them back as they were.
  struct Slot {
    int node;
    int gpu;
  };
  void Hide(const std::vector<Slot>& slots);
  void Unhide();

  // Finds room for `r` now; on success subtracts it from the view and returns the allocation.
  std::optional<std::vector<NodeAllocation>> Place(const Resources& r, const PlaceRules& rules);
  // Where `r` would go now, without taking anything.
  std::optional<std::vector<NodeAllocation>> Find(const Resources& r, const PlaceRules& rules);
  // Adds (sign +1) or returns (sign -1) an allocation of `user`'s, e.g. a job that ends.
  void Apply(const std::vector<NodeAllocation>& allocation, const Resources& r, int sign,
             std::string_view user = {});
  // Whether `r` could ever fit on this cluster's usable nodes of `pool` if all were empty.
  bool EverFits(const Resources& r, std::string_view pool) const;
  // Whether a usable GPU is a MIG instance: where none is, any GPU matches a request that
  // names no type (GpuTypeMatches), without a look at its model.
  bool AnyMig() const { return Fit().mig; }

  int64_t free_milli(std::string_view pool) const;
  // The place of `pool` among the pools of the index (-1: none), and what is free in the pool
  // at such a place: a pass asks millions of times about a few pools, each looked up once.
  int PoolAt(std::string_view pool) const;
  int64_t free_milli_at(int at) const {
    if (at < 0) return 0;
    const PlacerIndex::Pool& p = ix_.pools[static_cast<size_t>(at)].second;
    return p.indexed ? p.free_milli : 0;
  }
  // The usable GPU capacity free on node `node` (an index into the view's nodes); 0 when it is
  // not schedulable. From the index: no walk over its GPUs.
  int64_t node_free_milli(int node) const { return ix_.pos[node].free_milli; }
  int NodeIndex(const std::string& name) const;
  ClusterView& view() { return view_; }
  const ClusterView& view() const { return view_; }

 private:
  void Index(int node);
  void Unindex(int node);
  // Debug builds: aborts where the kept index is not what the view holds.
  void CheckIndex() const;
  // The pool's index, or nullptr when no schedulable node of it was indexed. A cluster has a few
  // pools: a walk over them is quicker than hashing the name, a few times per job of a pass.
  const PlacerIndex::Pool* FindPool(std::string_view pool) const;
  // What EverFits reads: the view's own (ClusterView::fit) when it was made of the view's shape,
  // else made now and kept there; made apart, and not kept, while slots are hidden (Hide).
  const FitSummary& Fit() const;
  void Summarize(FitSummary& into) const;
  void SetUsable(int node, int gpu, bool usable);

  ClusterView& view_;
  PlacerIndex& ix_;  // the view's (ClusterView::placer_index)
  mutable FitSummary hidden_fit_;
  mutable bool fit_made_ = false;  // this Placer made the view's (a view without a shape)
  std::vector<Slot> hidden_;
};

// Words for a request: "4 GPUs of type H100 with 40GiB GPU memory across 2 nodes".
std::string DescribeRequest(const Resources& r);
// Which part of `r` the schedulable nodes of `pool` cannot give it now, in words: "GPUs: at
// most 3 of type H100 free on one node, 8 asked", "CPUs: the nodes with the GPUs free have at
// most 12 CPUs free, 32 asked"; "" when every part is free somewhere (held by reservations,
// or the nodes that have each part are not the same).
std::string Shortfall(const ClusterView& view, const Resources& r, std::string_view pool);

}  // namespace baton::sched
