// Scenario tests of the scheduling pass, named after what users of other schedulers report.
#include <gtest/gtest.h>

#include "core/node.h"
#include "sched/placement.h"
#include "sched_harness.h"

namespace baton::sched {
namespace {

using std::chrono::hours;
using std::chrono::minutes;
using testing::Gpus;
using testing::MakeNode;
using testing::MiniSim;
using testing::SimJob;

ClusterView Nodes(int count, int gpus, std::string topology = "nvswitch") {
  ClusterView v;
  for (int i = 0; i < count; ++i)
    v.nodes.push_back(MakeNode("n" + std::to_string(i), gpus, "H100-80GB", topology));
  return v;
}

TEST(Scenario, GangDeadlockNeverHappens) {
  // Two 100-GPU gangs on a 100-GPU cluster (25 nodes x 4), with small jobs around them:
  // neither gang holds part of the cluster while it waits; both finish, one after the other.
  MiniSim sim(Nodes(25, 4));
  for (int i = 0; i < 10; ++i)
    sim.Submit(SimJob{.r = Gpus(1000), .limit = hours(1), .duration = minutes(30)});
  SimJob& a = sim.Submit(SimJob{.r = Gpus(100'000, 25), .limit = hours(2), .duration = hours(1)});
  SimJob& b = sim.Submit(SimJob{.r = Gpus(100'000, 25), .limit = hours(2), .duration = hours(1)});
  JobId ida = a.id, idb = b.id;
  PassResult first = sim.Pass();
  for (const auto& s : first.starts) EXPECT_NE(s.id, ida);
  for (const auto& s : first.starts) EXPECT_NE(s.id, idb);
  ASSERT_TRUE(sim.RunToEnd());
  ASSERT_TRUE(sim.job(ida).ended && sim.job(idb).ended);
  EXPECT_TRUE(*sim.job(idb).started >= *sim.job(ida).ended ||
              *sim.job(ida).started >= *sim.job(idb).ended);
}

TEST(Scenario, SmallJobsPackSoAWholeNodeStaysFree) {
  // The 7/6/7 case: small jobs spread over three 8-GPU nodes leave an 8-GPU job waiting
  // with 20 GPUs free. Packing puts them together.
  MiniSim sim(Nodes(3, 8));
  sim.Submit(SimJob{.r = Gpus(1000)});
  sim.Submit(SimJob{.r = Gpus(2000)});
  sim.Submit(SimJob{.r = Gpus(1000)});
  SimJob& big = sim.Submit(SimJob{.r = Gpus(8000)});
  SimJob& big2 = sim.Submit(SimJob{.r = Gpus(8000)});
  PassResult r = sim.Pass();
  EXPECT_EQ(r.starts.size(), 5u);
  EXPECT_TRUE(big.started.has_value());
  EXPECT_TRUE(big2.started.has_value());
}

TEST(Scenario, AHoleIsFilledBeforeAWholeNodeIsBroken) {
  ClusterView v = Nodes(3, 8);
  Placer placer(v);
  auto first = placer.Place(Gpus(1000), {});
  ASSERT_TRUE(first);
  for (int i = 0; i < 3; ++i) {
    auto next = placer.Place(Gpus(2000), {});
    ASSERT_TRUE(next);
    EXPECT_EQ((*next)[0].node, (*first)[0].node);  // into the started node, 7 -> 5 -> 3 -> 1
  }
  int whole_nodes_free = 0;
  for (const auto& n : v.nodes) {
    whole_nodes_free += std::all_of(n.gpus.begin(), n.gpus.end(),
                                    [](const GpuSlot& g) { return g.free_milli == 1000; });
  }
  EXPECT_EQ(whole_nodes_free, 2);
}

TEST(Scenario, TopologyKeepsAJobInsideOneNvlinkIsland) {
  // DGX-1 style cube-mesh: two quads. A 4-GPU job goes into one quad, never across both,
  // even when a GPU of the first quad is taken.
  ClusterView v{{MakeNode("dgx1", 8, "V100-32GB", "cubemesh")}};
  Placer placer(v);
  ASSERT_TRUE(placer.Place(Gpus(1000), {}));  // GPU 0 (quad 0)
  auto four = placer.Place(Gpus(4000), {});
  ASSERT_TRUE(four);
  EXPECT_EQ((*four)[0].gpus, (std::vector<int>{4, 5, 6, 7}));
  auto two = placer.Place(Gpus(2000), {});
  ASSERT_TRUE(two);
  for (int g : (*two)[0].gpus) EXPECT_LT(g, 4);
}

TEST(Scenario, PcieServerPrefersOneSwitchThenOneNumaNode) {
  // 8 x L40S: two PCIe switches per NUMA node (GPUs 0-1, 2-3 | 4-5, 6-7).
  ClusterView v{{MakeNode("l40s", 8, "L40S-48GB", "pcie")}};
  Placer placer(v);
  ASSERT_TRUE(placer.Place(Gpus(1000), {}));  // GPU 0
  auto two = placer.Place(Gpus(2000), {});
  ASSERT_TRUE(two);
  EXPECT_EQ((*two)[0].gpus, (std::vector<int>{2, 3}));  // a whole switch, not 1 + 2
  auto four = placer.Place(Gpus(4000), {});
  ASSERT_TRUE(four);
  EXPECT_EQ((*four)[0].gpus, (std::vector<int>{4, 5, 6, 7}));  // one NUMA node
}

TEST(Scenario, AHeavyUserFloodingTheQueueDoesNotStarveALightUser) {
  MiniSim sim(Nodes(1, 8));
  // The heavy user has run a lot and floods the queue; the light user submits one job later.
  sim.usage().AddRate("p", "heavy", 8000);
  sim.AdvanceTo(sim.now() + hours(4));
  sim.usage().AddRate("p", "heavy", -8000);
  for (int i = 0; i < 8; ++i)
    sim.Submit(SimJob{.r = Gpus(1000), .user = "heavy", .duration = hours(1)});
  sim.Pass();  // the cluster fills with heavy jobs
  for (int i = 0; i < 200; ++i)
    sim.Submit(SimJob{.r = Gpus(1000), .user = "heavy", .duration = hours(1)});
  SimJob& light = sim.Submit(SimJob{.r = Gpus(1000), .user = "light", .duration = hours(1)});
  sim.Pass();
  EXPECT_FALSE(light.started);
  EXPECT_EQ(light.reason, WaitReason::kResources);
  sim.AdvanceTo(*sim.NextEnd());  // GPUs free up
  sim.Pass();
  EXPECT_TRUE(light.started) << light.detail;
}

TEST(Scenario, FairShareAcrossProjectsFollowsConfiguredShares) {
  Policy policy;
  policy.projects["big"].share = 3;
  policy.projects["small"].share = 1;
  MiniSim sim(Nodes(1, 4), policy);
  // Both have used the same: the project with the larger share is further below it.
  sim.usage().AddRate("big", "a", 1000);
  sim.usage().AddRate("small", "b", 1000);
  sim.AdvanceTo(sim.now() + hours(1));
  sim.usage().AddRate("big", "a", -1000);
  sim.usage().AddRate("small", "b", -1000);
  sim.Submit(SimJob{.r = Gpus(4000), .project = "small", .user = "b"});
  SimJob& big = sim.Submit(SimJob{.r = Gpus(4000), .project = "big", .user = "a"});
  PassResult r = sim.Pass();
  ASSERT_EQ(r.order.size(), 2u);
  EXPECT_EQ(r.order[0].id, big.id);
  EXPECT_GT(r.order[0].factors.fairshare, r.order[1].factors.fairshare);
  EXPECT_TRUE(big.started);
}

TEST(Scenario, MigSlicesAreDevicesAndNeverOversubscribed) {
  // An A100 in MIG mode as 3g.40gb + 2g.20gb + 2 x 1g.10gb, beside a whole H100.
  NodeSlots mig = MakeNode("a100", 0);
  const char* profiles[] = {"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"};
  for (int i = 0; i < 4; ++i) {
    mig.gpus.push_back(GpuSlot{.index = i,
                               .model = MigModel("A100-80GB", profiles[i]),
                               .mig_profile = profiles[i],
                               .memory_bytes = 10LL << 30,
                               .free_milli = 1000,
                               .free_memory_bytes = 10LL << 30,
                               .island = 7});
  }
  ClusterView v{{mig, MakeNode("h100", 1)}};
  MiniSim sim(v);
  Resources slice = Gpus(1000);
  slice.gpu_type = "1g.10gb";
  SimJob& a = sim.Submit(SimJob{.r = slice});
  SimJob& b = sim.Submit(SimJob{.r = slice});
  SimJob& c = sim.Submit(SimJob{.r = slice});
  SimJob& whole = sim.Submit(SimJob{.r = Gpus(1000)});
  SimJob& whole2 = sim.Submit(SimJob{.r = Gpus(1000)});
  sim.Pass();
  ASSERT_TRUE(a.started && b.started);
  EXPECT_EQ(a.allocation[0].node, "a100");
  EXPECT_NE(a.allocation[0].gpus, b.allocation[0].gpus);
  EXPECT_GE(a.allocation[0].gpus[0], 2);  // a 1g.10gb instance, not the 3g or 2g one
  EXPECT_FALSE(c.started);                // two such instances only
  EXPECT_TRUE(whole.started);
  EXPECT_EQ(whole.allocation[0].node, "h100");  // a plain GPU request never gets a slice
  EXPECT_FALSE(whole2.started);
  EXPECT_EQ(whole2.reason, WaitReason::kResources);
  EXPECT_TRUE(sim.Consistent());
}

TEST(Scenario, HighPriorityTwoGpuJobPreemptsALowPriorityEightGpuJob) {
  Policy policy;
  policy.preempt_grace = std::chrono::seconds(30);
  MiniSim sim(Nodes(1, 8), policy);
  SimJob& low =
      sim.Submit(SimJob{.r = Gpus(8000), .priority = Priority::kLow, .duration = hours(10)});
  sim.Pass();
  ASSERT_TRUE(low.started);
  sim.AdvanceTo(sim.now() + minutes(5));
  SimJob& high =
      sim.Submit(SimJob{.r = Gpus(2000), .priority = Priority::kHigh, .duration = hours(1)});
  PassResult r = sim.Pass();
  ASSERT_EQ(r.preemptions.size(), 1u);
  EXPECT_EQ(r.preemptions[0].victim, low.id);
  EXPECT_EQ(r.preemptions[0].reason, PreemptReason::kPriority);
  ASSERT_TRUE(high.estimated_start);
  EXPECT_EQ(*high.estimated_start, sim.now() + policy.preempt_grace);
  // Nothing else is preempted while the victim stops.
  EXPECT_TRUE(sim.Pass().preemptions.empty());
  sim.AdvanceTo(*sim.NextEnd());
  sim.Pass();
  EXPECT_TRUE(high.started);
  EXPECT_EQ(low.restarts, 1);
  // The low job comes back when the high one is done, and never preempts it.
  ASSERT_TRUE(sim.RunToEnd());
  for (auto [by, victim] : sim.preemptions()) EXPECT_NE(victim, high.id);
}

TEST(Scenario, PreemptionPicksTheVictimsThatLoseTheLeastWork) {
  MiniSim sim(Nodes(2, 8));
  SimJob& fresh_ckpt =
      sim.Submit(SimJob{.r = Gpus(8000), .priority = Priority::kLow, .duration = hours(10)});
  SimJob& old_ckpt =
      sim.Submit(SimJob{.r = Gpus(8000), .priority = Priority::kLow, .duration = hours(10)});
  sim.Pass();
  sim.AdvanceTo(sim.now() + hours(2));
  fresh_ckpt.checkpoint = sim.now() - minutes(1);
  old_ckpt.checkpoint = sim.now() - minutes(90);
  sim.Submit(SimJob{.r = Gpus(4000), .priority = Priority::kCritical});
  PassResult r = sim.Pass();
  ASSERT_EQ(r.preemptions.size(), 1u);
  EXPECT_EQ(r.preemptions[0].victim, fresh_ckpt.id);
}

// On 2 nodes of 8 GPUs, projects guaranteed 8 GPUs each: while the owner is idle, the borrower
// takes the whole cluster, 8 GPUs beyond its guarantee; then the owner asks for 4 and reclaims
// them by preemption.
void TheOwnerReclaimsFromTheBorrower(MiniSim& sim) {
  SimJob& b1 = sim.Submit(
      SimJob{.r = Gpus(8000), .project = "borrower", .user = "b", .duration = hours(10)});
  SimJob& b2 = sim.Submit(
      SimJob{.r = Gpus(8000), .project = "borrower", .user = "b", .duration = hours(10)});
  sim.Pass();
  ASSERT_TRUE(b1.started && b2.started);
  sim.AdvanceTo(sim.now() + minutes(10));
  SimJob& own =
      sim.Submit(SimJob{.r = Gpus(4000), .project = "owner", .user = "o", .duration = hours(1)});
  PassResult r = sim.Pass();
  ASSERT_EQ(r.preemptions.size(), 1u);
  EXPECT_EQ(r.preemptions[0].reason, PreemptReason::kQuota);
  sim.AdvanceTo(*sim.NextEnd());
  sim.Pass();
  EXPECT_TRUE(own.started);
}

TEST(Scenario, QuotaReclaimReturnsAnIdleProjectsGpus) {
  Policy policy;
  policy.projects["owner"].guaranteed_milli = 8000;
  policy.projects["borrower"].guaranteed_milli = 8000;
  MiniSim sim(Nodes(2, 8), policy);
  TheOwnerReclaimsFromTheBorrower(sim);
  // The borrower, now at its guarantee, cannot reclaim back: no cycle.
  size_t before = sim.preemptions().size();
  sim.Pass();
  sim.AdvanceTo(sim.now() + minutes(1));
  sim.Pass();
  EXPECT_EQ(sim.preemptions().size(), before);
}

TEST(Scenario, AGuaranteeEveryProjectHasByDefaultIsReclaimedToo) {
  // `defaults.project.guaranteed` and no project named: each project is guaranteed 8 GPUs.
  Policy policy;
  policy.default_project.guaranteed_milli = 8000;
  MiniSim sim(Nodes(2, 8), policy);
  TheOwnerReclaimsFromTheBorrower(sim);
}

TEST(Scenario, BackfillNeverDelaysTheReservedJob) {
  MiniSim sim(Nodes(1, 8));
  SimJob& running = sim.Submit(SimJob{.r = Gpus(6000), .limit = hours(1), .duration = hours(1)});
  sim.Pass();
  ASSERT_TRUE(running.started);
  SimJob& wide = sim.Submit(SimJob{.r = Gpus(8000), .limit = hours(1)});
  SimJob& too_long = sim.Submit(SimJob{.r = Gpus(2000), .limit = hours(2)});
  SimJob& unbounded = sim.Submit(SimJob{.r = Gpus(2000)});
  SimJob& short_one =
      sim.Submit(SimJob{.r = Gpus(2000), .limit = minutes(30), .duration = minutes(20)});
  sim.Pass();
  EXPECT_FALSE(wide.started);
  EXPECT_FALSE(too_long.started);
  EXPECT_FALSE(unbounded.started);
  EXPECT_TRUE(short_one.started);
  ASSERT_TRUE(wide.estimated_start);
  EXPECT_EQ(*wide.estimated_start, *running.started + hours(1));
  EXPECT_NE(wide.detail.find("expected start"), std::string::npos) << wide.detail;
  ASSERT_TRUE(sim.RunToEnd());
  EXPECT_EQ(*wide.started, *running.started + hours(1));
}

TEST(Scenario, StrictFifoWithoutBackfillHoldsEveryoneBehindTheFirst) {
  Policy policy;
  policy.backfill = false;
  MiniSim sim(Nodes(1, 8), policy);
  sim.Submit(SimJob{.r = Gpus(6000), .limit = hours(1)});
  sim.Pass();
  SimJob& wide = sim.Submit(SimJob{.r = Gpus(8000)});
  SimJob& small = sim.Submit(SimJob{.r = Gpus(1000), .limit = minutes(5)});
  sim.Pass();
  EXPECT_FALSE(wide.started);
  EXPECT_FALSE(small.started);
  EXPECT_EQ(small.reason, WaitReason::kPriority);
}

TEST(Scenario, ProjectLimitsAndUserLimitsHold) {
  Policy policy;
  policy.projects["capped"].limit_milli = 4000;
  policy.users["alice"].max_jobs = 2;
  MiniSim sim(Nodes(2, 8), policy);
  for (int i = 0; i < 3; ++i) sim.Submit(SimJob{.r = Gpus(2000), .project = "capped"});
  for (int i = 0; i < 3; ++i) sim.Submit(SimJob{.r = Gpus(1000), .user = "alice"});
  PassResult r = sim.Pass();
  EXPECT_EQ(r.starts.size(), 4u);
  int quota_waits = 0;
  for (const auto& w : r.waits) {
    EXPECT_EQ(w.reason, WaitReason::kQuota);
    quota_waits += 1;
  }
  EXPECT_EQ(quota_waits, 2);
  EXPECT_NE(sim.job(3).detail.find("project capped holds 4 GPUs of its limit of 4 GPUs"),
            std::string::npos)
      << sim.job(3).detail;
  EXPECT_NE(sim.job(6).detail.find("user alice runs 2 of a limit of 2 jobs"), std::string::npos)
      << sim.job(6).detail;
}

TEST(Scenario, PoolsKeepTheirNodes) {
  ClusterView v;
  v.nodes.push_back(MakeNode("dev1", 2, "L40S-48GB", "pcie", "dev"));
  v.nodes.push_back(MakeNode("prod1", 8));
  MiniSim sim(v);
  SimJob& dev = sim.Submit(SimJob{.r = Gpus(2000), .pool = "dev"});
  SimJob& dev2 = sim.Submit(SimJob{.r = Gpus(1000), .pool = "dev"});
  SimJob& nowhere = sim.Submit(SimJob{.r = Gpus(1000), .pool = "gone"});
  sim.Pass();
  ASSERT_TRUE(dev.started);
  EXPECT_EQ(dev.allocation[0].node, "dev1");
  EXPECT_FALSE(dev2.started);  // prod GPUs are free, but not in its pool
  EXPECT_FALSE(nowhere.started);
  EXPECT_NE(nowhere.detail.find("no node in pool gone"), std::string::npos) << nowhere.detail;
}

TEST(Scenario, AgingLetsALowPriorityJobOvertakeEventually) {
  Policy policy;
  policy.max_age = hours(1);
  policy.weights.age = 20'000;  // an hour of waiting outweighs two classes
  MiniSim sim(Nodes(1, 1), policy);
  SimJob& low = sim.Submit(SimJob{.r = Gpus(1000), .priority = Priority::kLow});
  sim.AdvanceTo(sim.now() + hours(2));
  SimJob& high = sim.Submit(SimJob{.r = Gpus(1000), .priority = Priority::kHigh});
  PassResult r = sim.Pass();
  ASSERT_EQ(r.order.size(), 2u);
  EXPECT_EQ(r.order[0].id, low.id);
  (void)high;
}

TEST(Scenario, EveryWaitingJobSaysWhyInWords) {
  MiniSim sim(Nodes(1, 4));
  sim.Submit(SimJob{.r = Gpus(4000), .limit = hours(1)});
  sim.Pass();
  SimJob& next = sim.Submit(SimJob{.r = Gpus(4000), .limit = hours(1)});
  SimJob& after = sim.Submit(SimJob{.r = Gpus(2000), .limit = hours(3)});
  sim.Pass();
  EXPECT_EQ(next.reason, WaitReason::kResources);
  EXPECT_NE(next.detail.find("waiting for 4 GPUs"), std::string::npos) << next.detail;
  EXPECT_NE(next.detail.find("expected start in ~1h"), std::string::npos) << next.detail;
  EXPECT_NE(after.detail.find("1 job ahead"), std::string::npos) << after.detail;
}

TEST(Scenario, AQueueExplainedOnlyInPartDecidesAsOneExplainedInFull) {
  // 300 jobs of mixed sizes and time limits on 3 nodes of 8: the first few start, later ones
  // get reservations, the rest wait. A pass asked to explain 2 of them (the simulator's full
  // passes explain none) starts, reserves and orders exactly the same, and says the same first
  // two sentences.
  auto queue = [](int explained) {
    MiniSim sim(Nodes(3, 8));
    sim.explained = explained;
    for (int i = 0; i < 300; ++i) {
      sim.Submit(SimJob{.r = Gpus(int64_t{1000} << (i % 4)),
                        .limit = i % 3 == 0 ? Duration(0) : hours(1 + i % 5),
                        .duration = hours(1)});
    }
    return sim.Pass();
  };
  const PassResult all = queue(kExplainedWaits);
  const PassResult two = queue(2);
  ASSERT_EQ(all.waits.size(), static_cast<size_t>(kExplainedWaits));
  ASSERT_EQ(two.waits.size(), 2u);
  ASSERT_FALSE(all.starts.empty());
  ASSERT_FALSE(all.reservations.empty());
  ASSERT_EQ(two.starts.size(), all.starts.size());
  for (size_t i = 0; i < all.starts.size(); ++i) {
    EXPECT_EQ(two.starts[i].id, all.starts[i].id);
    EXPECT_EQ(two.starts[i].allocation, all.starts[i].allocation);
  }
  ASSERT_EQ(two.reservations.size(), all.reservations.size());
  for (size_t i = 0; i < all.reservations.size(); ++i) {
    EXPECT_EQ(two.reservations[i].id, all.reservations[i].id);
    EXPECT_EQ(two.reservations[i].from, all.reservations[i].from);
    EXPECT_EQ(two.reservations[i].allocation, all.reservations[i].allocation);
  }
  for (size_t i = 0; i < two.waits.size(); ++i) {
    EXPECT_EQ(two.waits[i].id, all.waits[i].id);
    EXPECT_EQ(two.Detail(two.waits[i], testing::kPassNow),
              all.Detail(all.waits[i], testing::kPassNow));
  }
  ASSERT_EQ(two.order.size(), all.order.size());
  for (size_t i = 0; i < std::min(two.sorted, all.sorted); ++i)
    EXPECT_EQ(two.order[i].id, all.order[i].id);
}

}  // namespace
}  // namespace baton::sched
