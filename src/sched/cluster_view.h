// The scheduler's picture of the cluster: what every schedulable GPU, CPU and byte of memory
// has free right now, where each GPU sits (NVLink island, PCIe switch, NUMA node), and which
// GPUs a waiting job has reserved from when. The controller builds it; passes copy it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/job.h"

namespace baton::sched {

inline constexpr TimePoint kNever = TimePoint::max();

// Which change of a node's contents a node holds: a number no other change of any view's nodes
// had, given by every change of what is free, usable or reserved on it (ApplyPart,
// MarkReservation, ClearReservations, a Placer's Hide and Unhide, AddNode, FindNode) and kept by
// a copy. Two nodes of views of one shape with one stamp hold the same, so that a copy of the
// view (CopyFrom) and a Placer's index (placement.h) look only at the nodes that changed. Not
// part of what a node holds: nodes that hold the same are equal whatever their stamps.
struct Stamp {
  uint64_t value = 0;
  bool operator==(const Stamp&) const { return true; }
};
Stamp NewStamp();

struct GpuSlot {
  int index = 0;
  std::string model;
  std::string mig_profile;  // a MIG instance's ("1g.10gb"); "" = a whole GPU (core Gpu's)
  int64_t memory_bytes = 0;
  int64_t free_milli = 1000;      // 1000 = whole GPU free; less = shared by fractional jobs
  int64_t free_memory_bytes = 0;  // memory not promised to fractional jobs
  bool usable = true;             // false when drained or failed
  int island = 0;                 // NVLink/NVSwitch island
  int pcie_switch = 0;
  int numa_node = 0;
  TimePoint reserved_from = kNever;  // a waiting job's reservation starts here (backfill)
  JobId reserved_for;                // ... and this is the job
  // Whose fractional jobs share it (UserKey of the first that took a share while it was whole);
  // 0 while it is whole. On a node whose GPUs MPS shares (NodeSlots::mps) that user's alone.
  uint64_t sharer = 0;
  bool operator==(const GpuSlot&) const = default;
};

struct NodeSlots {
  std::string name;
  std::string pool = "default";
  std::vector<GpuSlot> gpus;
  int total_cpus = 0;
  int free_cpus = 0;
  int64_t total_memory_bytes = 0;
  int64_t free_memory_bytes = 0;
  bool schedulable = true;         // false when lost or drained
  bool refuses_root_jobs = false;  // its agent does not run root's jobs
  bool spot = false;               // a spot node: preemptible jobs only
  // An MPS daemon shares each of its GPUs among one user's fractional jobs at a time (its agent
  // runs them, NodeInfo::mps): another user's fraction goes to another GPU.
  bool mps = false;
  TimePoint host_reserved_from = kNever;  // CPUs/memory reserved from here
  JobId host_reserved_for;
  int jobs = 0;           // allocations on it (ApplyPart counts them)
  int exclusive = 0;      // ... of which of jobs that hold it alone (Resources::exclusive)
  bool reserved = false;  // a reservation is marked on it (ClearReservations clears these)
  Stamp stamp;            // its last change (Stamp)
  bool operator==(const NodeSlots&) const = default;
};

// Nodes a job may not go to: its agent refuses the job's user (root), or the job could not
// start there before (a launch failure: the node is likely at fault, another may run it).
struct NodeLimits {
  bool root = false;
  bool no_spot = false;  // a job that is not preemptible: never on a spot node
  const std::vector<std::string>* avoid = nullptr;
  // The job's user: a GPU of an MPS node (NodeSlots::mps) that another user's fractional jobs
  // share takes none of its fractions. "" = anyone's.
  std::string_view user;
  bool Allows(const NodeSlots& n) const;
  bool any() const { return root || no_spot || (avoid != nullptr && !avoid->empty()); }
};

struct FitSummary;   // sched/placement.h
struct PlacerIndex;  // ... and what a Placer indexed of a view

// A Placer's index of the view it is in, kept from pass to pass: moved with the view, dropped
// by a copy (a copy is indexed anew).
struct KeptIndex {
  std::shared_ptr<PlacerIndex> index;
  KeptIndex() = default;
  KeptIndex(const KeptIndex&) {}
  KeptIndex& operator=(const KeptIndex&) {
    index.reset();
    return *this;
  }
  KeptIndex(KeptIndex&&) noexcept = default;
  KeptIndex& operator=(KeptIndex&&) noexcept = default;
};

struct ClusterView {
  std::vector<NodeSlots> nodes;
  // Indices of `nodes` in name order (ties by index), kept by AddNode, so that a lookup by name
  // is a binary search and no pass sorts the names again; made again by the first lookup after
  // nodes were pushed otherwise (tests). Copied with the view.
  mutable std::vector<int> by_name;
  // What nodes there are and what they hold (names, pools, GPUs, totals) as a stamp no other
  // shape of any view had: made again by AddNode and by the FindNode that lets a caller change a
  // node. 0: never stamped (a view built by pushing nodes). Copied with the view.
  uint64_t shape = 0;
  // What a Placer made of this shape for EverFits (FitSummary::shape says which), kept from pass
  // to pass while the shape lasts.
  mutable std::shared_ptr<const FitSummary> fit;
  // What a Placer made of this view's free GPUs (placement.h), brought up to date by the next
  // Placer from the nodes' stamps.
  KeptIndex placer_index;

  // Adds a node at the end of `nodes`, in its place in by_name.
  void AddNode(NodeSlots node);
  // The index of the first node named `name`, or -1.
  int IndexOf(std::string_view name) const;
  // Whether by_name covers every node.
  bool NamesIndexed() const { return by_name.size() == nodes.size(); }
  int64_t FreeWholeGpus() const;
  // What the schedulable nodes hold in all, which only a change of shape changes (but a Placer's
  // Hide, which forgets it): counted once per shape.
  struct Totals {
    int64_t usable_milli = 0;   // usable GPUs of schedulable nodes, in milli-GPUs
    bool refuses_root = false;  // a node refuses root's jobs
    bool spot = false;          // a node is a spot node
    bool mps = false;           // a node's GPUs are shared by one user at a time (MPS)
  };
  const Totals& totals() const;
  void ForgetTotals() { totals_shape = 0; }
  // Subtracts (or with sign -1, returns) an allocation's GPUs, CPUs and memory; `user` is the
  // job's (ApplyPart).
  void Apply(const std::vector<NodeAllocation>& allocation, const Resources& r, int sign,
             std::string_view user = {});
  NodeSlots* FindNode(const std::string& name);
  const NodeSlots* FindNode(const std::string& name) const;
  void ClearReservations();
  // Makes this view a copy of `from`. When it is a copy of `from`'s shape already (the
  // controller's view copied into the last pass's buffer), only the nodes whose stamps differ
  // are copied, and of them only what changes between passes: what is free, usable and
  // reserved; the names, models and sizes are left as they are.
  void CopyFrom(const ClusterView& from);

  mutable Totals totals_kept;         // what totals() counted ...
  mutable uint64_t totals_shape = 0;  // ... for this shape; 0: none
};

// A user's name as the number GpuSlot::sharer keeps: never 0, the same for the same name.
uint64_t UserKey(std::string_view user);

// Subtracts (sign +1) or returns (sign -1) one node's part of an allocation, and counts the job
// on the node (an exclusive one apart). A fraction taken of a whole GPU makes `user` (the job's)
// its sharer; the GPU whole again has none. Aborts on oversubscription: that would be a bug in a
// caller, never a user's doing.
void ApplyPart(NodeSlots& node, const NodeAllocation& part, const Resources& r, int sign,
               std::string_view user = {});

}  // namespace baton::sched
