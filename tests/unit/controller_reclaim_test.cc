// Preemptions as the controller counts them (issue 40): a spot node's reclaim notice stops its
// jobs with the time left as their grace and requeues them without a retry spent; every
// preemption says its deadline while it runs, and a job's budget of preemptions
// (max_preemptions) ends it failed at the next one.
#include <gtest/gtest.h>

#include "controller_fixture.h"

namespace baton::control {
namespace {

class ControllerReclaimTest : public ControllerTest {
 protected:
  void ReportReclaim(const std::string& node, Duration left) {
    auto r = Run(AgentReport{ReportRequest{
        .node = node,
        .session = session_,
        .reclaim = ReclaimNotice{.source = "aws", .seen = now_, .deadline = now_ + left}}});
    ASSERT_TRUE(r.status.ok()) << r.status.message();
  }
  JobId SubmitSpec(JobSpec s) {
    s.command = {"true"};
    auto r = Run(SubmitJobs{.caller = {"ada", true}, .specs = {s}});
    EXPECT_TRUE(r.status.ok()) << r.status.message();
    return r->jobs.at(0).id;
  }
  const Job& JobOf(JobId id) { return *c_->FindJob(id); }
};

TEST_F(ControllerReclaimTest, ANoticeStopsItsJobsWithTheTimeLeftAndRequeuesThemWithoutARetry) {
  RegisterNode("spot1", 2);
  JobId job = StartJob("spot1", 1000, Priority::kNormal);
  now_ += seconds(5);
  ReportReclaim("spot1", seconds(120));
  std::vector<Order> orders = Poll("spot1");
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_EQ(orders[0].kind, Order::Kind::kStop);
  EXPECT_EQ(orders[0].stop.reason, StopReason::kPreempt);
  EXPECT_EQ(orders[0].stop.grace_period, seconds(120));
  EXPECT_EQ(JobOf(job).preempt_deadline, now_ + seconds(120));
  EXPECT_EQ(JobOf(job).reason_detail,
            "preempted: its spot node spot1 is taken back (aws reclaim notice, deadline "
            "2026-09-21T14:15:25.000Z)");
  // The node takes nothing new meanwhile.
  JobId waits = Submit(1000);
  EXPECT_EQ(State(waits), JobState::kPending);

  // It checkpoints and exits 143 (its SIGTERM handler's): back to the queue, a preemption
  // counted and no retry spent (it has none).
  ReportEvent("spot1", {.job = job, .kind = JobEvent::Kind::kExited, .exit_code = 143});
  const Job& j = JobOf(job);
  EXPECT_EQ(j.state, JobState::kPending);
  EXPECT_EQ(j.restarts, 1);
  EXPECT_EQ(j.preemptions, 1);
  EXPECT_EQ(j.failures, 0);
  EXPECT_FALSE(j.preempt_deadline.has_value());
  EXPECT_EQ(j.last_requeue,
            "requeued: preempted: its spot node spot1 is taken back (aws reclaim notice, "
            "deadline 2026-09-21T14:15:25.000Z)");
}

TEST_F(ControllerReclaimTest, APreemptionSaysItsDeadlineAndTheBudgetEndsTheOneAfterIt) {
  RegisterNode("n1", 1);
  JobSpec once;
  once.resources.milli_gpus = 1000;
  once.priority = Priority::kLow;
  once.max_preemptions = 1;
  JobId low = SubmitSpec(once);
  Poll("n1");
  ReportEvent("n1", {.job = low, .kind = JobEvent::Kind::kStarted});

  // Preempted once for a high job: SIGKILL due after the preemption grace, said on the job.
  now_ += seconds(10);
  JobId high = Submit(1000, Priority::kHigh);
  Poll("n1");
  EXPECT_EQ(JobOf(low).preempt_deadline, now_ + seconds(30));
  ReportEvent("n1", {.job = low, .kind = JobEvent::Kind::kExited, .signal = 15});
  EXPECT_EQ(State(low), JobState::kPending);
  EXPECT_EQ(JobOf(low).preemptions, 1);
  Poll("n1");
  ReportEvent("n1", {.job = high, .kind = JobEvent::Kind::kStarted});
  ReportEvent("n1", {.job = high, .kind = JobEvent::Kind::kExited});
  now_ += seconds(5);
  (void)Run(Tick{});  // the next full pass starts it again
  Poll("n1");
  ReportEvent("n1", {.job = low, .attempt = 1, .kind = JobEvent::Kind::kStarted});
  ASSERT_EQ(State(low), JobState::kRunning) << JobOf(low).reason_detail;

  // The second preemption is beyond its budget of one: it fails, saying so.
  now_ += seconds(10);
  JobId again = Submit(1000, Priority::kHigh);
  Poll("n1");
  ReportEvent("n1", {.job = low, .attempt = 1, .kind = JobEvent::Kind::kExited, .signal = 15});
  EXPECT_EQ(State(low), JobState::kFailed);
  EXPECT_EQ(JobOf(low).preemptions, 1);
  EXPECT_EQ(JobOf(low).reason_detail,
            "preempted (priority) for job " + again.ToString() +
                "; not requeued: its 1 preemption is spent (max_preemptions)");
}

TEST_F(ControllerReclaimTest, AFailedGpusStopIsNoPreemption) {
  RegisterNode("n1", 1);
  JobSpec none;
  none.resources.milli_gpus = 1000;
  none.max_preemptions = 0;
  JobId job = SubmitSpec(none);
  Poll("n1");
  ReportEvent("n1", {.job = job, .kind = JobEvent::Kind::kStarted});
  auto r = Run(AgentReport{ReportRequest{
      .node = "n1",
      .session = session_,
      .health = {GpuHealth{
          .index = 0, .state = GpuHealthState::kReset, .reason = "xid 79", .since = now_}}}});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_FALSE(JobOf(job).preempt_deadline.has_value());
  ReportEvent("n1", {.job = job, .kind = JobEvent::Kind::kExited, .signal = 9});
  // Requeued (no preemption spent, though it may have none), as a hardware fault always is.
  EXPECT_EQ(State(job), JobState::kPending);
  EXPECT_EQ(JobOf(job).preemptions, 0);
}

}  // namespace
}  // namespace baton::control
