// Where a job may go, as Slurm's --exclusive, --nodelist and --exclude (Resources): the placer
// honours each now and in its "could it ever" answer, a node held exclusively takes no other
// job, and a pass keeps such a job out of its group's counting.
#include <gtest/gtest.h>

#include "sched/cluster_view.h"
#include "sched/placement.h"
#include "sched/reservations.h"
#include "sched/scheduler.h"
#include "sched_harness.h"

namespace baton::sched {
namespace {

ClusterView Nodes(int count) {
  ClusterView v;
  for (int i = 0; i < count; ++i) v.AddNode(testing::MakeNode("n" + std::to_string(i + 1), 8));
  return v;
}

// Whole GPUs.
Resources Gpus(int gpus, int nodes = 1) { return testing::Gpus(gpus * 1000LL, nodes); }

std::vector<std::string> NodesOf(const std::vector<NodeAllocation>& a) {
  std::vector<std::string> names;
  for (const auto& part : a) names.push_back(part.node);
  return names;
}

TEST(PlacementNamed, AJobGoesToTheNodesItNames) {
  ClusterView v = Nodes(4);
  Placer placer(v);
  Resources r = Gpus(2);
  r.nodelist = {"n3"};
  auto a = placer.Place(r, PlaceRules{});
  ASSERT_TRUE(a);
  EXPECT_EQ(NodesOf(*a), std::vector<std::string>{"n3"});
  // Two nodes, one named: the named one, and one the placer picks.
  Resources two = Gpus(16, 2);
  two.nodelist = {"n4"};
  auto b = placer.Place(two, PlaceRules{});
  ASSERT_TRUE(b);
  ASSERT_EQ(b->size(), 2u);
  EXPECT_EQ((*b)[0].node, "n4");
  EXPECT_NE((*b)[1].node, "n3");  // n3 has 6 GPUs free, not 8
}

TEST(PlacementNamed, AJobWaitsForItsNamedNodeWhenItIsFull) {
  ClusterView v = Nodes(2);
  Placer placer(v);
  ASSERT_TRUE(placer.Place(Gpus(8), PlaceRules{}));  // fills one node
  const std::string full =
      v.nodes[0].free_cpus == 64 && v.nodes[0].gpus[0].free_milli == 1000 ? "n2" : "n1";
  Resources r = Gpus(1);
  r.nodelist = {full};
  EXPECT_FALSE(placer.Place(r, PlaceRules{}));
  EXPECT_TRUE(placer.EverFits(r, "default"));
  r.nodelist = {"n9"};  // no such node: never
  EXPECT_FALSE(placer.EverFits(r, "default"));
}

TEST(PlacementNamed, AJobNeverGoesToANodeItExcludes) {
  ClusterView v = Nodes(3);
  Placer placer(v);
  Resources r = Gpus(4);
  r.exclude = {"n1", "n2"};
  for (int i = 0; i < 2; ++i) {
    auto a = placer.Place(r, PlaceRules{});
    ASSERT_TRUE(a);
    EXPECT_EQ(NodesOf(*a), std::vector<std::string>{"n3"});
  }
  EXPECT_FALSE(placer.Place(r, PlaceRules{}));  // n3 is full; n1 and n2 are not for it
  Resources two = Gpus(2, 2);
  two.exclude = {"n1", "n2"};
  EXPECT_FALSE(placer.EverFits(two, "default"));  // one node is left to it
  two.exclude = {"n1"};
  EXPECT_TRUE(placer.EverFits(two, "default"));
}

TEST(PlacementNamed, AnExclusiveJobTakesOnlyAnEmptyNodeAndKeepsItToItself) {
  ClusterView v = Nodes(2);
  Placer placer(v);
  Resources cpu_only;  // a job without GPUs, CPUs or memory still counts on its node
  cpu_only.nodes = 1;
  auto first = placer.Place(cpu_only, PlaceRules{});
  ASSERT_TRUE(first);
  Resources alone = Gpus(1);
  alone.exclusive = true;
  auto a = placer.Place(alone, PlaceRules{});
  ASSERT_TRUE(a);
  EXPECT_NE((*a)[0].node, (*first)[0].node);
  EXPECT_EQ((*a)[0].gpus.size(), 1u);  // it holds the GPU it asked for, not the node's eight
  const NodeSlots* held = v.FindNode((*a)[0].node);
  EXPECT_EQ(held->jobs, 1);
  EXPECT_EQ(held->exclusive, 1);
  // Seven GPUs are free there, yet no job goes to it (one of seven goes to the other node);
  // nor does a second exclusive job go anywhere.
  Resources there = Gpus(7);
  there.nodelist = {held->name};
  EXPECT_FALSE(placer.Place(there, PlaceRules{}));
  EXPECT_FALSE(placer.Place(alone, PlaceRules{}));
  auto other = placer.Place(Gpus(7), PlaceRules{});
  ASSERT_TRUE(other);
  EXPECT_EQ((*other)[0].node, (*first)[0].node);
  // It ends: the node is everyone's again.
  placer.Apply(*a, alone, -1);
  EXPECT_EQ(held->jobs, 0);
  EXPECT_EQ(held->exclusive, 0);
  EXPECT_TRUE(placer.Place(there, PlaceRules{}));
}

TEST(PlacementNamed, AnExclusiveJobDoesNotTakeANodeReservedForAnother) {
  ClusterView v = Nodes(1);
  v.nodes[0].gpus[7].reserved_from = TimePoint{} + std::chrono::hours(1);
  v.nodes[0].gpus[7].reserved_for = JobId{9};
  Placer placer(v);
  Resources alone = Gpus(1);
  alone.exclusive = true;
  // Without a time limit it would hold GPU 7's node past the reservation.
  EXPECT_FALSE(placer.Place(alone, PlaceRules{}));
  // Ending before it, it may.
  EXPECT_TRUE(placer.Place(alone, PlaceRules{.until = TimePoint{} + std::chrono::minutes(30)}));
}

TEST(PlacementNamed, AReservationOfAnExclusiveJobHoldsTheWholeNode) {
  ClusterView v = Nodes(1);
  Resources alone = Gpus(2);
  alone.exclusive = true;
  Reservation res{.id = JobId{5}, .from = TimePoint{} + std::chrono::hours(2), .resources = alone};
  res.allocation.push_back(NodeAllocation{.node = "n1", .gpus = {0, 1}});
  MarkReservation(v, res);
  for (const GpuSlot& g : v.nodes[0].gpus) EXPECT_EQ(g.reserved_for, JobId{5});
  EXPECT_EQ(v.nodes[0].host_reserved_for, JobId{5});
  // A job with no time limit cannot take the GPUs it did not name either.
  Placer placer(v);
  EXPECT_FALSE(placer.Place(Gpus(1), PlaceRules{}));
  EXPECT_FALSE(MayHoldUntimed(alone));
}

TEST(PlacementNamed, TheRequestInWordsSaysWhereItMayGo) {
  Resources r = Gpus(8, 2);
  r.nodelist = {"gpu01", "gpu02"};
  r.exclude = {"gpu07"};
  r.exclusive = true;
  EXPECT_EQ(DescribeRequest(r),
            "8 GPUs across 2 nodes on nodes gpu[01-02] not on gpu07, its nodes to itself");
}

TEST(PlacementNamed, APassDoesNotTakeAnAlikeJobForOneThatExcludesNodes) {
  // n1 is full; job 1 excludes n2 and waits. Job 2 asks the same but for the exclusion: what
  // failed for job 1 is no answer for it, and it starts on n2.
  ClusterView v = Nodes(2);
  {
    Placer placer(v);
    Resources fill = Gpus(8);
    fill.nodelist = {"n1"};
    ASSERT_TRUE(placer.Place(fill, PlaceRules{}));
  }
  const std::string project = "p", user = "u", pool = "default";
  Resources excluding = Gpus(8);
  excluding.exclude = {"n2"};
  Resources any = Gpus(8);
  PassInput in;
  in.view = v;
  for (int i = 1; i <= 2; ++i) {
    in.pending.push_back(PendingJob{.id = JobId{i},
                                    .resources = i == 1 ? &excluding : &any,
                                    .project = &project,
                                    .user = &user,
                                    .pool = &pool});
  }
  PassResult out = RunPass(std::move(in));
  ASSERT_EQ(out.starts.size(), 1u);
  EXPECT_EQ(out.starts[0].id, JobId{2});
  EXPECT_EQ(NodesOf(out.starts[0].allocation), std::vector<std::string>{"n2"});
  ASSERT_EQ(out.waits.size(), 1u);
  EXPECT_EQ(out.waits[0].id, JobId{1});
}

}  // namespace
}  // namespace baton::sched
