// MIG on demand in the controller (control/mig_desk.h, issue 42): a job asking for a profile
// no instance has is accepted where an agent re-plans MIG, the next window orders the GPU cut,
// the GPU reconfigures (none of its instances given to jobs) until its agent registers the new
// instances, and the job then runs on one. Busy instances are never destroyed; a change that
// waits for them holds them from new jobs; a change never reported is given up.
#include <gtest/gtest.h>

#include "control/mig_desk.h"
#include "controller_fixture.h"

namespace baton::control {
namespace {

constexpr int64_t kA100 = int64_t{80} << 30;

Gpu Instance(const std::string& profile, int start) {
  return Gpu{.uuid = "MIG-" + profile + "-" + std::to_string(start),
             .model = MigModel("A100-80GB", profile),
             .memory_bytes = int64_t{ParseMigProfile(profile)->memory_gb} << 30,
             .physical = 0,
             .mig_profile = profile,
             .mig_start = start};
}

class ControllerMigTest : public ControllerTest {
 protected:
  // n1's agent re-plans MIG; its one A100 has `instances`. `held`: the jobs it runs.
  void RegisterMig(std::vector<Gpu> instances, std::vector<JobEvent> held = {}) {
    NodeInfo info;
    info.name = "n1";
    info.cpus = 64;
    info.memory_bytes = 512LL << 30;
    info.gpu_backend = GpuBackendKind::kSimulated;
    info.mig_gpus = {MigParent{.physical = 0, .model = "A100-80GB", .memory_bytes = kA100}};
    info.gpus = MigPlaces(instances, info.mig_gpus);
    auto r = Run(AgentRegister{RegisterRequest{.node = info, .jobs = std::move(held)}});
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    session_ = r->session;
    acked_ = 0;
  }

  Result<JobId> SubmitMig(const std::string& profile, Duration time_limit = Duration(0)) {
    JobSpec s;
    s.command = {"true"};
    s.resources.milli_gpus = 1000;
    s.resources.gpu_type = profile;
    s.time_limit = time_limit;
    auto r = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}});
    if (!r.status.ok()) return Err(r.status);
    return r->jobs.at(0).id;
  }

  // The next window's orders.
  std::vector<Order> Window() {
    now_ += seconds(31);
    Run(Tick{});
    return Poll("n1");
  }

  std::vector<int> Reconfiguring() { return Run(ListNodes{})->nodes.at(0).mig_reconfiguring; }
  std::vector<ClusterEvent> MigEvents() {
    std::vector<ClusterEvent> out;
    auto events = Run(GetEvents{});
    for (const ClusterEvent& e : events->events)
      if (e.kind == EventKind::kMigChanged) out.push_back(e);
    return out;
  }
  static std::optional<Order> Find(const std::vector<Order>& orders, Order::Kind kind) {
    for (const Order& o : orders)
      if (o.kind == kind) return o;
    return std::nullopt;
  }
};

TEST_F(ControllerMigTest, AProfileNoInstanceHasIsCutAtTheNextWindowAndRunsOnceTheAgentReportsIt) {
  RegisterMig({Instance("7g.80gb", 0)});
  // Accepted: the GPU can be cut into 3g.40gb instances, though none is there now.
  Result<JobId> a = SubmitMig("3g.40gb");
  ASSERT_TRUE(a.has_value()) << a.error().message();
  EXPECT_EQ(State(*a), JobState::kPending);
  EXPECT_FALSE(Find(Poll("n1"), Order::Kind::kLaunch).has_value());
  // It says what it waits for: not "no node can ever hold", but the window that cuts one.
  EXPECT_EQ(c_->FindJob(*a)->reason_detail,
            "waiting for a 3g.40gb MIG instance, which no GPU of pool default has free: the next "
            "MIG window (every 30s) cuts one from a GPU that is re-planned");

  std::vector<Order> orders = Window();
  const std::optional<Order> mig = Find(orders, Order::Kind::kMig);
  ASSERT_TRUE(mig.has_value());
  EXPECT_EQ(mig->mig.physical, 0);
  EXPECT_EQ(mig->mig.destroy, (std::vector<MigSlice>{{"7g.80gb", 0}}));
  ASSERT_EQ(mig->mig.create.size(), 1u);
  EXPECT_EQ(mig->mig.create[0].profile, "3g.40gb");
  const int start = mig->mig.create[0].start;
  EXPECT_EQ(Reconfiguring(), std::vector<int>{0});
  // Until the agent reports, the GPU takes no job, not even one for what it has now.
  Result<JobId> whole = SubmitMig("7g.80gb");
  ASSERT_TRUE(whole.has_value());
  EXPECT_FALSE(Find(Poll("n1"), Order::Kind::kLaunch).has_value());

  RegisterMig({Instance("3g.40gb", start)});
  EXPECT_TRUE(Reconfiguring().empty());
  std::vector<ClusterEvent> events = MigEvents();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].severity, Severity::kInfo);
  EXPECT_NE(events[0].message.find("GPU 0 of n1 re-partitioned for the queue"), std::string::npos)
      << events[0].message;
  EXPECT_NE(
      events[0].message.find("destroyed 7g.80gb at 0, created 3g.40gb at " + std::to_string(start)),
      std::string::npos)
      << events[0].message;
  const std::optional<Order> launch = Find(Poll("n1"), Order::Kind::kLaunch);
  ASSERT_TRUE(launch.has_value());
  EXPECT_EQ(launch->launch.job, *a);
  EXPECT_EQ(launch->launch.gpus, std::vector<int>{start});  // index = first + its start
}

TEST_F(ControllerMigTest, ABusyInstanceIsNeverDestroyedAndTheChangeWaitsForItsTimeLimit) {
  RegisterMig({Instance("4g.40gb", 0), Instance("3g.40gb", 4)});
  Result<JobId> running = SubmitMig("4g.40gb", std::chrono::hours(1));
  ASSERT_TRUE(running.has_value());
  const std::optional<Order> launch = Find(Poll("n1"), Order::Kind::kLaunch);
  ASSERT_TRUE(launch.has_value());
  ASSERT_EQ(launch->launch.gpus, std::vector<int>{0});
  ReportEvent("n1", {.job = *running, .kind = JobEvent::Kind::kStarted});

  // The whole GPU is wanted: only once the 4g.40gb's job has ended.
  Result<JobId> big = SubmitMig("7g.80gb");
  ASSERT_TRUE(big.has_value()) << big.error().message();
  EXPECT_FALSE(Find(Window(), Order::Kind::kMig).has_value());
  EXPECT_TRUE(Reconfiguring().empty());
  // Meanwhile the instance waited for takes no new job once its own has ended.
  ReportEvent("n1", {.job = *running, .kind = JobEvent::Kind::kExited});
  Result<JobId> small = SubmitMig("4g.40gb");
  ASSERT_TRUE(small.has_value());
  EXPECT_FALSE(Find(Poll("n1"), Order::Kind::kLaunch).has_value());
  ASSERT_TRUE(Run(JobAction{.caller = {"ada", false}, .id = *small}).status.ok());

  const std::optional<Order> mig = Find(Window(), Order::Kind::kMig);
  ASSERT_TRUE(mig.has_value());
  EXPECT_EQ(mig->mig.create, (std::vector<MigSlice>{{"7g.80gb", 0}}));
  EXPECT_EQ(mig->mig.destroy.size(), 2u);
}

TEST_F(ControllerMigTest, AChangeNeverReportedIsGivenUpAndOneThatFailedLeavesTheGpuAlone) {
  RegisterMig({Instance("7g.80gb", 0)});
  ASSERT_TRUE(SubmitMig("1g.10gb").has_value());
  ASSERT_TRUE(Find(Window(), Order::Kind::kMig).has_value());
  EXPECT_EQ(Reconfiguring(), std::vector<int>{0});
  // Five minutes pass with no registration: the GPU goes back in use as it was, said.
  for (int i = 0; i < 10; ++i) Window();
  EXPECT_TRUE(Reconfiguring().empty());
  std::vector<ClusterEvent> events = MigEvents();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().severity, Severity::kAlert);
  EXPECT_NE(events.back().message.find("did not report the MIG change"), std::string::npos)
      << events.back().message;
  // Left alone for a while: no new order at the next window.
  EXPECT_FALSE(Find(Window(), Order::Kind::kMig).has_value());

  // Past the rest, ordered again; the agent registers without the change made (it failed):
  // said as an alert, the GPU left as it is.
  std::vector<Order> orders;
  int windows = 0;
  while (!Find(orders, Order::Kind::kMig) && ++windows < 40) orders = Window();
  EXPECT_GE(windows * seconds(31), kMigFailedRest - seconds(62));
  RegisterMig({Instance("7g.80gb", 0)});
  events = MigEvents();
  EXPECT_EQ(events.back().severity, Severity::kAlert);
  EXPECT_NE(events.back().message.find("was not made"), std::string::npos) << events.back().message;
  EXPECT_TRUE(Reconfiguring().empty());
  EXPECT_FALSE(Find(Window(), Order::Kind::kMig).has_value());
}

TEST_F(ControllerMigTest, AFaultOnAMigGpuIsItsInstancesNotItsVacantPlaces) {
  RegisterMig({Instance("3g.40gb", 0)});
  // The agent judges a MIG GPU's fault for every place of it; only the instance is a GPU.
  std::vector<GpuHealth> health;
  for (int g = 0; g < kMigPlaces; ++g) {
    health.push_back(GpuHealth{.index = g,
                               .state = GpuHealthState::kDrain,
                               .reason = "xid 79: GPU has fallen off the bus",
                               .since = now_});
  }
  auto r = Run(AgentReport{ReportRequest{.node = "n1", .session = session_, .health = health}});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  auto events = Run(GetEvents{});
  int failed = 0;
  for (const ClusterEvent& e : events->events) {
    if (e.kind == EventKind::kGpuFailed) {
      ++failed;
      EXPECT_EQ(e.gpu, 0) << e.message;
    }
  }
  EXPECT_EQ(failed, 1);
  const NodeStatus node = Run(ListNodes{})->nodes.at(0);
  EXPECT_FALSE(node.gpu_drain_reasons.at(0).empty());
  for (int g = 1; g < kMigPlaces; ++g) {
    EXPECT_TRUE(node.gpu_drain_reasons.at(g).empty()) << g;
    EXPECT_EQ(node.health.at(g).state, GpuHealthState::kOk) << g;
  }
}

TEST_F(ControllerMigTest, WithoutAnAgentThatRePlansMigAProfileNoneHasIsRefusedAtSubmit) {
  RegisterNode("n1", 2);
  Result<JobId> a = SubmitMig("3g.40gb");
  ASSERT_FALSE(a.has_value());
  EXPECT_NE(a.error().message().find("3g.40gb"), std::string::npos) << a.error().message();
}

}  // namespace
}  // namespace baton::control
