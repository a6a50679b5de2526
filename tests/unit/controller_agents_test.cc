// The controller and its agents: lost nodes, agents that register again, rendezvous ports,
// drains and the events they raise.
#include <gtest/gtest.h>

#include "control/master_ports.h"
#include "controller_fixture.h"

namespace baton::control {
namespace {

TEST_F(ControllerTest, ALostNodeRequeuesItsJobs) {
  RegisterNode("n1", 1);
  JobId id = Submit(1000);
  Poll("n1");
  ReportEvent("n1", {.job = id, .kind = JobEvent::Kind::kStarted});
  now_ += seconds(61);
  Run(Tick{});
  now_ += seconds(13);  // past its fence (below)
  Run(Tick{});
  EXPECT_EQ(State(id), JobState::kPending);
  EXPECT_EQ(c_->FindJob(id)->restarts, 1);
  RegisterNode("n1", 1);  // back, holding nothing: the job starts again
  EXPECT_EQ(State(id), JobState::kRunning);
}

// Issue 41: ten thousand agents sending readings every 2 s would be 5,000 reports a second.
// A report's answer tells the agent how often to send them: every max(2 s, nodes / rate) s,
// and at least four times per node timeout (60 s here: every 15 s at the most).
TEST_F(ControllerTest, AReportsAnswerSpreadsALargeClustersReadingsOut) {
  ControllerOptions o;
  o.sample_reports_per_second = 2;  // as the default 1,000 a second is for 1,000 times more
  c_ = std::make_unique<Controller>(o);
  c_->Restore(*store_.Load(), now_);
  auto interval_with = [&](int nodes) {
    for (int i = 1; i <= nodes; ++i) RegisterNode("n" + std::to_string(i), 1);
    auto r =
        Run(AgentReport{ReportRequest{.node = "n" + std::to_string(nodes), .session = session_}});
    EXPECT_TRUE(r.status.ok()) << r.status.message();
    return r.status.ok() ? r->sample_interval : Duration(0);
  };
  EXPECT_EQ(interval_with(1), seconds(2));  // the agent's own cadence
  EXPECT_EQ(interval_with(4), seconds(2));  // 4 nodes at 2 reports a second: 2 s
  EXPECT_EQ(interval_with(10), seconds(5));
  EXPECT_EQ(interval_with(25), milliseconds(12500));
  EXPECT_EQ(interval_with(100), seconds(15));  // a quarter of the node timeout
}

// Issue 37: a lost node's agent may still be running its jobs (stopped, or cut off). It
// fences itself: its jobs are stopped once it has not reached a controller for the node
// timeout (SIGTERM), and killed fence_grace later. The controller requeues them only after
// that, with 2 % and 2 s to spare: 60 + 10 + 1.4 + 2 = 73.4 s after it last heard of the node.
TEST_F(ControllerTest, ALostNodesJobsAreRequeuedOnlyOnceItsFenceHasSurelyPassed) {
  const TimePoint start = now_;
  RegisterNode("n1", 1);
  JobId id = StartJob("n1", 1000, Priority::kNormal);
  RegisterNode("n2", 1);  // the fixture's session is n2's from here
  const std::string other = "n2";
  for (int t : {30, 60, 73}) {
    now_ = start + seconds(t);
    Poll(other);
    Run(Tick{});
    EXPECT_EQ(State(id), JobState::kRunning) << "at " << t << " s";
    EXPECT_EQ(c_->FindJob(id)->restarts, 0);
  }
  auto events = Run(GetEvents{})->events;
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().kind, EventKind::kNodeLost);
  EXPECT_NE(events.back().message.find("its jobs are requeued at " +
                                       FormatRfc3339(start + milliseconds(73400))),
            std::string::npos)
      << events.back().message;
  // Until then only the node itself can say that its copy has ended.
  now_ = start + milliseconds(73399);
  Poll(other);
  Run(Tick{});
  EXPECT_EQ(State(id), JobState::kRunning);
  now_ = start + milliseconds(73400);
  Poll(other);
  Run(Tick{});
  EXPECT_EQ(State(id), JobState::kRunning);  // requeued and placed on the other node at once
  EXPECT_EQ(c_->FindJob(id)->restarts, 1);
  EXPECT_EQ(c_->FindJob(id)->allocation.at(0).node, other);
  EXPECT_EQ(c_->FindJob(id)->failures, 0);
}

TEST_F(ControllerTest, ACancelOfAJobOnALostNodeEndsItOnlyOnceTheFenceHasPassed) {
  RegisterNode("n1", 1);
  JobId id = StartJob("n1", 1000, Priority::kNormal);
  now_ += seconds(61);
  Run(Tick{});  // lost
  ASSERT_TRUE(Run(JobAction{.caller = {"ada", true}, .id = id}).status.ok());
  EXPECT_EQ(State(id), JobState::kRunning);  // its copy may still run on n1
  now_ += seconds(13);
  Run(Tick{});
  EXPECT_EQ(State(id), JobState::kCancelled);
}

TEST_F(ControllerTest, ANodeBackBeforeItsFenceKeepsItsJobs) {
  RegisterNode("n1", 1);
  JobId id = StartJob("n1", 1000, Priority::kNormal);
  now_ += seconds(61);
  Run(Tick{});  // lost
  now_ += seconds(5);
  // Back with its job still running (a short partition): it runs on, not started again.
  RegisterNode("n1", 1, {{.job = id, .kind = JobEvent::Kind::kStarted, .at = now_}});
  now_ += seconds(60);
  Poll("n1");
  Run(Tick{});
  EXPECT_EQ(State(id), JobState::kRunning);
  EXPECT_EQ(c_->FindJob(id)->restarts, 0);
}

TEST_F(ControllerTest, NodesThatFallSilentAtDifferentTimesAreEachLostOnTime) {
  // A tick walks the nodes only when one may have timed out (60 s): each is lost on time
  // all the same, and one that comes back is watched again.
  const TimePoint start = now_;
  RegisterNode("n1", 1);
  now_ += seconds(20);
  RegisterNode("n2", 1);
  auto state = [&](const std::string& name) {
    for (const NodeStatus& n : Run(ListNodes{}).value.nodes) {
      if (n.info.name == name) return std::string(NodeStateName(n.state));
    }
    return std::string("unknown");
  };
  for (int t = 30; t <= 60; t += 15) {  // n2 polls; n1 is silent from its registration
    now_ = start + seconds(t);
    Poll("n2");
    Run(Tick{});
  }
  EXPECT_EQ(state("n1"), "ready");
  now_ = start + seconds(61);
  Run(Tick{});
  EXPECT_EQ(state("n1"), "lost");
  EXPECT_EQ(state("n2"), "ready");
  now_ = start + seconds(120);  // n2 was last seen at 60 s
  Run(Tick{});
  EXPECT_EQ(state("n2"), "ready");
  now_ = start + seconds(121);
  Run(Tick{});
  EXPECT_EQ(state("n2"), "lost");
  now_ = start + seconds(130);
  RegisterNode("n1", 1);
  now_ = start + seconds(190);
  Run(Tick{});
  EXPECT_EQ(state("n1"), "ready");
  now_ = start + seconds(191);
  Run(Tick{});
  EXPECT_EQ(state("n1"), "lost");
}

TEST_F(ControllerTest, ALostNodeDoesNotUseUpARetry) {
  RegisterNode("n1", 1);
  JobId id = SubmitFailing(1);
  Poll("n1");
  ReportEvent("n1", {.job = id, .kind = JobEvent::Kind::kStarted});
  now_ += seconds(61);
  Run(Tick{});  // lost
  now_ += seconds(13);
  Run(Tick{});  // past its fence: requeued, restarts 1, no retry used
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

// Issue 20: a report, a registration and a lost node look only at the jobs on their node
// (NodeRecord::running), which must follow a job that is requeued and runs elsewhere.
TEST_F(ControllerTest, ANodesReadingsAndListingConcernOnlyTheJobsRunningThereNow) {
  RegisterNode("n1", 1);
  const uint64_t s1 = session_;
  RegisterNode("n2", 1);
  const uint64_t s2 = session_;
  auto session = [&](const std::string& node) { return node == "n1" ? s1 : s2; };
  auto jobs_on = [&](const std::string& node) {
    for (const NodeStatus& n : Run(ListNodes{}).value.nodes) {
      if (n.info.name == node) return n.gpu_jobs.at(0);
    }
    return std::vector<int64_t>{-1};
  };
  JobId id = SubmitFailing(1);
  const std::string first = c_->FindJob(id)->allocation.at(0).node;
  const std::string other = first == "n1" ? "n2" : "n1";
  EXPECT_EQ(jobs_on(first), std::vector<int64_t>{id.value});
  EXPECT_TRUE(jobs_on(other).empty());
  auto report = [&](const std::string& node, ReportRequest r) {
    r.node = node;
    r.session = session(node);
    ASSERT_TRUE(Run(AgentReport{std::move(r)}).status.ok());
  };
  report(first, {.events = {{.job = id, .kind = JobEvent::Kind::kStarted, .at = now_}}});
  // Its retry must go to the other node.
  ASSERT_TRUE(Run(DrainNode{.caller = {"root", true}, .node = first}).status.ok());
  report(first,
         {.events = {{.job = id, .kind = JobEvent::Kind::kExited, .at = now_, .exit_code = 1}}});
  ASSERT_EQ(State(id), JobState::kRunning);
  ASSERT_EQ(c_->FindJob(id)->allocation.at(0).node, other);
  EXPECT_TRUE(jobs_on(first).empty());
  EXPECT_EQ(jobs_on(other), std::vector<int64_t>{id.value});
  report(other,
         {.events = {{.job = id, .attempt = 1, .kind = JobEvent::Kind::kStarted, .at = now_}}});
  // Readings of the node it left count for nothing; its new node's count for it.
  report(first, {.gpus = {GpuSample{.index = 0, .utilization_pct = 90}}});
  report(other, {.gpus = {GpuSample{.index = 0, .utilization_pct = 50}}});
  auto m = Run(GetJobMetrics{.caller = {"ada", true}, .id = id});
  ASSERT_TRUE(m.status.ok()) << m.status.message();
  EXPECT_EQ(m->samples, 1);
  EXPECT_DOUBLE_EQ(m->utilization_sum, 50);
  // Its node lost: the job is requeued (once the node's fence has passed) and no node lists it.
  now_ += seconds(61);
  report(first, {});
  Run(Tick{});
  now_ += seconds(13);
  report(first, {});
  Run(Tick{});
  EXPECT_EQ(State(id), JobState::kPending);
  EXPECT_TRUE(jobs_on(first).empty());
  EXPECT_TRUE(jobs_on(other).empty());
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
  ASSERT_EQ(Run(GetEvents{})->events.size(), 1u);
  EXPECT_TRUE(Run(GetEvents{.after = 1})->events.empty());
  // A client that saw event 40 of the controller's previous run (numbers start again at 1).
  auto r = Run(GetEvents{.after = 40});
  ASSERT_EQ(r->events.size(), 1u);
  EXPECT_EQ(r->events[0].kind, EventKind::kNodeJoined);
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
  JobId first = Run(SubmitJobs{.caller = {"ada", false}, .specs = {GangSpec(2)}})->jobs[0].id;
  JobSpec held;
  held.command = {"true"};
  held.hold = true;
  ASSERT_TRUE(Run(SubmitJobs{.caller = {"ada", false}, .specs = std::vector<JobSpec>(9999, held)})
                  .status.ok());
  JobId again = Run(SubmitJobs{.caller = {"ada", false}, .specs = {GangSpec(2)}})->jobs[0].id;
  ASSERT_EQ(again.value, first.value + 10000);
  JobId single = Run(SubmitJobs{.caller = {"ada", false}, .specs = {GangSpec(1)}})->jobs[0].id;
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
          ->jobs[0]
          .id;
  JobId second = Run(SubmitJobs{.caller = {"ada", false}, .specs = {GangSpec(2)}})->jobs[0].id;
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
          ->jobs[0]
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

TEST_F(ControllerTest, DrainedGpusAndNodesTakeNoNewJobsAndStayDrainedAcrossARestart) {
  RegisterNode("n1", 2);
  auto d =
      Run(DrainNode{.caller = {"root", true}, .node = "n1", .gpus = {0}, .reason = "ECC errors"});
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d->nodes.size(), 1u);
  EXPECT_EQ(d->nodes[0].gpu_drain_reasons[0], "ECC errors");
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
  auto nodes = Run(ListNodes{});
  ASSERT_EQ(nodes->nodes.size(), 1u);
  EXPECT_EQ(nodes->nodes[0].state, NodeState::kDrained);
  EXPECT_EQ(nodes->nodes[0].drain_reason, "maintenance");
  EXPECT_EQ(State(b), JobState::kPending);
  ASSERT_TRUE(Run(DrainNode{.caller = {"root", true}, .node = "n1", .drain = false}).status.ok());
  EXPECT_EQ(State(b), JobState::kRunning);
}

}  // namespace
}  // namespace baton::control
