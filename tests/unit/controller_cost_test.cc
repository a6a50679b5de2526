// The controller's costs and budgets: prices from the catalog, alerts and the hard stop.
#include <gtest/gtest.h>

#include "controller_fixture.h"

namespace baton::control {
namespace {

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
    if (e.kind == EventKind::kBudget) out.push_back(e);
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
  auto live = Run(GetJobMetrics{.caller = {"ada", true}, .id = a});
  ASSERT_TRUE(live.status.ok()) << live.status.message();
  EXPECT_DOUBLE_EQ(live->cost, 60);
  EXPECT_EQ(live->currency, "EUR");
  ASSERT_EQ(live->gpus.size(), 2u);
  EXPECT_EQ(live->gpus[0].model, "H100-80GB");
  EXPECT_FALSE(live->gpus[0].sample);  // no readings reported yet
  EXPECT_EQ(Run(GetJob{.caller = {"ada", true}, .id = a})->job.cost_micros, 60'000'000);
  // Readings of its GPUs count towards its mean utilisation; the other GPUs' do not.
  auto r = Run(AgentReport{ReportRequest{.node = "n1",
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
  auto after = Run(GetJobMetrics{.caller = {"ada", true}, .id = a});
  EXPECT_DOUBLE_EQ(after->cost, 60);
  EXPECT_TRUE(after->gpus.empty());
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
  EXPECT_TRUE(costs::BudgetEvents(Run(GetEvents{})->events).empty());
  now_ += seconds(1);  // 8 of 10
  Run(Tick{});
  now_ += milliseconds(500);
  Run(Tick{});
  std::vector<ClusterEvent> ev = costs::BudgetEvents(Run(GetEvents{})->events);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].severity, Severity::kAlert);
  EXPECT_EQ(ev[0].project, "default");
  EXPECT_EQ(ev[0].message,
            "project default has spent 8.00 EUR of its budget of 10.00 EUR this month (80 %)");
  EXPECT_TRUE(Run(SubmitJobs{.caller = {"ada", false}, .specs = {JobSpec{.command = {"true"}}}})
                  .status.ok());
  now_ += seconds(2);
  Run(Tick{});
  ev = costs::BudgetEvents(Run(GetEvents{})->events);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_NE(ev[1].message.find("(100 %); new jobs are refused"), std::string::npos)
      << ev[1].message;
  auto refused = Run(SubmitJobs{.caller = {"ada", false}, .specs = {JobSpec{.command = {"true"}}}});
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
  // The two alerts are kept (events are stored); none is raised again.
  ev = costs::BudgetEvents(Run(GetEvents{})->events);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_NE(ev[1].message.find("(100 %); new jobs are refused"), std::string::npos);
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
