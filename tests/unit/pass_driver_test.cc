// A scheduling pass run for the controller (control/pass_driver.h): the queue's plan given to
// the pass with the running jobs and the view, its decisions handed back by index, and none
// when nothing changed.
#include "control/pass_driver.h"

#include <gtest/gtest.h>

#include "control/pass_records.h"
#include "sched_harness.h"

namespace baton::control {
namespace {

using sched::testing::kPassNow;
using sched::testing::MakeNode;

struct Parts {
  Policy policy;
  std::map<JobId, Job> jobs;
  DependencyGate gate;
  sched::JobQueue queue;
  RunningJobs running;
  sched::ClusterView view;
  sched::UsageLedger usage;
  AccountNumbers numbers;

  PassDriver::Parts Lent() {
    return PassDriver::Parts{.policy = policy,
                             .explained_waits = sched::kExplainedWaits,
                             .jobs = jobs,
                             .gate = gate,
                             .queue = queue,
                             .running = running,
                             .view = view,
                             .usage = usage,
                             .numbers = numbers};
  }
  Job& Wait(int64_t id, int64_t milli_gpus, Priority priority = Priority::kNormal) {
    Job& j = jobs[JobId{id}];
    j.id = JobId{id};
    j.user = "ada";
    j.spec.project = "p";
    j.spec.priority = priority;
    j.spec.resources.milli_gpus = milli_gpus;
    j.submitted_at = kPassNow;
    queue.Add(j, PendingOf(j, numbers));
    return j;
  }
};

TEST(PassDriver, RunsThePassTheQueuePlansAndHandsItsJobsBackByIndex) {
  Parts s;
  s.view.nodes.push_back(MakeNode("n1", 8));
  s.Wait(1, 8000);
  s.Wait(2, 4000);
  PassDriver passes;
  std::optional<PassDriver::Ran> ran = passes.Run(s.Lent(), kPassNow);
  ASSERT_TRUE(ran);
  ASSERT_EQ(ran->result.starts.size(), 1u);
  EXPECT_EQ(&ran->JobAt(ran->result.starts[0].index, s.jobs), &s.jobs.at(JobId{1}));
  ASSERT_EQ(ran->result.waits.size(), 1u);
  EXPECT_EQ(ran->JobAt(ran->result.waits[0].index, s.jobs).id, JobId{2});
  EXPECT_EQ(ran->result.waits[0].reason, WaitReason::kResources);
  if (ran->in.full) passes.TakeFull(*ran, s.queue, s.view, s.policy, kPassNow);
  passes.Done(std::move(*ran));
  // Nothing changed since: the queue plans no pass, and none runs.
  EXPECT_FALSE(passes.Run(s.Lent(), kPassNow));
}

TEST(PassDriver, TheLowestRunningClassIsAboveCriticalWhenNoneRuns) {
  RunningJobs running;
  EXPECT_EQ(PassDriver::LowestRunningClass(running), static_cast<int>(Priority::kCritical) + 1);
  Job low;
  low.id = JobId{1};
  low.spec.priority = Priority::kLow;
  Job high;
  high.id = JobId{2};
  high.spec.priority = Priority::kHigh;
  running.emplace(low.id, &low, RunningJobs::Kept{});
  running.emplace(high.id, &high, RunningJobs::Kept{});
  EXPECT_EQ(PassDriver::LowestRunningClass(running), static_cast<int>(Priority::kLow));
}

}  // namespace
}  // namespace baton::control
