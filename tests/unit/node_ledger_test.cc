// The money of autoscaled nodes (control/node_ledger.h): each node's life in stretches of one
// use at its template's price, the stretches with no job charged to whom the node was kept
// for, and what a fixed on-demand cluster of the peak would have cost.
#include "control/node_ledger.h"

#include <gtest/gtest.h>

namespace baton::control {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

const TimePoint kT0 = FromMillis(1'790'000'000'000);

NodeTemplate Template(std::string name, double price, bool spot = false,
                      std::string gpus = "8xH100-80GB") {
  NodeTemplate t;
  t.name = std::move(name);
  t.gpu_spec = std::move(gpus);
  t.gpus = 8;
  t.price_per_hour = price;
  t.spot = spot;
  t.max = 4;
  return t;
}

TEST(OnDemandPrice, ASpotTemplatesIsItsOwnElseTheCheapestOnDemandOfItsGpusElseItsPrice) {
  NodeTemplate spot = Template("h100-spot", 30, true);
  const NodeTemplate od = Template("h100", 98);
  const NodeTemplate dear = Template("h100-dear", 120);
  const NodeTemplate other = Template("a100", 40, false, "8xA100-80GB");
  EXPECT_EQ(OnDemandPrice({spot, dear, od, other}, spot), 98);
  EXPECT_EQ(OnDemandPrice({spot, other}, spot), 30);
  spot.on_demand_price = 90;
  EXPECT_EQ(OnDemandPrice({spot, od}, spot), 90);
  EXPECT_EQ(OnDemandPrice({spot, od}, od), 98);
}

TEST(NodeLedger, ANodesLifeIsChargedInStretchesAndItsIdleTimeToWhomItWasKeptFor) {
  const NodeTemplate t = Template("h100", 36);  // 36 an hour: 0.01 a second
  const std::vector<NodeTemplate> all = {t};
  NodeLedger ledger;
  // Booted 10 minutes for ada's job of vision, ran jobs 1 hour, idle 10 minutes, suspended.
  ledger.Use("h100-1", t, all, NodeUse::kBoot, "vision", "ada", kT0);
  ledger.Use("h100-1", t, all, NodeUse::kIdle, "vision", "ada", kT0 + minutes(10));
  ledger.Use("h100-1", t, all, NodeUse::kIdle, "vision", "ada", kT0 + minutes(10));
  ledger.Use("h100-1", t, all, NodeUse::kBusy, "nlp", "bob", kT0 + minutes(10));
  ledger.Use("h100-1", t, all, NodeUse::kIdle, "nlp", "bob", kT0 + minutes(70));
  ledger.End("h100-1", kT0 + minutes(80));
  // The idle stretch of no length became the busy one: three stretches, all closed.
  std::vector<store::NodeCharge> changed = ledger.TakeChanged();
  ASSERT_EQ(changed.size(), 3u);
  EXPECT_EQ(changed[0].use, "boot");
  EXPECT_EQ(changed[1].use, "busy");
  EXPECT_EQ(changed[2].use, "idle");
  EXPECT_EQ(changed[2].project, "nlp");
  EXPECT_EQ(changed[2].end, kT0 + minutes(80));
  EXPECT_EQ(changed[0].price_micros, 36'000'000);
  EXPECT_TRUE(ledger.TakeChanged().empty());
  EXPECT_EQ(ledger.Open("h100-1"), nullptr);

  // Idle charged: 6 to vision/ada (the boot), 6 to nlp/bob (idle after their job).
  auto idle = ledger.IdleCost(kT0, kT0 + hours(2));
  EXPECT_EQ(idle.at({"vision", ""}), 6'000'000);
  EXPECT_EQ(idle.at({"vision", "ada"}), 6'000'000);
  EXPECT_EQ(idle.at({"nlp", "bob"}), 6'000'000);
  // Within a window, only what falls in it.
  idle = ledger.IdleCost(kT0 + minutes(5), kT0 + minutes(75));
  EXPECT_EQ(idle.at({"vision", ""}), 3'000'000);
  EXPECT_EQ(idle.at({"nlp", ""}), 3'000'000);

  auto costs = ledger.Costs(std::nullopt, std::nullopt, kT0 + hours(5));
  ASSERT_TRUE(costs.has_value());
  ASSERT_EQ(costs->templates.size(), 1u);
  EXPECT_DOUBLE_EQ(costs->node_seconds, 80 * 60);
  EXPECT_NEAR(costs->cost, 48, 1e-9);
  EXPECT_NEAR(costs->idle_cost, 12, 1e-9);
  EXPECT_EQ(costs->templates[0].peak_nodes, 1);
  // A fixed node for the 5 hours from the first resume: 180.
  EXPECT_DOUBLE_EQ(costs->window_seconds, 5 * 3600);
  EXPECT_NEAR(costs->fixed_cost, 180, 1e-9);
  EXPECT_NEAR(costs->saved(), 132, 1e-9);
}

TEST(NodeLedger, TheFixedClusterHasThePeakOfNodesUpAtOnceOnDemand) {
  const NodeTemplate spot = Template("h100-spot", 12, true);
  const NodeTemplate od = Template("h100", 36);
  const std::vector<NodeTemplate> all = {spot, od};
  NodeLedger ledger;
  // Two spot nodes overlap for an hour; a third comes after the first went.
  ledger.Use("h100-spot-1", spot, all, NodeUse::kBusy, "", "", kT0);
  ledger.Use("h100-spot-2", spot, all, NodeUse::kBusy, "", "", kT0 + hours(1));
  ledger.End("h100-spot-1", kT0 + hours(2));
  ledger.Use("h100-spot-1", spot, all, NodeUse::kBusy, "", "", kT0 + hours(2));
  ledger.End("h100-spot-1", kT0 + hours(3));
  ledger.End("h100-spot-2", kT0 + hours(4));
  auto costs = ledger.Costs(std::nullopt, std::nullopt, kT0 + hours(4));
  ASSERT_TRUE(costs.has_value());
  ASSERT_EQ(costs->templates.size(), 1u);
  const NodeCostRow& row = costs->templates[0];
  EXPECT_TRUE(row.spot);
  EXPECT_EQ(row.peak_nodes, 2);  // a node that ends where the next begins is not two
  EXPECT_DOUBLE_EQ(row.node_seconds, 6 * 3600);
  EXPECT_NEAR(row.cost, 72, 1e-9);
  EXPECT_NEAR(row.idle_cost, 0, 1e-9);
  EXPECT_NEAR(row.fixed_cost, 2 * 4 * 36, 1e-9);  // at the on-demand template's price
  EXPECT_NEAR(costs->saved(), 288 - 72, 1e-9);
  // A window with no stretch in it: nothing to say.
  EXPECT_FALSE(ledger.Costs(kT0 + hours(5), kT0 + hours(6), kT0 + hours(7)).has_value());
}

TEST(NodeLedger, ARestoredLedgerGoesOnWithItsOpenStretchesAndNumbersOnward) {
  const NodeTemplate t = Template("h100", 36);
  NodeLedger first;
  first.Use("h100-1", t, {t}, NodeUse::kBoot, "vision", "ada", kT0);
  first.Use("h100-1", t, {t}, NodeUse::kIdle, "vision", "ada", kT0 + minutes(5));
  std::vector<store::NodeCharge> stored = first.TakeChanged();
  ASSERT_EQ(stored.size(), 2u);
  NodeLedger second;
  second.Restore(stored);
  ASSERT_NE(second.Open("h100-1"), nullptr);
  EXPECT_EQ(second.Open("h100-1")->use, "idle");
  EXPECT_EQ(second.OpenNodes(), std::vector<std::string>{"h100-1"});
  // While no controller ran, the node idled on: charged to the same owner.
  second.End("h100-1", kT0 + minutes(65));
  auto idle = second.IdleCost(kT0, kT0 + hours(2));
  EXPECT_EQ(idle.at({"vision", "ada"}), 39'000'000);  // 65 minutes at 0.6 a minute
  second.Use("h100-2", t, {t}, NodeUse::kBoot, "", "", kT0 + hours(1));
  std::vector<store::NodeCharge> changed = second.TakeChanged();
  ASSERT_EQ(changed.size(), 2u);
  EXPECT_EQ(changed[1].id, 3);  // never an id handed out before
  // The cluster's own (a template's minimum) is nobody's idle time.
  EXPECT_EQ(second.IdleCost(kT0, kT0 + hours(3)).count({"", ""}), 0u);
}

}  // namespace
}  // namespace baton::control
