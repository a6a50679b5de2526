// The controller as a state machine: commands in, state and effects out, time as a parameter.
#include "control/controller.h"

#include <gtest/gtest.h>

#include "codec/json_codec.h"
#include "store/memory_store.h"

namespace baton::control {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class ControllerTest : public ::testing::Test {
 protected:
  TimePoint now_ = FromMillis(1'790'000'000'000);
  store::MemoryStore store_;
  std::unique_ptr<Controller> c_ = std::make_unique<Controller>();
  uint64_t session_ = 0;
  uint64_t acked_ = 0;

  void SetUp() override { c_->Restore(*store_.Load(), now_); }

  // Runs one batch as the controller loop does: apply, end the batch, commit the store batch.
  Reply Run(const Command& cmd) {
    Reply r = c_->Apply(cmd, now_);
    Effects fx = c_->EndBatch(now_);
    EXPECT_TRUE(store_.Commit(fx.store).ok());
    last_deliveries_ = fx.deliveries;
    return r;
  }

  void RegisterNode(const std::string& name, int gpus, std::vector<JobEvent> held = {}) {
    NodeInfo info;
    info.name = name;
    for (int i = 0; i < gpus; ++i) {
      info.gpus.push_back(Gpu{.index = i,
                              .uuid = "GPU-" + std::to_string(i),
                              .model = "H100-80GB",
                              .memory_bytes = 80LL << 30});
    }
    info.cpus = 64;
    info.memory_bytes = 512LL << 30;
    info.gpu_backend = "simulated";
    Reply r = Run(AgentRegister{RegisterRequest{.node = info, .jobs = std::move(held)}});
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    session_ = r.registration.session;
    acked_ = 0;
  }

  // Polls for orders as an agent would, acknowledging what it saw before.
  std::vector<Order> Poll(const std::string& node) {
    Reply r =
        Run(AgentPoll{.node = node, .session = session_, .after = acked_, .poll_id = ++poll_});
    EXPECT_TRUE(r.status.ok()) << r.status.message();
    std::vector<Order> orders = r.orders;
    if (r.parked) {
      for (const Delivery& d : last_deliveries_) {
        if (d.poll_id == poll_) orders = d.orders;
      }
    }
    for (const Order& o : orders) acked_ = std::max(acked_, o.seq);
    return orders;
  }

  void ReportEvent(const std::string& node, JobEvent e) {
    e.at = now_;
    Reply r = Run(AgentReport{ReportRequest{.node = node, .session = session_, .events = {e}}});
    ASSERT_TRUE(r.status.ok()) << r.status.message();
  }

  JobId Submit(int64_t milli_gpus, Priority p = Priority::kNormal, std::string key = "") {
    JobSpec s;
    s.name = "j";
    s.command = {"true"};
    s.resources.milli_gpus = milli_gpus;
    s.priority = p;
    Reply r = Run(SubmitJobs{.caller = {"ada", true}, .specs = {s}, .idempotency_key = key});
    EXPECT_TRUE(r.status.ok()) << r.status.message();
    EXPECT_EQ(r.jobs.size(), 1u);
    return r.jobs.empty() ? JobId{0} : r.jobs[0].id;
  }

  // A one-GPU job of ada's that may be retried `retries` times.
  JobId SubmitFailing(int retries) {
    JobSpec s;
    s.command = {"false"};
    s.resources.milli_gpus = 1000;
    s.retries = retries;
    return Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}}).jobs[0].id;
  }

  JobState State(JobId id) { return c_->FindJob(id)->state; }

  // A job submitted, launched on `node` and reported started there.
  JobId StartJob(const std::string& node, int64_t milli_gpus, Priority p) {
    JobId id = Submit(milli_gpus, p);
    Poll(node);
    ReportEvent(node, {.job = id, .kind = JobEvent::Kind::kStarted});
    return id;
  }

  std::vector<Delivery> last_deliveries_;
  uint64_t poll_ = 0;
};

TEST_F(ControllerTest, JobsWaitForANodeThenRunOnDistinctGpus) {
  JobId a = Submit(1000), b = Submit(1000), c = Submit(1000);
  EXPECT_EQ(State(a), JobState::kPending);
  EXPECT_EQ(c_->FindJob(a)->reason, "resources");
  RegisterNode("n1", 2);
  std::vector<Order> orders = Poll("n1");
  ASSERT_EQ(orders.size(), 2u);
  EXPECT_EQ(orders[0].launch.job, a);
  EXPECT_EQ(orders[1].launch.job, b);
  EXPECT_NE(orders[0].launch.gpus, orders[1].launch.gpus);
  EXPECT_EQ(State(a), JobState::kRunning);
  EXPECT_EQ(State(c), JobState::kPending);

  ReportEvent("n1", {.job = a, .kind = JobEvent::Kind::kStarted});
  ReportEvent("n1", {.job = a, .kind = JobEvent::Kind::kExited, .exit_code = 0});
  EXPECT_EQ(State(a), JobState::kSucceeded);
  EXPECT_EQ(*c_->FindJob(a)->exit_code, 0);
  orders = Poll("n1");
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_EQ(orders[0].launch.job, c);
  EXPECT_EQ(orders[0].launch.gpus, c_->FindJob(a)->allocation[0].gpus);  // a's GPU, now free
}

TEST_F(ControllerTest, HigherPriorityStartsFirst) {
  RegisterNode("n1", 1);
  JobId busy = Submit(1000);
  Poll("n1");
  JobId low = Submit(1000, Priority::kLow);
  JobId high = Submit(1000, Priority::kHigh);
  ReportEvent("n1", {.job = busy, .kind = JobEvent::Kind::kStarted});
  ReportEvent("n1", {.job = busy, .kind = JobEvent::Kind::kExited});
  EXPECT_EQ(State(high), JobState::kRunning);
  EXPECT_EQ(State(low), JobState::kPending);
}

TEST_F(ControllerTest, ALaterHighPriorityArrivalStillGetsTheNextFreeGpu) {
  RegisterNode("n1", 1);
  JobId busy = Submit(1000, Priority::kCritical);  // nothing preempts it: no full pass on arrival
  Poll("n1");
  ReportEvent("n1", {.job = busy, .kind = JobEvent::Kind::kStarted});
  JobId low1 = Submit(1000, Priority::kLow), low2 = Submit(1000, Priority::kLow);
  now_ += seconds(3);
  (void)Run(Tick{});                           // a full pass orders the queue: low1, low2
  JobId high = Submit(1000, Priority::kHigh);  // arrives after it
  now_ += milliseconds(100);
  ReportEvent("n1",
              {.job = busy, .kind = JobEvent::Kind::kExited});  // a GPU frees between full passes
  EXPECT_EQ(State(high), JobState::kRunning);
  EXPECT_EQ(State(low1), JobState::kPending);
  EXPECT_EQ(State(low2), JobState::kPending);
}

TEST_F(ControllerTest, StrictOrderHoldsNewArrivalsBehindAWaitingJob) {
  ControllerOptions options;
  options.policy.backfill = false;
  c_ = std::make_unique<Controller>(options);
  c_->Restore(*store_.Load(), now_);
  RegisterNode("n1", 8);
  JobId busy = StartJob("n1", 4000, Priority::kNormal);
  JobId wide = Submit(8000);
  JobId small = Submit(1000);  // would fit now; it must wait behind `wide`
  EXPECT_EQ(State(wide), JobState::kPending);
  EXPECT_EQ(State(small), JobState::kPending);
  EXPECT_EQ(c_->FindJob(small)->reason, "priority");
  (void)busy;
}

TEST_F(ControllerTest, FailedExitRetriesThenFails) {
  RegisterNode("n1", 1);
  JobId id = SubmitFailing(1);
  Poll("n1");
  ReportEvent("n1", {.job = id, .kind = JobEvent::Kind::kStarted});
  ReportEvent("n1", {.job = id, .attempt = 0, .kind = JobEvent::Kind::kExited, .exit_code = 1});
  EXPECT_EQ(c_->FindJob(id)->restarts, 1);
  EXPECT_EQ(State(id), JobState::kRunning);  // requeued and started again at once
  std::vector<Order> orders = Poll("n1");
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_EQ(orders[0].launch.attempt, 1);
  ReportEvent("n1", {.job = id, .attempt = 1, .kind = JobEvent::Kind::kStarted});
  ReportEvent("n1", {.job = id, .attempt = 1, .kind = JobEvent::Kind::kExited, .exit_code = 1});
  EXPECT_EQ(State(id), JobState::kFailed);
}

TEST_F(ControllerTest, StaleEventsOfAnEarlierAttemptAreIgnored) {
  RegisterNode("n1", 1);
  JobId id = Submit(1000);
  Poll("n1");
  ReportEvent("n1", {.job = id, .attempt = 7, .kind = JobEvent::Kind::kExited, .exit_code = 1});
  EXPECT_EQ(State(id), JobState::kRunning);
}

TEST_F(ControllerTest, CancelPendingAndRunning) {
  RegisterNode("n1", 1);
  JobId run = Submit(1000), wait = Submit(1000);
  Poll("n1");
  ReportEvent("n1", {.job = run, .kind = JobEvent::Kind::kStarted});
  EXPECT_TRUE(Run(JobAction{.caller = {"ada", true}, .id = wait, .kind = JobAction::Kind::kCancel})
                  .status.ok());
  EXPECT_EQ(State(wait), JobState::kCancelled);
  EXPECT_TRUE(Run(JobAction{.caller = {"ada", true}, .id = run, .kind = JobAction::Kind::kCancel})
                  .status.ok());
  std::vector<Order> orders = Poll("n1");
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_EQ(orders[0].kind, Order::Kind::kStop);
  EXPECT_EQ(orders[0].stop.reason, StopReason::kCancel);
  ReportEvent("n1", {.job = run, .kind = JobEvent::Kind::kExited, .signal = 10});
  EXPECT_EQ(State(run), JobState::kCancelled);
  // Cancelling an ended job again is harmless (a retried request), and changes nothing.
  Reply again =
      Run(JobAction{.caller = {"ada", true}, .id = run, .kind = JobAction::Kind::kCancel});
  EXPECT_TRUE(again.status.ok());
  EXPECT_EQ(State(run), JobState::kCancelled);
}

TEST_F(ControllerTest, OnlyTheOwnerOrAnAdminActsOnAJob) {
  JobSpec s;
  s.command = {"true"};
  JobId id = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}}).jobs[0].id;
  Reply r = Run(JobAction{.caller = {"bob", false}, .id = id, .kind = JobAction::Kind::kCancel});
  EXPECT_EQ(r.status.code(), Code::kPermissionDenied);
  EXPECT_EQ(State(id), JobState::kPending);
}

TEST_F(ControllerTest, HoldAndRelease) {
  JobSpec s;
  s.command = {"true"};
  s.hold = true;
  JobId id = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}}).jobs[0].id;
  EXPECT_EQ(State(id), JobState::kHeld);
  RegisterNode("n1", 1);
  EXPECT_EQ(State(id), JobState::kHeld);
  EXPECT_TRUE(Run(JobAction{.caller = {"ada", false}, .id = id, .kind = JobAction::Kind::kRelease})
                  .status.ok());
  EXPECT_EQ(State(id), JobState::kRunning);
}

TEST_F(ControllerTest, DependenciesWaitAndBreak) {
  RegisterNode("n1", 1);
  JobId first = Submit(1000);
  JobSpec s;
  s.command = {"true"};
  s.after = {first};
  JobId second = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}}).jobs[0].id;
  EXPECT_EQ(c_->FindJob(second)->reason, "dependency");
  Poll("n1");
  ReportEvent("n1", {.job = first, .kind = JobEvent::Kind::kStarted});
  ReportEvent("n1", {.job = first, .kind = JobEvent::Kind::kExited, .exit_code = 2});
  EXPECT_EQ(State(first), JobState::kFailed);
  EXPECT_EQ(State(second), JobState::kFailed);  // its dependency can never be met
  EXPECT_EQ(c_->FindJob(second)->reason, "dependency");
  EXPECT_NE(c_->FindJob(second)->reason_detail.find("job " + first.ToString()), std::string::npos);
  s.after = {JobId{999}};
  Reply bad = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}});
  EXPECT_EQ(bad.status.code(), Code::kInvalidArgument);
}

TEST_F(ControllerTest, IdempotencyKeyReturnsTheSameJob) {
  JobId a = Submit(0, Priority::kNormal, "k1");
  JobSpec s;
  s.command = {"true"};
  Reply again = Run(SubmitJobs{.caller = {"ada", true}, .specs = {s}, .idempotency_key = "k1"});
  ASSERT_TRUE(again.status.ok());
  EXPECT_FALSE(again.created);
  EXPECT_EQ(again.jobs[0].id, a);
  EXPECT_EQ(c_->jobs().size(), 1u);
}

TEST_F(ControllerTest, ALostNodeRequeuesItsJobs) {
  RegisterNode("n1", 1);
  JobId id = Submit(1000);
  Poll("n1");
  ReportEvent("n1", {.job = id, .kind = JobEvent::Kind::kStarted});
  now_ += seconds(61);
  Run(Tick{});
  EXPECT_EQ(State(id), JobState::kPending);
  EXPECT_EQ(c_->FindJob(id)->restarts, 1);
  RegisterNode("n1", 1);  // back, holding nothing: the job starts again
  EXPECT_EQ(State(id), JobState::kRunning);
}

TEST_F(ControllerTest, ALostNodeDoesNotUseUpARetry) {
  RegisterNode("n1", 1);
  JobId id = SubmitFailing(1);
  Poll("n1");
  ReportEvent("n1", {.job = id, .kind = JobEvent::Kind::kStarted});
  now_ += seconds(61);
  Run(Tick{});  // lost: requeued, restarts 1, no retry used
  RegisterNode("n1", 1);
  ASSERT_EQ(State(id), JobState::kRunning);
  Poll("n1");
  ReportEvent("n1", {.job = id, .attempt = 1, .kind = JobEvent::Kind::kStarted});
  ReportEvent("n1", {.job = id, .attempt = 1, .kind = JobEvent::Kind::kExited, .exit_code = 1});
  EXPECT_EQ(State(id), JobState::kRunning);  // its one retry
  EXPECT_EQ(c_->FindJob(id)->restarts, 2);
  Poll("n1");
  ReportEvent("n1", {.job = id, .attempt = 2, .kind = JobEvent::Kind::kStarted});
  ReportEvent("n1", {.job = id,
                     .attempt = 2,
                     .kind = JobEvent::Kind::kExited,
                     .exit_code = 1,
                     .message = "it went wrong"});
  EXPECT_EQ(State(id), JobState::kFailed);
  EXPECT_NE(c_->FindJob(id)->reason_detail.find("it went wrong"), std::string::npos);
}

TEST_F(ControllerTest, ACancelIsResentToAnAgentThatRegistersAgain) {
  RegisterNode("n1", 1);
  JobId id = Submit(1000);
  Poll("n1");
  ReportEvent("n1", {.job = id, .kind = JobEvent::Kind::kStarted});
  Run(JobAction{.caller = {"ada", true}, .id = id, .kind = JobAction::Kind::kCancel});
  // The agent restarts before it polled the stop order, and still holds the job.
  RegisterNode("n1", 1, {JobEvent{.job = id, .kind = JobEvent::Kind::kStarted, .at = now_}});
  std::vector<Order> orders = Poll("n1");
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_EQ(orders[0].kind, Order::Kind::kStop);
  EXPECT_EQ(orders[0].stop.job, id);
}

TEST_F(ControllerTest, APreemptionIsResentToAnAgentThatRegistersAgain) {
  RegisterNode("n1", 1);
  JobId low = StartJob("n1", 1000, Priority::kLow);
  now_ += seconds(10);
  JobId high = Submit(1000, Priority::kHigh);
  ASSERT_TRUE(c_->FindJob(low)->preempt_requested);
  // The agent restarts before it polled the stop order, and still holds the job.
  RegisterNode("n1", 1, {JobEvent{.job = low, .kind = JobEvent::Kind::kStarted, .at = now_}});
  std::vector<Order> orders = Poll("n1");
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_EQ(orders[0].kind, Order::Kind::kStop);
  EXPECT_EQ(orders[0].stop.job, low);
  EXPECT_EQ(orders[0].stop.reason, StopReason::kPreempt);
  (void)high;
}

TEST_F(ControllerTest, FairShareChargesSurviveARestartOfJobsNotYetStarted) {
  RegisterNode("n1", 2);
  JobId a = Submit(1000), b = Submit(1000);
  Poll("n1");
  ReportEvent("n1", {.job = a, .kind = JobEvent::Kind::kStarted});  // b's start not reported yet
  c_ = std::make_unique<Controller>();
  c_->Restore(*store_.Load(), now_);
  RegisterNode("n1", 2,
               {JobEvent{.job = a, .kind = JobEvent::Kind::kStarted, .at = now_},
                JobEvent{.job = b, .kind = JobEvent::Kind::kStarted, .at = now_}});
  ReportEvent("n1", {.job = b, .kind = JobEvent::Kind::kExited});
  double before = c_->usage().project("default");
  now_ += std::chrono::hours(1);
  (void)Run(Tick{});
  Submit(0);  // any pass brings the ledger up to now
  // a still runs on one GPU: an hour of it is charged (a little less with the week's decay).
  EXPECT_GT(c_->usage().project("default") - before, 3500.0);
}

TEST_F(ControllerTest, ARegisteringAgentReportsJobsThatEndedWhileAway) {
  RegisterNode("n1", 1);
  JobId id = Submit(1000);
  Poll("n1");
  ReportEvent("n1", {.job = id, .kind = JobEvent::Kind::kStarted});
  RegisterNode("n1", 1,
               {JobEvent{.job = id, .kind = JobEvent::Kind::kExited, .at = now_, .exit_code = 0}});
  EXPECT_EQ(State(id), JobState::kSucceeded);
}

TEST_F(ControllerTest, EventsAfterANumberNotYetGivenStartFromTheBeginning) {
  RegisterNode("n1", 1);  // node_joined: event 1
  ASSERT_EQ(Run(GetEvents{}).events.size(), 1u);
  EXPECT_TRUE(Run(GetEvents{.after = 1}).events.empty());
  // A client that saw event 40 of the controller's previous run (numbers start again at 1).
  Reply r = Run(GetEvents{.after = 40});
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0].kind, "node_joined");
}

// A gang of `gpus` GPUs with one process per GPU: its processes meet at MASTER_PORT.
JobSpec GangSpec(int gpus, std::vector<std::pair<std::string, std::string>> env = {}) {
  JobSpec s;
  s.command = {"torchrun"};
  s.resources.milli_gpus = gpus * 1000;
  s.process_per_gpu = true;
  s.env = std::move(env);
  return s;
}

// Two gangs whose ids are equal mod 10000 used to meet at the same MASTER_PORT on the node
// where both have rank 0, and the second failed to bind it. Ports now never collide among the
// jobs running on one rank-0 node, a job's own MASTER_PORT included.
TEST_F(ControllerTest, GangsMeetingOnOneNodeGetDifferentMasterPorts) {
  RegisterNode("n1", 8);
  JobId first = Run(SubmitJobs{.caller = {"ada", false}, .specs = {GangSpec(2)}}).jobs[0].id;
  JobSpec held;
  held.command = {"true"};
  held.hold = true;
  ASSERT_TRUE(Run(SubmitJobs{.caller = {"ada", false}, .specs = std::vector<JobSpec>(9999, held)})
                  .status.ok());
  JobId again = Run(SubmitJobs{.caller = {"ada", false}, .specs = {GangSpec(2)}}).jobs[0].id;
  ASSERT_EQ(again.value, first.value + 10000);
  JobId single = Run(SubmitJobs{.caller = {"ada", false}, .specs = {GangSpec(1)}}).jobs[0].id;
  std::map<JobId, int> ports;
  for (const Order& o : Poll("n1")) ports[o.launch.job] = o.launch.master_port;
  ASSERT_EQ(ports.size(), 3u);
  EXPECT_EQ(ports[first], 29501);  // 29500 + 1 mod 10000
  EXPECT_EQ(ports[again], 29502);  // its default, 29501, is first's on the same node
  EXPECT_EQ(c_->FindJob(single)->master_port, 0);  // one process: nothing meets
}

TEST_F(ControllerTest, AJobsOwnMasterPortIsAvoidedByTheOthersAndAPortOutlivesARestart) {
  // Both wait for the node and start in the same pass.
  JobId own =
      Run(SubmitJobs{.caller = {"ada", false}, .specs = {GangSpec(2, {{"MASTER_PORT", "29502"}})}})
          .jobs[0]
          .id;
  JobId second = Run(SubmitJobs{.caller = {"ada", false}, .specs = {GangSpec(2)}}).jobs[0].id;
  ASSERT_EQ(second.value, 2u);
  RegisterNode("n1", 8);
  Poll("n1");
  EXPECT_EQ(c_->FindJob(own)->master_port, 29502);     // where it meets: its own
  EXPECT_EQ(c_->FindJob(second)->master_port, 29503);  // its default, 29502, is taken
  // A controller restart keeps the port: a launch sent again (the agent never reported the
  // start) names the same one as the launch the agent may already have.
  c_ = std::make_unique<Controller>();
  c_->Restore(*store_.Load(), now_);
  EXPECT_EQ(c_->FindJob(second)->master_port, 29503);
  RegisterNode("n1", 8);
  std::map<JobId, int> ports;
  for (const Order& o : Poll("n1")) ports[o.launch.job] = o.launch.master_port;
  EXPECT_EQ(ports[second], 29503);
}

TEST_F(ControllerTest, AMasterPortThatIsNoPortIsIgnoredAndTheJobSurvivesARestart) {
  RegisterNode("n1", 8);
  JobId odd =
      Run(SubmitJobs{.caller = {"ada", false}, .specs = {GangSpec(2, {{"MASTER_PORT", "99999"}})}})
          .jobs[0]
          .id;
  Poll("n1");
  EXPECT_EQ(c_->FindJob(odd)->master_port, DefaultMasterPort(odd));
  // What the SQLite store keeps reads back.
  EXPECT_TRUE(
      codec::DecodeJob(codec::EncodeJob(*c_->FindJob(odd), codec::JobForm::kRecord)).has_value());
  c_ = std::make_unique<Controller>();
  ASSERT_TRUE(store_.Load().has_value());
  c_->Restore(*store_.Load(), now_);
  ASSERT_NE(c_->FindJob(odd), nullptr);
  EXPECT_EQ(c_->FindJob(odd)->state, JobState::kRunning);
}

TEST_F(ControllerTest, ARestartRebuildsExactlyTheSameState) {
  RegisterNode("n1", 2);
  JobId a = Submit(1000), b = Submit(1000), c = Submit(1000);
  Poll("n1");
  ReportEvent("n1", {.job = a, .kind = JobEvent::Kind::kStarted});
  ReportEvent("n1", {.job = a, .kind = JobEvent::Kind::kExited, .exit_code = 0});
  std::map<JobId, Job> before = c_->jobs();

  Controller restarted;
  restarted.Restore(*store_.Load(), now_);
  EXPECT_EQ(restarted.jobs(), before);
  EXPECT_EQ(restarted.queue_length(), c_->queue_length());
  // And it never hands out an id twice.
  c_ = std::make_unique<Controller>();
  c_->Restore(*store_.Load(), now_);
  JobId d = Submit(0);
  EXPECT_GT(d.value, c.value);
  (void)b;
}

TEST_F(ControllerTest, AHigherClassPreemptsAndTheVictimComesBackPending) {
  RegisterNode("n1", 8);
  JobId low = StartJob("n1", 8000, Priority::kLow);
  now_ += seconds(10);
  JobId high = Submit(2000, Priority::kHigh);
  EXPECT_EQ(State(high), JobState::kPending);
  std::vector<Order> orders = Poll("n1");
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_EQ(orders[0].kind, Order::Kind::kStop);
  EXPECT_EQ(orders[0].stop.job, low);
  EXPECT_EQ(orders[0].stop.reason, StopReason::kPreempt);
  EXPECT_EQ(orders[0].stop.grace_period, c_->policy().preempt_grace);
  EXPECT_TRUE(c_->FindJob(high)->estimated_start.has_value());
  // The victim ends by the signal: it goes back to the queue, not to `failed`.
  ReportEvent("n1", {.job = low, .kind = JobEvent::Kind::kExited, .signal = 15});
  EXPECT_EQ(State(low), JobState::kPending);
  EXPECT_EQ(c_->FindJob(low)->restarts, 1);
  EXPECT_EQ(c_->FindJob(low)->failures, 0);
  // The GPU-time of the attempt stays with the job (least attained service counts it).
  EXPECT_NEAR(c_->FindJob(low)->gpu_seconds, 8 * 10.0, 1e-6);
  EXPECT_NE(c_->FindJob(low)->last_requeue.find("preempted (priority) for job " + high.ToString()),
            std::string::npos)
      << c_->FindJob(low)->last_requeue;
  EXPECT_EQ(State(high), JobState::kRunning);
}

TEST_F(ControllerTest, PreemptionTakesTheJobWhoseCheckpointIsFreshest) {
  RegisterNode("n1", 4);
  JobId a = Submit(2000, Priority::kLow), b = Submit(2000, Priority::kLow);
  Poll("n1");
  ReportEvent("n1", {.job = a, .kind = JobEvent::Kind::kStarted});
  ReportEvent("n1", {.job = b, .kind = JobEvent::Kind::kStarted});
  now_ += std::chrono::minutes(30);
  ReportEvent("n1", {.job = b, .kind = JobEvent::Kind::kCheckpoint, .message = "/ckpt/b-30m.pt"});
  EXPECT_EQ(c_->FindJob(b)->last_checkpoint, now_);
  now_ += std::chrono::minutes(1);
  Submit(2000, Priority::kHigh);
  std::vector<Order> orders = Poll("n1");
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_EQ(orders[0].kind, Order::Kind::kStop);
  EXPECT_EQ(orders[0].stop.job, b);  // 1 minute lost, not a's 31
  (void)a;
}

TEST_F(ControllerTest, TheQueueListsPendingJobsInStartOrderWithTheirFactors) {
  RegisterNode("n1", 1);
  JobId busy = Submit(1000);
  JobId low = Submit(1000, Priority::kLow);
  JobId high = Submit(1000, Priority::kHigh);
  now_ += seconds(5);
  (void)Run(Tick{});
  Reply q = Run(GetQueue{.caller = {"ada", true}});
  ASSERT_TRUE(q.status.ok());
  ASSERT_EQ(q.jobs.size(), 2u);
  ASSERT_EQ(q.factors.size(), 2u);
  EXPECT_EQ(q.jobs[0].id, high);
  EXPECT_EQ(q.jobs[1].id, low);
  EXPECT_GT(q.factors[0].priority, q.factors[1].priority);
  EXPECT_GT(q.factors[0].score, q.factors[1].score);
  EXPECT_EQ(State(busy), JobState::kRunning);
  // One job's page carries the same.
  Reply one = Run(GetJob{.caller = {"ada", true}, .id = low});
  ASSERT_EQ(one.factors.size(), 1u);
  EXPECT_EQ(one.factors[0], q.factors[1]);
  EXPECT_EQ(one.queue_position, 2);
  EXPECT_TRUE(Run(GetJob{.caller = {"ada", true}, .id = busy}).factors.empty());
}

TEST_F(ControllerTest, ANewPolicyAppliesToWhatComesNextAndKeepsWhatJobsWereGiven) {
  JobSpec s;
  s.command = {"true"};
  s.pool = "dev";
  Reply before = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}});
  ASSERT_TRUE(before.status.ok());
  EXPECT_EQ(before.jobs[0].spec.time_limit.count(), 0);  // no pool limits yet
  Policy p;
  p.pools["dev"] = PoolPolicy{.default_time_limit = std::chrono::hours(1),
                              .max_time_limit = std::chrono::hours(2)};
  p.fairshare_half_life = std::chrono::hours(1);
  ASSERT_TRUE(Run(SetPolicy{p}).status.ok());
  EXPECT_EQ(c_->policy().pools.at("dev").max_time_limit, std::chrono::hours(2));
  EXPECT_EQ(c_->usage().half_life(), std::chrono::hours(1));
  Reply after = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}});
  ASSERT_TRUE(after.status.ok());
  EXPECT_EQ(after.jobs[0].spec.time_limit, std::chrono::hours(1));
  EXPECT_EQ(c_->FindJob(before.jobs[0].id)->spec.time_limit.count(), 0);  // kept
  s.time_limit = std::chrono::hours(3);
  EXPECT_EQ(Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}}).status.code(),
            Code::kInvalidArgument);
}

TEST_F(ControllerTest, PoolsGiveDefaultTimeLimitsAndRefuseLongerOnes) {
  ControllerOptions options;
  options.policy.pools["dev"] = PoolPolicy{.default_time_limit = std::chrono::hours(1),
                                           .max_time_limit = std::chrono::hours(4),
                                           .max_milli_per_job = 2000};
  c_ = std::make_unique<Controller>(options);
  c_->Restore(*store_.Load(), now_);
  JobSpec s;
  s.command = {"true"};
  s.pool = "dev";
  s.resources.milli_gpus = 1000;
  Reply ok = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}});
  ASSERT_TRUE(ok.status.ok()) << ok.status.message();
  EXPECT_EQ(ok.jobs[0].spec.time_limit, std::chrono::hours(1));
  s.time_limit = std::chrono::hours(5);
  Reply too_long = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}});
  EXPECT_EQ(too_long.status.code(), Code::kInvalidArgument);
  EXPECT_NE(too_long.status.message().find("time_limit: pool dev allows at most 4h"),
            std::string::npos)
      << too_long.status.message();
  s.time_limit = std::chrono::hours(1);
  s.resources.milli_gpus = 4000;
  Reply too_big = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}});
  EXPECT_NE(too_big.status.message().find("resources.gpus: pool dev allows at most 2 GPUs"),
            std::string::npos)
      << too_big.status.message();
}

TEST_F(ControllerTest, DrainedGpusAndNodesTakeNoNewJobsAndStayDrainedAcrossARestart) {
  RegisterNode("n1", 2);
  Reply d =
      Run(DrainNode{.caller = {"root", true}, .node = "n1", .gpus = {0}, .reason = "ECC errors"});
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d.nodes.size(), 1u);
  EXPECT_EQ(d.nodes[0].gpu_drain_reasons[0], "ECC errors");
  JobId a = Submit(1000), b = Submit(1000);
  std::vector<Order> orders = Poll("n1");
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_EQ(orders[0].launch.gpus, (std::vector<int>{1}));
  EXPECT_EQ(State(b), JobState::kPending);
  // Users cannot drain; unknown nodes and GPUs are clear errors.
  EXPECT_EQ(Run(DrainNode{.caller = {"ada", false}, .node = "n1"}).status.code(),
            Code::kPermissionDenied);
  EXPECT_EQ(Run(DrainNode{.caller = {"root", true}, .node = "nx"}).status.code(), Code::kNotFound);
  EXPECT_EQ(Run(DrainNode{.caller = {"root", true}, .node = "n1", .gpus = {9}}).status.code(),
            Code::kInvalidArgument);
  // A whole-node drain: the running job goes on, nothing new starts.
  ASSERT_TRUE(
      Run(DrainNode{.caller = {"root", true}, .node = "n1", .reason = "maintenance"}).status.ok());
  EXPECT_EQ(State(a), JobState::kRunning);
  ASSERT_TRUE(Run(DrainNode{.caller = {"root", true}, .node = "n1", .gpus = {0}, .drain = false})
                  .status.ok());
  EXPECT_EQ(State(b), JobState::kPending);
  // Restart: the node drain is still there.
  c_ = std::make_unique<Controller>();
  c_->Restore(*store_.Load(), now_);
  RegisterNode("n1", 2, {JobEvent{.job = a, .kind = JobEvent::Kind::kStarted}});
  Reply nodes = Run(ListNodes{});
  ASSERT_EQ(nodes.nodes.size(), 1u);
  EXPECT_EQ(nodes.nodes[0].state, "drained");
  EXPECT_EQ(nodes.nodes[0].drain_reason, "maintenance");
  EXPECT_EQ(State(b), JobState::kPending);
  ASSERT_TRUE(Run(DrainNode{.caller = {"root", true}, .node = "n1", .drain = false}).status.ok());
  EXPECT_EQ(State(b), JobState::kRunning);
}

TEST_F(ControllerTest, ABatchIsAllOrNothing) {
  JobSpec good;
  good.command = {"true"};
  JobSpec bad = good;
  bad.after = {JobId{12345}};
  Reply r = Run(SubmitJobs{.caller = {"ada", false}, .specs = {good, bad}});
  EXPECT_FALSE(r.status.ok());
  EXPECT_TRUE(c_->jobs().empty());
  EXPECT_EQ(Submit(0).value, 1);  // no id was used up by the failed batch
}

}  // namespace
}  // namespace baton::control

namespace baton::control {
namespace {

class ControllerHealthTest : public ControllerTest {
 protected:
  void ReportHealth(const std::string& node, std::vector<GpuHealth> health) {
    Reply r = Run(
        AgentReport{ReportRequest{.node = node, .session = session_, .health = std::move(health)}});
    ASSERT_TRUE(r.status.ok()) << r.status.message();
  }
  std::vector<ClusterEvent> Events() { return Run(GetEvents{}).events; }
  const NodeStatus& Node(const Reply& r) { return r.nodes.at(0); }
};

TEST_F(ControllerHealthTest, AFailedGpuIsFencedAloneAndItsJobRequeuedWithoutARetry) {
  RegisterNode("n1", 2);
  JobId a = StartJob("n1", 1000, Priority::kNormal);
  JobId b = StartJob("n1", 1000, Priority::kNormal);
  int gpu_a = c_->FindJob(a)->allocation[0].gpus[0];
  ReportHealth("n1", {GpuHealth{.index = gpu_a,
                                .state = "reset",
                                .reason = "xid 48: double-bit ECC error",
                                .since = now_}});
  // Its job is stopped at once; the other job runs on.
  std::vector<Order> orders = Poll("n1");
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_EQ(orders[0].kind, Order::Kind::kStop);
  EXPECT_EQ(orders[0].stop.job, a);
  EXPECT_EQ(orders[0].stop.grace_period.count(), 0);
  ReportEvent("n1", {.job = a, .kind = JobEvent::Kind::kExited, .signal = 9});
  const Job* ja = c_->FindJob(a);
  EXPECT_EQ(ja->state, JobState::kPending);
  EXPECT_EQ(ja->restarts, 1);
  EXPECT_EQ(ja->failures, 0);
  EXPECT_NE(ja->last_requeue.find("GPU " + std::to_string(gpu_a) + " of n1 failed: xid 48"),
            std::string::npos);
  EXPECT_EQ(State(b), JobState::kRunning);
  // The fenced GPU takes nothing: the requeued job waits for a healthy one.
  EXPECT_TRUE(Poll("n1").empty());
  Reply nodes = Run(ListNodes{});
  EXPECT_EQ(Node(nodes).health[gpu_a].state, "reset");
  auto events = Events();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().kind, "gpu_failed");
  EXPECT_EQ(events.back().severity, "alert");
  EXPECT_EQ(events.back().gpu, gpu_a);
  EXPECT_NE(events.back().message.find("requeued job " + a.ToString()), std::string::npos);
  // It passes its check: back in service, and the waiting job starts on it.
  now_ += seconds(40);
  ReportHealth("n1", {GpuHealth{.index = gpu_a, .state = "ok", .since = now_}});
  EXPECT_EQ(State(a), JobState::kRunning);
  EXPECT_EQ(c_->FindJob(a)->allocation[0].gpus[0], gpu_a);
  EXPECT_EQ(Events().back().kind, "gpu_recovered");
}

TEST_F(ControllerHealthTest, AHardwareFaultBecomesADrainThatOutlivesARestartUntilAnAdminUndrains) {
  RegisterNode("n1", 2);
  ReportHealth("n1", {GpuHealth{.index = 1,
                                .state = "drain",
                                .reason = "xid 79: GPU has fallen off the bus",
                                .since = now_}});
  Reply nodes = Run(ListNodes{});
  EXPECT_EQ(Node(nodes).gpu_drain_reasons[1], "health: xid 79: GPU has fallen off the bus");
  // A new controller from the store: the drain is still there, the agent's health aside.
  c_ = std::make_unique<Controller>();
  c_->Restore(*store_.Load(), now_);
  RegisterNode("n1", 2);
  JobId a = Submit(1000);
  JobId b = Submit(1000);
  EXPECT_EQ(State(a), JobState::kRunning);
  EXPECT_EQ(State(b), JobState::kPending);  // GPU 1 takes nothing
  Reply undrained =
      Run(DrainNode{.caller = {"root", true}, .node = "n1", .gpus = {1}, .drain = false});
  ASSERT_TRUE(undrained.status.ok());
  EXPECT_EQ(State(b), JobState::kRunning);
}

TEST_F(ControllerHealthTest, UndrainingAGpuDrainedForItsHealthTellsItsAgentToForgetTheFault) {
  RegisterNode("n1", 2);
  ReportHealth(
      "n1",
      {GpuHealth{
          .index = 0, .state = "drain", .reason = "xid 64: row remap failed", .since = now_}});
  Poll("n1");
  ASSERT_TRUE(Run(DrainNode{.caller = {"root", true}, .node = "n1", .gpus = {0}, .drain = false})
                  .status.ok());
  std::vector<Order> orders = Poll("n1");
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_EQ(orders[0].kind, Order::Kind::kReadmit);
  EXPECT_EQ(orders[0].inject.gpu, 0);
  EXPECT_EQ(Run(ListNodes{}).nodes[0].health[0].state, "ok");
  EXPECT_EQ(State(Submit(2000)), JobState::kRunning);  // both GPUs take work again
}

TEST_F(ControllerHealthTest, RepeatedReportsOfTheSameFaultRaiseOneEvent) {
  RegisterNode("n1", 2);
  GpuHealth h{.index = 0, .state = "reset", .reason = "temperature 95 °C", .since = now_};
  ReportHealth("n1", {h});
  now_ += seconds(2);
  ReportHealth("n1", {h});
  // The agent registers again (say it restarted) and still judges the GPU the same.
  Run(AgentRegister{RegisterRequest{.node = Run(ListNodes{}).nodes[0].info, .health = {h}}});
  int failed = 0;
  for (const ClusterEvent& e : Events()) failed += e.kind == "gpu_failed";
  EXPECT_EQ(failed, 1);
}

TEST_F(ControllerHealthTest, FaultsAreInjectedOnlyIntoSimulatedGpusAndOnlyByAnAdmin) {
  RegisterNode("n1", 2);
  FaultInjection xid{.gpu = 1, .fault = "xid", .value = 79};
  EXPECT_EQ(Run(InjectFault{.caller = {"ada", false}, .node = "n1", .fault = xid}).status.code(),
            Code::kPermissionDenied);
  EXPECT_EQ(Run(InjectFault{.caller = {"root", true}, .node = "nope", .fault = xid}).status.code(),
            Code::kNotFound);
  FaultInjection far{.gpu = 7, .fault = "lost"};
  EXPECT_EQ(Run(InjectFault{.caller = {"root", true}, .node = "n1", .fault = far}).status.message(),
            "gpu: node n1 has no GPU 7");
  ASSERT_TRUE(Run(InjectFault{.caller = {"root", true}, .node = "n1", .fault = xid}).status.ok());
  std::vector<Order> orders = Poll("n1");
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_EQ(orders[0].kind, Order::Kind::kInject);
  EXPECT_EQ(orders[0].inject, xid);
  // A node with real GPUs refuses.
  NodeInfo real = Run(ListNodes{}).nodes[0].info;
  real.name = "n2";
  real.gpu_backend = "nvml";
  Run(AgentRegister{RegisterRequest{.node = real}});
  Reply r = Run(InjectFault{.caller = {"root", true}, .node = "n2", .fault = xid});
  EXPECT_EQ(r.status.message(),
            "node n2 has real GPUs (nvml): faults are injected only into simulated GPUs");
}

TEST_F(ControllerHealthTest, ApplicationXidsAndLostNodesAreEvents) {
  RegisterNode("n1", 1);
  JobId a = StartJob("n1", 1000, Priority::kNormal);
  Run(AgentReport{ReportRequest{
      .node = "n1",
      .session = session_,
      .notices = {GpuNotice{.gpu = 0,
                            .xid = 31,
                            .message = "xid 31: GPU memory page fault (an application error)"}}}});
  auto events = Events();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().kind, "gpu_xid");
  EXPECT_EQ(events.back().job, a.value);
  EXPECT_EQ(State(a), JobState::kRunning);  // the GPU stays in service
  now_ += seconds(61);
  Run(Tick{});
  events = Run(GetEvents{.after = events.back().seq}).events;
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, "node_lost");
  EXPECT_EQ(events[0].severity, "alert");
}

}  // namespace
}  // namespace baton::control

namespace baton::control {
namespace {

class ControllerTokenTest : public ControllerTest {
 protected:
  Reply Create(Caller caller, std::string user, Role role, char fill = 'a') {
    return Run(CreateToken{.caller = std::move(caller),
                           .user = std::move(user),
                           .role = role,
                           .name = "t",
                           .hash = std::string(64, fill)});
  }
};

TEST_F(ControllerTokenTest, AnAdminCreatesTokensAUserOnlyTheirOwnUserTokens) {
  Caller admin{"root", true}, ada{"ada", false};
  Reply made = Create(admin, "alice", Role::kUser);
  ASSERT_TRUE(made.status.ok()) << made.status.message();
  EXPECT_EQ(made.tokens.at(0).id, 1);
  EXPECT_EQ(made.tokens.at(0).hash, std::string(64, 'a'));
  EXPECT_EQ(Create(ada, "ada", Role::kUser, 'b').status.code(), Code::kOk);
  EXPECT_EQ(Create(ada, "ada", Role::kAdmin, 'c').status.code(), Code::kPermissionDenied);
  EXPECT_EQ(Create(ada, "alice", Role::kUser, 'c').status.code(), Code::kPermissionDenied);
  EXPECT_EQ(Create(admin, "Not A User", Role::kUser, 'c').status.code(), Code::kInvalidArgument);
  EXPECT_EQ(Create(admin, "bob", Role::kUser, 'a').status.code(),
            Code::kConflict);  // the same secret
}

TEST_F(ControllerTokenTest, ListingShowsNoHashesAndOnlyYourOwnUnlessAdmin) {
  Caller admin{"root", true}, ada{"ada", false};
  Create(admin, "alice", Role::kUser, 'a');
  Create(admin, "ada", Role::kUser, 'b');
  Reply all = Run(ListTokens{admin});
  ASSERT_EQ(all.tokens.size(), 2u);
  for (const auto& t : all.tokens) EXPECT_TRUE(t.hash.empty());
  Reply mine = Run(ListTokens{ada});
  ASSERT_EQ(mine.tokens.size(), 1u);
  EXPECT_EQ(mine.tokens[0].user, "ada");
}

TEST_F(ControllerTokenTest, ARevocationIsDurableAndOnlyTheOwnerOrAnAdminRevokes) {
  Caller admin{"root", true}, ada{"ada", false};
  Create(admin, "alice", Role::kUser, 'a');
  Create(admin, "ada", Role::kUser, 'b');
  EXPECT_EQ(Run(RevokeToken{ada, 1}).status.code(), Code::kPermissionDenied);
  EXPECT_EQ(Run(RevokeToken{ada, 9}).status.code(), Code::kNotFound);
  Reply r = Run(RevokeToken{ada, 2});
  ASSERT_TRUE(r.status.ok());
  EXPECT_TRUE(r.tokens.at(0).revoked);
  EXPECT_EQ(r.tokens.at(0).hash, std::string(64, 'b'));  // the service forgets it by its hash
  // A new controller from the store has both, the second revoked; ids are never reused.
  c_ = std::make_unique<Controller>();
  c_->Restore(*store_.Load(), now_);
  Reply all = Run(ListTokens{admin});
  ASSERT_EQ(all.tokens.size(), 2u);
  EXPECT_FALSE(all.tokens[0].revoked);
  EXPECT_TRUE(all.tokens[1].revoked);
  EXPECT_EQ(Create(admin, "bob", Role::kUser, 'c').tokens.at(0).id, 3);
}

namespace costs {

// 3600 a GPU-hour: one unit a GPU-second.
Policy PricedPolicy(double budget, bool hard_stop) {
  Policy p;
  p.prices["H100"] = GpuPrice{.on_demand = 3600, .spot = 1800};
  p.currency = "EUR";
  p.default_project.budget =
      Budget{.amount = budget, .period = BudgetPeriod::kMonth, .hard_stop = hard_stop};
  return p;
}

std::vector<ClusterEvent> BudgetEvents(const std::vector<ClusterEvent>& all) {
  std::vector<ClusterEvent> out;
  for (const ClusterEvent& e : all) {
    if (e.kind == "budget") out.push_back(e);
  }
  return out;
}

}  // namespace costs

TEST_F(ControllerTest, AJobPaysTheCatalogPriceOfItsGpusForTheTimeItRan) {
  ASSERT_TRUE(Run(SetPolicy{costs::PricedPolicy(-1, false)}).status.ok());
  RegisterNode("n1", 4);
  JobId a = StartJob("n1", 2000, Priority::kNormal);
  EXPECT_EQ(c_->FindJob(a)->cost_per_hour_micros, 7200'000'000);  // two GPUs
  now_ += seconds(30);
  Reply live = Run(GetJobMetrics{.caller = {"ada", true}, .id = a});
  ASSERT_TRUE(live.job_metrics);
  EXPECT_DOUBLE_EQ(live.job_metrics->cost, 60);
  EXPECT_EQ(live.job_metrics->currency, "EUR");
  ASSERT_EQ(live.job_metrics->gpus.size(), 2u);
  EXPECT_EQ(live.job_metrics->gpus[0].model, "H100-80GB");
  EXPECT_FALSE(live.job_metrics->gpus[0].sample);  // no readings reported yet
  EXPECT_EQ(Run(GetJob{.caller = {"ada", true}, .id = a}).jobs[0].cost_micros, 60'000'000);
  // Readings of its GPUs count towards its mean utilisation; the other GPUs' do not.
  Reply r = Run(AgentReport{ReportRequest{.node = "n1",
                                          .session = session_,
                                          .gpus = {GpuSample{.index = 0, .utilization_pct = 80},
                                                   GpuSample{.index = 1, .utilization_pct = 40},
                                                   GpuSample{.index = 2, .utilization_pct = 0}}}});
  ASSERT_TRUE(r.status.ok());
  ReportEvent("n1", {.job = a, .kind = JobEvent::Kind::kExited, .exit_code = 0});
  const Job& done = *c_->FindJob(a);
  EXPECT_EQ(done.cost_micros, 60'000'000);
  EXPECT_EQ(done.utilization_samples, 1);
  EXPECT_DOUBLE_EQ(done.utilization_sum, 60);
  now_ += seconds(30);  // an ended job costs nothing more
  Reply after = Run(GetJobMetrics{.caller = {"ada", true}, .id = a});
  EXPECT_DOUBLE_EQ(after.job_metrics->cost, 60);
  EXPECT_TRUE(after.job_metrics->gpus.empty());
  // Unknown models cost nothing; a restart keeps what was charged.
  Controller restarted;
  restarted.Restore(*store_.Load(), now_);
  EXPECT_EQ(restarted.FindJob(a)->cost_micros, 60'000'000);
  EXPECT_EQ(restarted.FindJob(a)->utilization_samples, 1);
}

TEST_F(ControllerTest, ABudgetAlertsAt80And100PercentOnceAndAHardStopRefusesNewJobs) {
  ASSERT_TRUE(Run(SetPolicy{costs::PricedPolicy(10, true)}).status.ok());
  RegisterNode("n1", 2);
  JobId a = StartJob("n1", 1000, Priority::kNormal);
  now_ += seconds(7);
  Run(Tick{});
  EXPECT_TRUE(costs::BudgetEvents(Run(GetEvents{}).events).empty());
  now_ += seconds(1);  // 8 of 10
  Run(Tick{});
  now_ += milliseconds(500);
  Run(Tick{});
  std::vector<ClusterEvent> ev = costs::BudgetEvents(Run(GetEvents{}).events);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].severity, "alert");
  EXPECT_EQ(ev[0].project, "default");
  EXPECT_EQ(ev[0].message,
            "project default has spent 8.00 EUR of its budget of 10.00 EUR this month (80 %)");
  EXPECT_TRUE(Run(SubmitJobs{.caller = {"ada", false}, .specs = {JobSpec{.command = {"true"}}}})
                  .status.ok());
  now_ += seconds(2);
  Run(Tick{});
  ev = costs::BudgetEvents(Run(GetEvents{}).events);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_NE(ev[1].message.find("(100 %); new jobs are refused"), std::string::npos)
      << ev[1].message;
  Reply refused =
      Run(SubmitJobs{.caller = {"ada", false}, .specs = {JobSpec{.command = {"true"}}}});
  EXPECT_EQ(refused.status.code(), Code::kPermissionDenied);
  EXPECT_NE(refused.status.message().find(
                "project default has spent its budget (10.50 EUR of 10.00 EUR)"),
            std::string::npos)
      << refused.status.message();
  ReportEvent("n1", {.job = a, .kind = JobEvent::Kind::kExited, .exit_code = 0});
  // A restart does not alert again, and the stop still holds.
  auto restarted =
      std::make_unique<Controller>(ControllerOptions{.policy = costs::PricedPolicy(10, true)});
  restarted->Restore(*store_.Load(), now_);
  c_ = std::move(restarted);
  Run(Tick{});
  EXPECT_TRUE(costs::BudgetEvents(Run(GetEvents{}).events).empty());
  EXPECT_EQ(Run(SubmitJobs{.caller = {"ada", false}, .specs = {JobSpec{.command = {"true"}}}})
                .status.code(),
            Code::kPermissionDenied);
  // A new month starts from nothing.
  now_ = NextPeriodStart(BudgetPeriod::kMonth, now_) + seconds(1);
  Run(Tick{});
  EXPECT_TRUE(Run(SubmitJobs{.caller = {"ada", false}, .specs = {JobSpec{.command = {"true"}}}})
                  .status.ok());
}

}  // namespace
}  // namespace baton::control
