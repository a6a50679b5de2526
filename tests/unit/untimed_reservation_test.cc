// Reservations without a start time: when the running jobs have no time limits, the first
// waiting job of a pool that cannot start holds the node it fits on soonest, so that small jobs
// arriving behind it cannot take every GPU that frees.
#include <gtest/gtest.h>

#include "core/policy.h"
#include "sched/reservations.h"
#include "sched/scheduler.h"
#include "sched_harness.h"

namespace baton::sched {
namespace {

using testing::kPassNow;
using testing::MakeNode;
using testing::PassJobs;

// Two 8-GPU nodes: n1 has 6 GPUs busy, n2 has 7; no running job has a time limit. An 8-GPU
// job waits; behind it, one-GPU jobs.
PassResult HeldOrNot(bool untimed, PassJobs& f) {
  ClusterView view{{MakeNode("n1", 8), MakeNode("n2", 8)}};
  RunningJob a = f.Running(view, 1, "n1", 0, 6, 0);
  RunningJob b = f.Running(view, 2, "n2", 0, 7, 0);
  static Policy policy;
  policy = Policy{};
  policy.untimed_reservation = untimed;
  PassInput in{.view = view, .policy = &policy, .now = kPassNow};
  in.running = {a, b};
  in.pending = {f.Pending(3, 8000, 0, kPassNow - std::chrono::hours(2)),
                f.Pending(4, 1000, 0, kPassNow), f.Pending(5, 1000, 0, kPassNow),
                f.Pending(6, 1000, 0, kPassNow)};
  return RunPass(std::move(in));
}

TEST(UntimedReservation, TheFirstBigJobHoldsTheNodeClosestToFreeAndSmallJobsGoElsewhere) {
  PassJobs f;
  PassResult r = HeldOrNot(true, f);
  ASSERT_EQ(r.reservations.size(), 1u);
  const Reservation& held = r.reservations[0];
  EXPECT_EQ(held.id, JobId{3});
  ASSERT_EQ(held.allocation.size(), 1u);
  EXPECT_EQ(held.allocation[0].node, "n1");  // 2 GPUs free there, 1 on n2
  EXPECT_EQ(held.allocation[0].gpus,
            (std::vector<int>{6, 7, 0, 1, 2, 3, 4, 5}));  // free ones first
  // The one-GPU jobs take n2's free GPU only; n1's two free GPUs stay held.
  ASSERT_EQ(r.starts.size(), 1u);
  EXPECT_EQ(r.starts[0].allocation[0].node, "n2");
  bool said = false;
  for (const Wait& w : r.waits) {
    if (w.id != JobId{3}) continue;
    said = r.Detail(w, kPassNow).find("holding n1 for it as running jobs end") != std::string::npos;
    EXPECT_FALSE(w.estimated_start.has_value());  // nothing says when
  }
  EXPECT_TRUE(said);
}

// A node of `count` MIG instances 1g.10gb of A100s.
NodeSlots Slices(const std::string& name, int count) {
  NodeSlots n = MakeNode(name, count, MigModel("A100-80GB", "1g.10gb"));
  for (GpuSlot& g : n.gpus) g.mig_profile = "1g.10gb";
  return n;
}

TEST(UntimedReservation, AJobThatNamesNoTypeHoldsWholeGpusNeverMigSlices) {
  // "mig" has eight free MIG slices, "whole" six busy GPUs of eight: a job of 4 GPUs that
  // names no type gets whole GPUs only, so it holds "whole".
  ClusterView view{{Slices("mig", 8), MakeNode("whole", 8)}};
  for (int i = 0; i < 6; ++i) view.nodes[1].gpus[i].free_milli = 0;
  Placer placer(view);
  Resources r;
  r.milli_gpus = 4000;
  std::optional<Reservation> held = Untimed(placer, r, "default", kPassNow, NodeLimits{});
  ASSERT_TRUE(held.has_value());
  ASSERT_EQ(held->allocation.size(), 1u);
  EXPECT_EQ(held->allocation[0].node, "whole");
  EXPECT_EQ(held->allocation[0].gpus, (std::vector<int>{6, 7, 0, 1}));  // free ones first
  // A cluster of slices alone holds nothing for it.
  ClusterView slices{{Slices("mig", 8)}};
  Placer on_slices(slices);
  EXPECT_FALSE(Untimed(on_slices, r, "default", kPassNow, NodeLimits{}).has_value());
}

TEST(UntimedReservation, HoldsTheNodeWithTheMostFreeTheFirstAmongEqualsAndOnlyWhereEnoughAreFree) {
  // Five nodes of 8 GPUs, `busy` of each in use; a job of 4 GPUs.
  auto held_on = [](std::vector<int> busy, int gpus, std::vector<int> reserved = {}) {
    ClusterView view;
    for (size_t i = 0; i < busy.size(); ++i) {
      view.nodes.push_back(MakeNode("n" + std::to_string(i + 1), 8));
      for (int g = 0; g < busy[i]; ++g) view.nodes.back().gpus[g].free_milli = 0;
    }
    // GPUs held for another job (from the end of the node): not this job's to hold.
    for (size_t i = 0; i < reserved.size(); ++i) {
      for (int g = 0; g < reserved[i]; ++g) view.nodes[i].gpus[7 - g].reserved_from = kPassNow;
    }
    Placer placer(view);
    Resources r;
    r.milli_gpus = gpus * 1000;
    std::optional<Reservation> held = Untimed(placer, r, "default", kPassNow, NodeLimits{});
    return held ? held->allocation.at(0).node : std::string("none");
  };
  EXPECT_EQ(held_on({8, 6, 5, 5, 8}, 4), "n3");  // 3 free on n3 and n4: the first
  EXPECT_EQ(held_on({8, 8, 8, 8, 8}, 4), "n1");  // none free anywhere: the first
  EXPECT_EQ(held_on({3, 0, 8, 8, 8}, 4), "n1");  // 5 and 8 free: both as good as 4
  EXPECT_EQ(held_on({3, 0, 8, 8, 8}, 2), "n1");
  // n3's free GPUs are held for another job, two of them and more: only 3 of its GPUs could be
  // this job's, not enough.
  EXPECT_EQ(held_on({8, 6, 3, 5, 8}, 4, {0, 0, 5}), "n4");
  // Held GPUs on every node but n5: n5, though nothing is free there.
  EXPECT_EQ(held_on({8, 6, 3, 5, 8}, 4, {5, 5, 5, 5}), "n5");
}

TEST(UntimedReservation, WhenTurnedOffSmallJobsFillEveryGap) {
  PassJobs f;
  PassResult r = HeldOrNot(false, f);
  EXPECT_TRUE(r.reservations.empty());
  EXPECT_EQ(r.starts.size(), 3u);  // n1's two free GPUs and n2's one
}

}  // namespace
}  // namespace baton::sched

namespace baton::sched {
namespace {

TEST(UntimedReservation, AGangOverSeveralNodesHoldsNone) {
  PassJobs f;
  ClusterView view{{testing::MakeNode("n1", 8), testing::MakeNode("n2", 8)}};
  RunningJob a = f.Running(view, 1, "n1", 0, 4, 0);
  RunningJob b = f.Running(view, 2, "n2", 0, 4, 0);
  Policy policy;
  PassInput in{.view = view, .policy = &policy, .now = kPassNow};
  in.running = {a, b};
  PendingJob gang = f.Pending(3, 16'000, 0, kPassNow - std::chrono::hours(2));
  f.resources[3].nodes = 2;
  in.pending = {gang, f.Pending(4, 1000, 0, kPassNow)};
  PassResult r = RunPass(std::move(in));
  EXPECT_TRUE(r.reservations.empty());  // holding two nodes for an unknown time costs too much
  ASSERT_EQ(r.starts.size(), 1u);
  EXPECT_EQ(r.starts[0].id, JobId{4});
}

}  // namespace
}  // namespace baton::sched

namespace baton::sched {
namespace {

TEST(UntimedReservation, APassThatIsNotFullStillStartsTheJobGpusAreHeldFor) {
  // The last full pass held n1's two free GPUs from now for job 3 (2 GPUs). A head pass (jobs
  // ended since) that explains no waits, as the simulator's: job 4, older, cannot take held
  // GPUs and waits; the walk must still reach job 3, which may take its own.
  PassJobs f;
  ClusterView view{{testing::MakeNode("n1", 8)}};
  RunningJob a = f.Running(view, 1, "n1", 0, 6, 0);
  Reservation held{.id = JobId{3},
                   .from = kPassNow,
                   .allocation = {NodeAllocation{.node = "n1", .gpus = {6, 7}}},
                   .resources = Resources{.milli_gpus = 2000}};
  MarkReservation(view, held);
  Policy policy;
  PassInput in{.view = view, .policy = &policy, .now = kPassNow};
  in.full = false;
  in.explained = 0;
  in.running = {a};
  in.pending = {f.Pending(4, 1000, 0, kPassNow - std::chrono::hours(3)),
                f.Pending(3, 2000, 0, kPassNow - std::chrono::hours(1))};
  PassResult r = RunPass(std::move(in));
  ASSERT_EQ(r.starts.size(), 1u);
  EXPECT_EQ(r.starts[0].id, JobId{3});
  EXPECT_EQ(r.starts[0].allocation[0].gpus, (std::vector<int>{6, 7}));
}

}  // namespace
}  // namespace baton::sched
