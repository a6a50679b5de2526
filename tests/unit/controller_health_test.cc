// The controller and GPU health: fencing failed GPUs, drains from hardware faults, injected
// faults and the events they raise.
#include <gtest/gtest.h>

#include "controller_fixture.h"

namespace baton::control {
namespace {

class ControllerHealthTest : public ControllerTest {
 protected:
  void ReportHealth(const std::string& node, std::vector<GpuHealth> health) {
    auto r = Run(
        AgentReport{ReportRequest{.node = node, .session = session_, .health = std::move(health)}});
    ASSERT_TRUE(r.status.ok()) << r.status.message();
  }
  std::vector<ClusterEvent> Events() { return Run(GetEvents{})->events; }
  const NodeStatus& Node(const Answered<ListNodes>& r) { return r->nodes.at(0); }
};

TEST_F(ControllerHealthTest, AFailedGpuIsFencedAloneAndItsJobRequeuedWithoutARetry) {
  RegisterNode("n1", 2);
  JobId a = StartJob("n1", 1000, Priority::kNormal);
  JobId b = StartJob("n1", 1000, Priority::kNormal);
  int gpu_a = c_->FindJob(a)->allocation[0].gpus[0];
  ReportHealth("n1", {GpuHealth{.index = gpu_a,
                                .state = GpuHealthState::kReset,
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
  auto nodes = Run(ListNodes{});
  EXPECT_EQ(Node(nodes).health[gpu_a].state, GpuHealthState::kReset);
  auto events = Events();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().kind, EventKind::kGpuFailed);
  EXPECT_EQ(events.back().severity, Severity::kAlert);
  EXPECT_EQ(events.back().gpu, gpu_a);
  EXPECT_NE(events.back().message.find("requeued job " + a.ToString()), std::string::npos);
  // It passes its check: back in service, and the waiting job starts on it.
  now_ += seconds(40);
  ReportHealth("n1", {GpuHealth{.index = gpu_a, .state = GpuHealthState::kOk, .since = now_}});
  EXPECT_EQ(State(a), JobState::kRunning);
  EXPECT_EQ(c_->FindJob(a)->allocation[0].gpus[0], gpu_a);
  EXPECT_EQ(Events().back().kind, EventKind::kGpuRecovered);
}

TEST_F(ControllerHealthTest, AHardwareFaultBecomesADrainThatOutlivesARestartUntilAnAdminUndrains) {
  RegisterNode("n1", 2);
  ReportHealth("n1", {GpuHealth{.index = 1,
                                .state = GpuHealthState::kDrain,
                                .reason = "xid 79: GPU has fallen off the bus",
                                .since = now_}});
  auto nodes = Run(ListNodes{});
  EXPECT_EQ(Node(nodes).gpu_drain_reasons[1], "health: xid 79: GPU has fallen off the bus");
  // A new controller from the store: the drain is still there, the agent's health aside.
  c_ = std::make_unique<Controller>();
  c_->Restore(*store_.Load(), now_);
  RegisterNode("n1", 2);
  JobId a = Submit(1000);
  JobId b = Submit(1000);
  EXPECT_EQ(State(a), JobState::kRunning);
  EXPECT_EQ(State(b), JobState::kPending);  // GPU 1 takes nothing
  auto undrained =
      Run(DrainNode{.caller = {"root", true}, .node = "n1", .gpus = {1}, .drain = false});
  ASSERT_TRUE(undrained.status.ok());
  EXPECT_EQ(State(b), JobState::kRunning);
}

TEST_F(ControllerHealthTest, UndrainingAGpuDrainedForItsHealthTellsItsAgentToForgetTheFault) {
  RegisterNode("n1", 2);
  ReportHealth("n1", {GpuHealth{.index = 0,
                                .state = GpuHealthState::kDrain,
                                .reason = "xid 64: row remap failed",
                                .since = now_}});
  Poll("n1");
  ASSERT_TRUE(Run(DrainNode{.caller = {"root", true}, .node = "n1", .gpus = {0}, .drain = false})
                  .status.ok());
  std::vector<Order> orders = Poll("n1");
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_EQ(orders[0].kind, Order::Kind::kReadmit);
  EXPECT_EQ(orders[0].inject.gpu, 0);
  EXPECT_EQ(Run(ListNodes{})->nodes[0].health[0].state, GpuHealthState::kOk);
  EXPECT_EQ(State(Submit(2000)), JobState::kRunning);  // both GPUs take work again
}

TEST_F(ControllerHealthTest, RepeatedReportsOfTheSameFaultRaiseOneEvent) {
  RegisterNode("n1", 2);
  GpuHealth h{
      .index = 0, .state = GpuHealthState::kReset, .reason = "temperature 95 °C", .since = now_};
  ReportHealth("n1", {h});
  now_ += seconds(2);
  ReportHealth("n1", {h});
  // The agent registers again (say it restarted) and still judges the GPU the same.
  Run(AgentRegister{RegisterRequest{.node = Run(ListNodes{})->nodes[0].info, .health = {h}}});
  int failed = 0;
  for (const ClusterEvent& e : Events()) failed += e.kind == EventKind::kGpuFailed;
  EXPECT_EQ(failed, 1);
}

TEST_F(ControllerHealthTest, FaultsAreInjectedOnlyIntoSimulatedGpusAndOnlyByAnAdmin) {
  RegisterNode("n1", 2);
  FaultInjection xid{.gpu = 1, .fault = FaultKind::kXid, .value = 79};
  EXPECT_EQ(Run(InjectFault{.caller = {"ada", false}, .node = "n1", .fault = xid}).status.code(),
            Code::kPermissionDenied);
  EXPECT_EQ(Run(InjectFault{.caller = {"root", true}, .node = "nope", .fault = xid}).status.code(),
            Code::kNotFound);
  FaultInjection far{.gpu = 7, .fault = FaultKind::kLost};
  EXPECT_EQ(Run(InjectFault{.caller = {"root", true}, .node = "n1", .fault = far}).status.message(),
            "gpu: node n1 has no GPU 7");
  ASSERT_TRUE(Run(InjectFault{.caller = {"root", true}, .node = "n1", .fault = xid}).status.ok());
  std::vector<Order> orders = Poll("n1");
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_EQ(orders[0].kind, Order::Kind::kInject);
  EXPECT_EQ(orders[0].inject, xid);
  // A node with real GPUs refuses.
  NodeInfo real = Run(ListNodes{})->nodes[0].info;
  real.name = "n2";
  real.gpu_backend = GpuBackendKind::kNvml;
  Run(AgentRegister{RegisterRequest{.node = real}});
  auto r = Run(InjectFault{.caller = {"root", true}, .node = "n2", .fault = xid});
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
  EXPECT_EQ(events.back().kind, EventKind::kGpuXid);
  EXPECT_EQ(events.back().job, a.value);
  EXPECT_EQ(State(a), JobState::kRunning);  // the GPU stays in service
  now_ += seconds(61);
  Run(Tick{});
  events = Run(GetEvents{.after = events.back().seq})->events;
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, EventKind::kNodeLost);
  EXPECT_EQ(events[0].severity, Severity::kAlert);
}

}  // namespace
}  // namespace baton::control
