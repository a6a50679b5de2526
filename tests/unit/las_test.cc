// Least attained service (Tiresias' two-dimensional LAS): the `las` factor orders jobs by the
// GPU-time they have had, and `las_preemption` lets a job of an earlier level take the GPUs of a
// running job of a later one, never of a higher class.
#include <gtest/gtest.h>

#include "core/policy.h"
#include "sched/scheduler.h"
#include "sched_harness.h"

namespace baton::sched {
namespace {

using testing::MakeNode;
using Fixture = testing::PassJobs;
using testing::kPassNow;

const TimePoint kNow = kPassNow;

Policy LasPolicy(bool preempt) {
  Policy p;
  p.weights = Weights{.priority = 10'000, .fairshare = 0, .age = 0, .size = 0, .las = 1'000};
  p.las_thresholds = {3600, 36'000};
  p.las_preemption = preempt;
  p.preemption = preempt;
  return p;
}

TEST(Las, LevelsCountTheThresholdsReached) {
  Policy p = LasPolicy(false);
  EXPECT_EQ(LasLevel(p, 0), 0);
  EXPECT_EQ(LasLevel(p, 3599), 0);
  EXPECT_EQ(LasLevel(p, 3600), 1);
  EXPECT_EQ(LasLevel(p, 36'000), 2);
  EXPECT_EQ(LasLevel(std::vector<double>{}, 1e9), 0);  // no thresholds: one level
  EXPECT_EQ(LasLevel(Policy{}, 36'000), 1);            // the default: one, at 10 GPU-hours
}

TEST(Las, TheJobWithLessGpuTimeGoesFirstThenSubmitOrder) {
  Fixture f;
  ClusterView view{{MakeNode("n1", 1)}};
  Policy policy = LasPolicy(false);
  PassInput in{.view = view, .policy = &policy, .now = kNow};
  // Job 1 came first but has had 2 GPU-hours (level 1); jobs 2 and 3 are new (level 0).
  in.pending = {f.Pending(1, 1000, 7200, kNow - std::chrono::hours(3)),
                f.Pending(2, 1000, 0, kNow - std::chrono::hours(2)),
                f.Pending(3, 1000, 10, kNow - std::chrono::hours(1))};
  PassResult r = RunPass(std::move(in));
  ASSERT_EQ(r.order.size(), 3u);
  EXPECT_EQ(r.order[0].id, JobId{2});
  EXPECT_EQ(r.order[1].id, JobId{3});
  EXPECT_EQ(r.order[2].id, JobId{1});
  EXPECT_DOUBLE_EQ(r.order[0].factors.las, 1.0);
  EXPECT_DOUBLE_EQ(r.order[2].factors.las, 0.5);
  ASSERT_EQ(r.starts.size(), 1u);
  EXPECT_EQ(r.starts[0].id, JobId{2});
}

TEST(Las, ANewJobPreemptsTheJobThatHasHadMoreGpuTime) {
  Fixture f;
  ClusterView view{{MakeNode("n1", 8)}};
  RunningJob old = f.Running(view, 1, "n1", 0, 8, /*service=*/8 * 3600.0);  // level 1
  Policy policy = LasPolicy(true);
  PassInput in{.view = view, .policy = &policy, .now = kNow};
  in.running = {old};
  in.pending = {f.Pending(2, 4000, 0)};
  PassResult r = RunPass(std::move(in));
  ASSERT_EQ(r.preemptions.size(), 1u);
  EXPECT_EQ(r.preemptions[0].victim, JobId{1});
  EXPECT_EQ(r.preemptions[0].for_job, JobId{2});
  EXPECT_EQ(r.preemptions[0].reason, PreemptReason::kService);
}

TEST(Las, NoPreemptionWithinALevelOrWhenTurnedOffOrFromAHigherClass) {
  for (int c = 0; c < 3; ++c) {
    SCOPED_TRACE(c);
    Fixture f;
    ClusterView view{{MakeNode("n1", 8)}};
    // Case 0: the running job is in the same level as the waiting one (both under 1 GPU-hour).
    // Case 1: it is a level later, but LAS preemption is off. Case 2: a level later, but of a
    // higher class than the waiting job.
    double service = c == 0 ? 1000 : 8 * 3600.0;
    Priority priority = c == 2 ? Priority::kHigh : Priority::kNormal;
    RunningJob old = f.Running(view, 1, "n1", 0, 8, service, priority);
    Policy policy = LasPolicy(c != 1);
    PassInput in{.view = view, .policy = &policy, .now = kNow};
    in.running = {old};
    in.pending = {f.Pending(2, 4000, 0)};
    PassResult r = RunPass(std::move(in));
    EXPECT_TRUE(r.preemptions.empty());
    ASSERT_EQ(r.waits.size(), 1u);
    EXPECT_EQ(r.waits[0].reason, WaitReason::kResources);
  }
}

// The budget (issue 41): a job LAS has preempted as often as `las_preemption_budget` says is no
// longer its victim, so a long job yields its GPUs once, not again and again; a higher class
// still takes them, and with no budget LAS preempts it as often as it crosses a level.
TEST(Las, AJobPreemptedItsBudgetsWorthIsNoLongerAVictimOfLas) {
  for (int c = 0; c < 3; ++c) {
    SCOPED_TRACE(c);
    Fixture f;
    ClusterView view{{MakeNode("n1", 8)}};
    RunningJob old = f.Running(view, 1, "n1", 0, 8, /*service=*/8 * 3600.0);  // level 1
    old.preemptions = 1;
    Policy policy = LasPolicy(true);
    ASSERT_EQ(policy.las_preemption_budget, std::optional<int>(1));  // the default
    if (c == 1) policy.las_preemption_budget.reset();
    PassInput in{.view = view, .policy = &policy, .now = kNow};
    in.running = {old};
    PendingJob next = f.Pending(2, 4000, 0);
    if (c == 2) next.priority = Priority::kHigh;
    in.pending = {next};
    PassResult r = RunPass(std::move(in));
    if (c == 0) {
      EXPECT_TRUE(r.preemptions.empty());
      ASSERT_EQ(r.waits.size(), 1u);
      EXPECT_EQ(r.waits[0].reason, WaitReason::kResources);
      continue;
    }
    ASSERT_EQ(r.preemptions.size(), 1u);
    EXPECT_EQ(r.preemptions[0].victim, JobId{1});
    EXPECT_EQ(r.preemptions[0].reason, c == 1 ? PreemptReason::kService : PreemptReason::kPriority);
  }
}

}  // namespace
}  // namespace baton::sched
