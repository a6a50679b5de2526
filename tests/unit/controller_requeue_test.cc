// Jobs that are never requeued (`requeue: false`, Slurm's --no-requeue): what Baton stops them
// for (preemption, a failed GPU, a lost node) ends them as failed, saying why, instead of
// sending them back to the queue to run a second time.
#include <gtest/gtest.h>

#include "controller_fixture.h"

namespace baton::control {
namespace {

class ControllerRequeueTest : public ControllerTest {
 protected:
  // A job of ada's on `node`, started, that is never requeued.
  JobId StartOnce(const std::string& node, int64_t milli_gpus, Priority p) {
    JobSpec s;
    s.name = "once";
    s.command = {"true"};
    s.resources.milli_gpus = milli_gpus;
    s.priority = p;
    s.requeue = false;
    auto r = Run(SubmitJobs{.caller = {"ada", true}, .specs = {s}});
    EXPECT_TRUE(r.status.ok()) << r.status.message();
    JobId id = r->jobs.at(0).id;
    Poll(node);
    ReportEvent(node, {.job = id, .kind = JobEvent::Kind::kStarted});
    EXPECT_EQ(State(id), JobState::kRunning);
    return id;
  }
  std::string Detail(JobId id) { return c_->FindJob(id)->reason_detail; }
  std::vector<ClusterEvent> Events() { return Run(GetEvents{})->events; }
};

TEST_F(ControllerRequeueTest, APreemptedJobThatIsNeverRequeuedFailsSayingWhy) {
  RegisterNode("n1", 8);
  JobId once = StartOnce("n1", 8000, Priority::kLow);
  now_ += seconds(10);
  JobId high = Submit(2000, Priority::kHigh);
  std::vector<Order> orders = Poll("n1");
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_EQ(orders[0].stop.job, once);
  EXPECT_EQ(orders[0].stop.reason, StopReason::kPreempt);
  ReportEvent("n1", {.job = once, .kind = JobEvent::Kind::kExited, .signal = 15});
  const Job* j = c_->FindJob(once);
  EXPECT_EQ(j->state, JobState::kFailed);
  EXPECT_EQ(j->restarts, 0);
  EXPECT_EQ(Detail(once),
            "preempted (priority) for job " + high.ToString() + "; not requeued (requeue: false)");
  EXPECT_EQ(State(high), JobState::kRunning);
  auto events = Events();
  EXPECT_TRUE(std::any_of(events.begin(), events.end(), [&](const ClusterEvent& e) {
    return e.kind == EventKind::kJobFailed && e.job == once.value;
  }));
}

TEST_F(ControllerRequeueTest, AJobOfALostNodeThatIsNeverRequeuedFailsOnceTheFenceHasPassed) {
  RegisterNode("n1", 1);
  JobId once = StartOnce("n1", 1000, Priority::kNormal);
  JobId again = Submit(0);  // a requeued job beside it, for the event's words
  Poll("n1");
  ReportEvent("n1", {.job = again, .kind = JobEvent::Kind::kStarted});
  now_ += seconds(61);
  Run(Tick{});  // lost: its copy may still run until the fence has passed
  EXPECT_EQ(State(once), JobState::kRunning);
  auto events = Events();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().kind, EventKind::kNodeLost);
  EXPECT_NE(events.back().message.find("its jobs are requeued at "), std::string::npos);
  EXPECT_NE(events.back().message.find("(" + once.ToString() + " never requeued: failed then)"),
            std::string::npos)
      << events.back().message;
  now_ += seconds(13);
  Run(Tick{});
  EXPECT_EQ(State(once), JobState::kFailed);
  EXPECT_EQ(Detail(once), "its node was lost while it ran; not requeued (requeue: false)");
  EXPECT_EQ(c_->FindJob(once)->restarts, 0);
  EXPECT_EQ(State(again), JobState::kPending);  // the other one goes back, as always
  // The node comes back: the failed job is not started a second time.
  RegisterNode("n1", 1);
  EXPECT_EQ(State(once), JobState::kFailed);
  EXPECT_EQ(State(again), JobState::kRunning);
}

TEST_F(ControllerRequeueTest, AJobOnAFailedGpuThatIsNeverRequeuedFailsAndTheEventSaysSo) {
  RegisterNode("n1", 2);
  JobId once = StartOnce("n1", 1000, Priority::kNormal);
  JobId other = StartJob("n1", 1000, Priority::kNormal);
  std::vector<GpuHealth> health;  // what the agent reports: each failed GPU, kept failed
  for (JobId id : {once, other}) {
    health.push_back(GpuHealth{.index = c_->FindJob(id)->allocation.at(0).gpus.at(0),
                               .state = GpuHealthState::kReset,
                               .reason = "xid 79: fell off bus",
                               .since = now_});
    auto r = Run(AgentReport{ReportRequest{.node = "n1", .session = session_, .health = health}});
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    std::vector<Order> orders = Poll("n1");
    ASSERT_EQ(orders.size(), 1u);
    EXPECT_EQ(orders[0].stop.job, id);
    const std::string said = Events().back().message;
    if (id == once) {
      EXPECT_NE(said.find("; stopped job " + once.ToString() + " (never requeued: it fails)"),
                std::string::npos)
          << said;
      EXPECT_EQ(said.find("requeued job"), std::string::npos) << said;
    } else {
      EXPECT_NE(said.find("; requeued job " + other.ToString()), std::string::npos) << said;
    }
    ReportEvent("n1", {.job = id, .kind = JobEvent::Kind::kExited, .signal = 9});
  }
  EXPECT_EQ(State(once), JobState::kFailed);
  EXPECT_NE(Detail(once).find("failed: xid 79: fell off bus; not requeued (requeue: false)"),
            std::string::npos)
      << Detail(once);
  EXPECT_EQ(State(other), JobState::kPending);
}

TEST_F(ControllerRequeueTest, ItsOwnFailureEndsItAsForAnyJob) {
  RegisterNode("n1", 2);
  JobId once = StartOnce("n1", 1000, Priority::kNormal);
  ReportEvent("n1", {.job = once, .kind = JobEvent::Kind::kExited, .exit_code = 3});
  EXPECT_EQ(State(once), JobState::kFailed);
  EXPECT_EQ(Detail(once), "exited with code 3");
}

TEST_F(ControllerRequeueTest, ItIsKeptAcrossARestartAndRefusedWithRetries) {
  RegisterNode("n1", 1);
  JobId once = StartOnce("n1", 1000, Priority::kNormal);
  c_ = std::make_unique<Controller>();
  c_->Restore(*store_.Load(), now_);
  EXPECT_FALSE(c_->FindJob(once)->spec.requeue);
  JobSpec s;
  s.command = {"true"};
  s.requeue = false;
  s.retries = 2;
  auto r = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}});
  ASSERT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.message(),
            "retries: a job that is never requeued (requeue: false) has no retries");
}

}  // namespace
}  // namespace baton::control
