#include "sched/placement.h"

#include <gtest/gtest.h>

#include <optional>

#include "sched/scheduler.h"

namespace baton::sched {
namespace {

NodeSlots Node(std::string name, int gpus, std::string model = "H100-80GB") {
  NodeSlots n;
  n.name = std::move(name);
  for (int i = 0; i < gpus; ++i) {
    n.gpus.push_back(GpuSlot{.index = i,
                             .model = model,
                             .memory_bytes = 80LL << 30,
                             .free_milli = 1000,
                             .free_memory_bytes = 80LL << 30});
  }
  n.total_cpus = n.free_cpus = 64;
  n.total_memory_bytes = n.free_memory_bytes = 512LL << 30;
  return n;
}

Resources Gpus(int64_t milli, int nodes = 1) {
  Resources r;
  r.milli_gpus = milli;
  r.nodes = nodes;
  return r;
}

enum class Fit { kPlaced, kNotNow, kNever };
struct Placement {
  Fit fit = Fit::kNotNow;
  std::vector<NodeAllocation> allocation;
};

// One placement on `v` now, as a pass makes it.
Placement PlaceFirstFit(ClusterView& v, const Resources& r) {
  Placer placer(v);
  if (auto a = placer.Place(r, PlaceRules{})) return {Fit::kPlaced, *a};
  return {placer.EverFits(r, "default") ? Fit::kNotNow : Fit::kNever, {}};
}

const std::string kProject = "p", kUser = "u", kPool = "default";

// A pass over jobs 1..n in this order (equal scores: submit order decides).
PassResult Pass(const ClusterView& v, const std::vector<const Resources*>& jobs,
                const Policy* policy = nullptr) {
  PassInput in;
  in.view = v;
  in.policy = policy;
  for (size_t i = 0; i < jobs.size(); ++i) {
    in.pending.push_back(PendingJob{.id = JobId{static_cast<int64_t>(i + 1)},
                                    .resources = jobs[i],
                                    .project = &kProject,
                                    .user = &kUser,
                                    .pool = &kPool});
  }
  return RunPass(std::move(in));
}

TEST(ClusterView, NodesAddedInAnyOrderAreFoundByName) {
  // The controller adds nodes as they first report (AddNode), in no name order; a pass looks
  // each allocation's node up by name.
  ClusterView v;
  for (const char* name : {"gpu-07", "gpu-02", "a", "gpu-10", "gpu-1"}) v.AddNode(Node(name, 1));
  ASSERT_TRUE(v.NamesIndexed());
  EXPECT_EQ(v.IndexOf("gpu-07"), 0);
  EXPECT_EQ(v.IndexOf("gpu-02"), 1);
  EXPECT_EQ(v.IndexOf("a"), 2);
  EXPECT_EQ(v.IndexOf("gpu-10"), 3);
  EXPECT_EQ(v.IndexOf("gpu-1"), 4);
  EXPECT_EQ(v.IndexOf("gpu-0"), -1);
  EXPECT_EQ(v.IndexOf("zz"), -1);
  EXPECT_EQ(v.FindNode("gpu-10"), &v.nodes[3]);
  // A copy (each pass's) finds the same; so does a placer over it.
  ClusterView copy = v;
  Placer placer(copy);
  EXPECT_EQ(placer.NodeIndex("gpu-1"), 4);
  // Nodes pushed past the index (as tests build views) are found too: the index is made again.
  v.nodes.push_back(Node("b", 1));
  EXPECT_FALSE(v.NamesIndexed());
  EXPECT_EQ(v.IndexOf("b"), 5);
  EXPECT_EQ(v.IndexOf("gpu-02"), 1);
  v.AddNode(Node("c", 1));
  EXPECT_EQ(v.IndexOf("c"), 6);
}

TEST(ClusterView, ACopyKeptFromPassToPassFollowsTheViewItCopies) {
  // The controller copies its view into the last pass's buffer before each pass (CopyFrom),
  // which copies only what is free and reserved while the nodes are what they were.
  ClusterView v;
  v.AddNode(Node("a", 4));
  v.AddNode(Node("b", 2));
  ClusterView copy;
  copy.CopyFrom(v);
  EXPECT_EQ(copy.nodes, v.nodes);
  // Starts and reservations change the view; a pass changed its copy (a start, a hidden GPU).
  Resources r = Gpus(2000);
  r.cpus = 8;
  v.Apply({NodeAllocation{.node = "a", .gpus = {0, 1}, .milli_per_gpu = 1000}}, r, +1);
  MarkReservation(v, Reservation{.id = JobId{7},
                                 .from = TimePoint{} + std::chrono::hours(1),
                                 .allocation = {NodeAllocation{.node = "b", .gpus = {1}}}});
  ApplyPart(copy.nodes[1], NodeAllocation{.node = "b", .gpus = {0}, .milli_per_gpu = 1000}, r, +1);
  Placer(copy).Hide({Placer::Slot{.node = 0, .gpu = 3}});
  copy.CopyFrom(v);
  EXPECT_EQ(copy.nodes, v.nodes);
  // Only the nodes whose stamps differ are looked at: every change above stamped its node. A
  // node changed without (no code of Baton's does) is left as it is.
  copy.nodes[0].free_cpus = 1;
  copy.CopyFrom(v);
  EXPECT_EQ(copy.nodes[0].free_cpus, 1);
  copy.nodes[0].stamp = NewStamp();
  copy.CopyFrom(v);
  EXPECT_EQ(copy.nodes, v.nodes);
  // A node is changed (it registered again with other GPUs, in another pool), or added.
  NodeSlots* b = v.FindNode("b");
  b->gpus[0].model = "A100-40GB";
  b->pool = "p2";
  copy.CopyFrom(v);
  EXPECT_EQ(copy.nodes, v.nodes);
  v.AddNode(Node("c", 1));
  copy.CopyFrom(v);
  EXPECT_EQ(copy.nodes, v.nodes);
  EXPECT_EQ(copy.IndexOf("c"), 2);
}

TEST(Placement, APlacersIndexKeptWithTheViewFollowsWhatChangedBetweenPlacers) {
  // Each pass's Placer finds the index the last one left in the pass's copy of the view, and
  // indexes again only the nodes that changed since: jobs that ended or started on the
  // controller's view, and what the last pass placed on its copy.
  ClusterView v;
  for (const char* name : {"a", "b", "c"}) v.AddNode(Node(name, 8));
  ClusterView copy;
  copy.CopyFrom(v);
  std::optional<std::vector<NodeAllocation>> first = Placer(copy).Place(Gpus(8000), PlaceRules{});
  ASSERT_TRUE(first);
  EXPECT_NE(copy.placer_index.index, nullptr);
  // The controller starts it, and a job of 4 GPUs on each of the other two.
  v.Apply(*first, Gpus(8000), +1);
  for (const char* name : {"a", "b", "c"}) {
    if (name == first->front().node) continue;
    v.Apply({NodeAllocation{.node = name, .gpus = {0, 1, 2, 3}, .milli_per_gpu = 1000}}, Gpus(4000),
            +1);
  }
  copy.CopyFrom(v);
  {
    Placer placer(copy);
    EXPECT_EQ(placer.free_milli("default"), 8000);
    // A pool's place, looked up once, says what its name says as placements change it.
    const int at = placer.PoolAt("default");
    EXPECT_GE(at, 0);
    EXPECT_EQ(placer.free_milli_at(at), 8000);
    EXPECT_EQ(placer.PoolAt("gpu-big"), -1);
    EXPECT_EQ(placer.free_milli_at(placer.PoolAt("gpu-big")), 0);
    EXPECT_FALSE(placer.Place(Gpus(8000), PlaceRules{}));
    EXPECT_TRUE(placer.Place(Gpus(4000), PlaceRules{}));
    EXPECT_EQ(placer.free_milli("default"), 4000);
    EXPECT_EQ(placer.free_milli_at(at), 4000);
  }
  // The whole node's job ends; the next pass's copy drops what the last pass placed.
  v.Apply(*first, Gpus(8000), -1);
  copy.CopyFrom(v);
  Placer placer(copy);
  EXPECT_EQ(placer.free_milli("default"), 16000);
  std::optional<std::vector<NodeAllocation>> again = placer.Place(Gpus(8000), PlaceRules{});
  ASSERT_TRUE(again);
  EXPECT_EQ(again->front().node, first->front().node);
  // A copy of the view is indexed anew, never sharing the index of the view it copies.
  ClusterView other = copy;
  EXPECT_EQ(other.placer_index.index, nullptr);
  EXPECT_EQ(Placer(other).free_milli("default"), 8000);
}

TEST(Placement, WhatEverFitsFollowsTheNodesAsTheyChange) {
  // What EverFits reads of a view is kept with it from pass to pass while its nodes stay what
  // they are: made again when one changes or joins, and not counting GPUs a search hides.
  ClusterView v;
  v.AddNode(Node("a", 8));
  Resources h100 = Gpus(8000), a100 = Gpus(4000);
  h100.gpu_type = "H100";
  a100.gpu_type = "A100";
  ClusterView copy;
  copy.CopyFrom(v);
  EXPECT_TRUE(Placer(copy).EverFits(h100, "default"));
  EXPECT_FALSE(Placer(copy).EverFits(a100, "default"));
  NodeSlots* a = v.FindNode("a");
  for (int i = 0; i < 4; ++i) a->gpus[i].model = "A100-80GB";
  copy.CopyFrom(v);
  EXPECT_FALSE(Placer(copy).EverFits(h100, "default"));
  EXPECT_TRUE(Placer(copy).EverFits(a100, "default"));
  v.AddNode(Node("b", 8));
  copy.CopyFrom(v);
  Placer placer(copy);
  EXPECT_TRUE(placer.EverFits(h100, "default"));
  placer.Hide({Placer::Slot{.node = 1, .gpu = -1}});
  EXPECT_FALSE(placer.EverFits(h100, "default"));
  placer.Unhide();
  EXPECT_TRUE(placer.EverFits(h100, "default"));
}

TEST(Placement, WholeGpusOnOneNodeInIndexOrder) {
  ClusterView v{{Node("a", 8)}};
  Placement p = PlaceFirstFit(v, Gpus(3000));
  ASSERT_EQ(p.fit, Fit::kPlaced);
  ASSERT_EQ(p.allocation.size(), 1u);
  EXPECT_EQ(p.allocation[0].gpus, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(v.FreeWholeGpus(), 5);
}

TEST(Placement, NeverSplitsASingleNodeJobAcrossNodes) {
  ClusterView v{{Node("a", 4), Node("b", 4)}};
  ASSERT_EQ(PlaceFirstFit(v, Gpus(3000)).fit, Fit::kPlaced);
  Placement p = PlaceFirstFit(v, Gpus(2000));
  ASSERT_EQ(p.fit, Fit::kPlaced);
  EXPECT_EQ(p.allocation[0].node, "b");
  EXPECT_EQ(PlaceFirstFit(v, Gpus(3000)).fit, Fit::kNotNow);  // 1 + 2 free, not on one node
  EXPECT_EQ(PlaceFirstFit(v, Gpus(5000)).fit, Fit::kNever);   // no node has 5
}

TEST(Placement, GangIsAllOrNothing) {
  ClusterView v{{Node("a", 4), Node("b", 4), Node("c", 4)}};
  ASSERT_EQ(PlaceFirstFit(v, Gpus(1000)).fit, Fit::kPlaced);  // a has 3 left
  Placement p = PlaceFirstFit(v, Gpus(8000, 2));
  ASSERT_EQ(p.fit, Fit::kPlaced);
  ASSERT_EQ(p.allocation.size(), 2u);
  EXPECT_EQ(p.allocation[0].node, "b");
  EXPECT_EQ(p.allocation[1].node, "c");
  ClusterView before = v;
  Placement q = PlaceFirstFit(v, Gpus(8000, 2));
  EXPECT_NE(q.fit, Fit::kPlaced);
  EXPECT_EQ(v.FreeWholeGpus(), before.FreeWholeGpus());  // nothing held on a failed gang
}

// Whether a gang could ever fit counts nodes of one kind in a row each (the summary keeps them
// as one), and a node of another kind between them or after them by itself.
TEST(Placement, AGangEverFitsOnAsManyNodesOfItsKindAsItAsks) {
  ClusterView v{{Node("a", 8), Node("b", 8), Node("c", 8), Node("d", 4), Node("e", 8)}};
  for (auto& n : v.nodes) {
    for (auto& g : n.gpus) g.free_milli = 0;  // all busy: nothing fits now
  }
  Placer placer(v);
  EXPECT_TRUE(placer.EverFits(Gpus(32'000, 4), "default"));   // a, b, c and e
  EXPECT_FALSE(placer.EverFits(Gpus(40'000, 5), "default"));  // d has 4
  EXPECT_TRUE(placer.EverFits(Gpus(20'000, 5), "default"));
  EXPECT_FALSE(placer.EverFits(Gpus(48'000, 6), "default"));
  EXPECT_FALSE(placer.EverFits(Gpus(8000), "p2"));
}

TEST(Placement, FractionsPackOntoASharedGpuFirst) {
  ClusterView v{{Node("a", 2)}};
  Placement p1 = PlaceFirstFit(v, Gpus(500));
  Placement p2 = PlaceFirstFit(v, Gpus(250));
  ASSERT_EQ(p1.fit, Fit::kPlaced);
  ASSERT_EQ(p2.fit, Fit::kPlaced);
  EXPECT_EQ(p1.allocation[0].gpus, p2.allocation[0].gpus);
  EXPECT_EQ(p2.allocation[0].milli_per_gpu, 250);
  EXPECT_EQ(v.FreeWholeGpus(), 1);
  EXPECT_EQ(PlaceFirstFit(v, Gpus(2000)).fit, Fit::kNotNow);
}

TEST(Placement, FractionalMemoryIsNeverOversubscribed) {
  ClusterView v{{Node("a", 1)}};
  Resources r = Gpus(100);
  r.gpu_memory_bytes = 50LL << 30;
  ASSERT_EQ(PlaceFirstFit(v, r).fit, Fit::kPlaced);
  EXPECT_EQ(PlaceFirstFit(v, r).fit, Fit::kNotNow);  // 100 GiB > 80 GiB though compute is free
}

TEST(Placement, GpuTypeConstraint) {
  ClusterView v{{Node("a", 8, "A100-40GB"), Node("b", 2, "H100-80GB")}};
  Resources r = Gpus(2000);
  r.gpu_type = "H100";
  Placement p = PlaceFirstFit(v, r);
  ASSERT_EQ(p.fit, Fit::kPlaced);
  EXPECT_EQ(p.allocation[0].node, "b");
  EXPECT_EQ(PlaceFirstFit(v, r).fit, Fit::kNotNow);
  r.gpu_type = "B200";
  Placement never = PlaceFirstFit(v, r);
  EXPECT_EQ(never.fit, Fit::kNever);
  EXPECT_NE(DescribeRequest(r).find("B200"), std::string::npos);
}

TEST(Pass, PriorityOrderWithoutHoldingBackSmallerJobs) {
  ClusterView v{{Node("a", 8)}};
  Resources big = Gpus(8000), one = Gpus(1000);
  ASSERT_EQ(PlaceFirstFit(v, Gpus(4000)).fit, Fit::kPlaced);
  // (With nothing to say when the 4 busy GPUs free, the big job would otherwise hold the node:
  // untimed_reservation_test.cc.)
  Policy policy;
  policy.untimed_reservation = false;
  PassResult r = Pass(v, {&big, &one, &one}, &policy);
  ASSERT_EQ(r.starts.size(), 2u);
  EXPECT_EQ(r.starts[0].id, JobId{2});
  EXPECT_EQ(r.starts[1].id, JobId{3});
  ASSERT_EQ(r.waits.size(), 1u);
  EXPECT_EQ(r.waits[0].id, JobId{1});
  EXPECT_EQ(r.waits[0].reason, WaitReason::kResources);
  EXPECT_FALSE(r.Detail(r.waits[0], TimePoint{}).empty());
}

TEST(Pass, CpuOnlyJobsStillStartWhenGpusAreFull) {
  ClusterView v{{Node("a", 1)}};
  Resources gpu = Gpus(1000), cpu = Gpus(0);
  cpu.cpus = 2;
  PassResult r = Pass(v, {&gpu, &gpu, &cpu});
  ASSERT_EQ(r.starts.size(), 2u);
  EXPECT_EQ(r.starts[1].id, JobId{3});
}

}  // namespace
}  // namespace baton::sched
