// What `preemptible` means to the scheduler (Run:ai's meaning, docs/scheduling.md): a job that
// is not preemptible is never a victim, starts only within its project's guarantee where the
// policy sets guarantees, and never goes to a spot node; a preemptible one may borrow idle GPUs
// and spot nodes. Driven as a cluster would drive the pass (MiniSim).
#include <gtest/gtest.h>

#include "sched_harness.h"

namespace baton::sched {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using testing::Gpus;
using testing::MakeNode;
using testing::MiniSim;
using testing::SimJob;

ClusterView OneNode(int gpus) { return ClusterView{{MakeNode("n0", gpus)}}; }

TEST(Preemptible, AJobThatIsNotIsNeverAVictimOfAHigherClass) {
  MiniSim sim(OneNode(8));
  SimJob& low = sim.Submit(SimJob{
      .r = Gpus(8000), .priority = Priority::kLow, .duration = hours(10), .preemptible = false});
  sim.Pass();
  ASSERT_TRUE(low.started);
  sim.AdvanceTo(sim.now() + minutes(5));
  SimJob& high = sim.Submit(SimJob{.r = Gpus(2000), .priority = Priority::kCritical});
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(sim.Pass().preemptions.empty());
    sim.AdvanceTo(sim.now() + minutes(1));
  }
  EXPECT_FALSE(high.started);
  EXPECT_EQ(high.reason, WaitReason::kResources) << high.detail;
  // The same job, preemptible (a batch job's default), yields to it.
  MiniSim again(OneNode(8));
  SimJob& yields =
      again.Submit(SimJob{.r = Gpus(8000), .priority = Priority::kLow, .duration = hours(10)});
  again.Pass();
  again.AdvanceTo(again.now() + minutes(5));
  again.Submit(SimJob{.r = Gpus(2000), .priority = Priority::kCritical});
  PassResult r = again.Pass();
  ASSERT_EQ(r.preemptions.size(), 1u);
  EXPECT_EQ(r.preemptions[0].victim, yields.id);
}

TEST(Preemptible, AJobThatIsNotRunsWithinItsProjectsGuaranteeAndAPreemptibleOneBorrows) {
  Policy policy;
  policy.projects["p"].guaranteed_milli = 4000;
  MiniSim sim(OneNode(8), policy);
  SimJob& within = sim.Submit(SimJob{.r = Gpus(4000), .preemptible = false});
  SimJob& beyond = sim.Submit(SimJob{.r = Gpus(2000), .preemptible = false});
  SimJob& borrows = sim.Submit(SimJob{.r = Gpus(2000)});
  sim.Pass();
  EXPECT_TRUE(within.started);
  EXPECT_FALSE(beyond.started);
  EXPECT_TRUE(borrows.started);
  EXPECT_EQ(beyond.reason, WaitReason::kQuota);
  EXPECT_EQ(beyond.detail,
            "not preemptible: it runs within project p's guarantee of 4 GPUs, of which 4 GPUs are "
            "held (--preemptible lets it use idle GPUs beyond, and be preempted for them)");
  // Once its project holds room under the guarantee again, it starts.
  sim.AdvanceTo(*within.started + minutes(10) + std::chrono::seconds(1));
  ASSERT_TRUE(within.ended);
  sim.Pass();
  ASSERT_TRUE(borrows.ended);  // started with `within`, the same duration
  EXPECT_TRUE(beyond.started);
}

TEST(Preemptible, WithoutGuaranteesAJobThatIsNotRunsOnAnyIdleGpu) {
  MiniSim sim(OneNode(8));
  SimJob& big = sim.Submit(SimJob{.r = Gpus(8000), .preemptible = false});
  sim.Pass();
  EXPECT_TRUE(big.started);
}

TEST(Preemptible, AJobThatIsNotNeverGoesToASpotNodeAndSaysWhyItWaits) {
  ClusterView view{{MakeNode("spot0", 8), MakeNode("od0", 4)}};
  view.nodes[0].spot = true;
  MiniSim sim(view);
  SimJob& busy = sim.Submit(SimJob{.r = Gpus(4000), .duration = hours(1), .preemptible = false});
  sim.Pass();
  ASSERT_TRUE(busy.started);
  ASSERT_EQ(busy.allocation.size(), 1u);
  EXPECT_EQ(busy.allocation[0].node, "od0");
  SimJob& waits = sim.Submit(SimJob{.r = Gpus(1000), .preemptible = false});
  SimJob& spot = sim.Submit(SimJob{.r = Gpus(1000)});
  sim.Pass();
  EXPECT_FALSE(waits.started);
  EXPECT_EQ(waits.detail.rfind("waiting for 1 GPU; 0 GPUs free in pool default on nodes that are "
                               "not spot (1 spot node runs only preemptible jobs: --preemptible "
                               "lets it use them)",
                               0),
            0u)
      << waits.detail;
  ASSERT_TRUE(spot.started);
  EXPECT_EQ(spot.allocation[0].node, "spot0");
  // It starts on the on-demand node as soon as that has room.
  sim.AdvanceTo(*busy.started + hours(1) + std::chrono::seconds(1));
  sim.Pass();
  ASSERT_TRUE(waits.started);
  EXPECT_EQ(waits.allocation[0].node, "od0");
}

TEST(Preemptible, QueuedAlikeJobsThatDifferOnlyInPreemptibleAreJudgedApart) {
  // Grouped as the controller's queue groups them: a spot node takes the preemptible ones only.
  ClusterView view{{MakeNode("spot0", 2)}};
  view.nodes[0].spot = true;
  MiniSim sim(view);
  sim.grouped = true;
  SimJob& a = sim.Submit(SimJob{.r = Gpus(1000), .preemptible = false});
  SimJob& b = sim.Submit(SimJob{.r = Gpus(1000)});
  SimJob& c = sim.Submit(SimJob{.r = Gpus(1000)});
  sim.Pass();
  EXPECT_FALSE(a.started);
  EXPECT_TRUE(b.started);
  EXPECT_TRUE(c.started);
}

}  // namespace
}  // namespace baton::sched
