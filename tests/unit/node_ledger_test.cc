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

// A UTC midnight, and a day of a node that changed use every 20 minutes: 72 stretches, busy for
// nlp and idle for vision in turn, the last one running on past midnight.
const TimePoint kDay = FromMillis(1'790'035'200'000);  // 2026-09-22T00:00:00Z

void BusyDay(NodeLedger& ledger, const NodeTemplate& t, TimePoint day) {
  for (int i = 0; i < 72; ++i) {
    const bool busy = i % 2 == 0;
    ledger.Use("h100-1", t, {t}, busy ? NodeUse::kBusy : NodeUse::kIdle, busy ? "nlp" : "vision",
               busy ? "bob" : "ada", day + minutes(20 * i));
  }
}

TEST(NodeLedger, BudgetsSumByDayWhatAWalkOfEveryStretchSums) {
  const NodeTemplate t = Template("h100", 36);
  NodeLedger ledger;
  BusyDay(ledger, t, kDay - hours(24));  // yesterday, then today; the last idle still open
  BusyDay(ledger, t, kDay);
  ledger.Use("h100-2", t, {t}, NodeUse::kBoot, "vision", "ada", kDay - hours(30));
  ledger.End("h100-2", kDay + hours(2));  // across two midnights
  const TimePoint now = kDay + hours(25);
  for (TimePoint since : {TimePoint{}, kDay - hours(24), kDay, kDay + hours(24), kDay + hours(3)}) {
    const auto walked = ledger.IdleCost(since, now);
    const auto summed = ledger.IdleCostSince(since, now);
    for (const std::string project : {"vision", "nlp"}) {
      const int64_t want = walked.count({project, ""}) ? walked.at({project, ""}) : 0;
      const int64_t got = summed.count(project) ? summed.at(project) : 0;
      EXPECT_NEAR(got, want, 1) << project << " since " << FormatRfc3339(since);
    }
  }
  // Today's idle for vision: 35 closed stretches of 20 minutes, the open one from 23:40 to now
  // (1 h 20 min), and h100-2's boot after midnight (2 h); 0.6 a minute.
  EXPECT_NEAR(ledger.IdleCostSince(kDay, now).at("vision"), (35 * 20 + 80 + 120) * 600'000, 1);
}

void ExpectSameMoney(const std::map<NodeLedger::Owner, int64_t>& got,
                     const std::map<NodeLedger::Owner, int64_t>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (const auto& [owner, money] : want) EXPECT_NEAR(got.at(owner), money, 1) << owner.first;
}

TEST(NodeLedger, OldDaysAreFoldedIntoAStretchPerUseAndOwnerWithTheirMoneyKept) {
  const NodeTemplate t = Template("h100", 36);
  NodeLedger ledger;
  // h100-2: idle, busy, idle across midnight (two days before today), then suspended.
  ledger.Use("h100-2", t, {t}, NodeUse::kIdle, "vision", "ada", kDay - hours(50));
  ledger.Use("h100-2", t, {t}, NodeUse::kBusy, "nlp", "bob", kDay - hours(49));
  ledger.Use("h100-2", t, {t}, NodeUse::kIdle, "vision", "ada", kDay - minutes(48 * 60 + 30));
  ledger.End("h100-2", kDay - hours(47));
  // h100-1: two busy days; yesterday's last idle runs on to 01:00 today.
  BusyDay(ledger, t, kDay - hours(48));
  BusyDay(ledger, t, kDay - hours(24));
  ledger.Use("h100-1", t, {t}, NodeUse::kBusy, "nlp", "bob", kDay + hours(1));
  ledger.Use("h100-1", t, {t}, NodeUse::kIdle, "vision", "ada", kDay + hours(2));  // open
  ASSERT_EQ(ledger.TakeChanged().size(), 149u);
  const TimePoint now = kDay + hours(3);
  const auto walked = ledger.IdleCost(kDay - hours(48), now);
  const auto day_before = ledger.IdleCost(kDay - hours(48), kDay - hours(24));
  const auto costs = ledger.Costs(kDay - hours(72), now, now);
  ASSERT_TRUE(costs.has_value());
  EXPECT_EQ(costs->templates.at(0).peak_nodes, 2);

  ledger.Compact(kDay);  // the days before today
  const std::vector<int64_t> removed = ledger.TakeRemoved();
  const std::vector<store::NodeCharge> made = ledger.TakeChanged();
  // Each of h100-1's old days: a busy and an idle stretch, end to end from its first start.
  // Its idle across midnight ended after the cut: it stays as it was.
  EXPECT_EQ(removed.size(), 72u + 71u + 3u);
  ASSERT_EQ(made.size(), 7u);
  for (const store::NodeCharge& c : made) {
    EXPECT_GT(c.id, 149) << "a new id for every new stretch";
    ASSERT_TRUE(c.end.has_value());
  }
  EXPECT_EQ(made[0].use, "busy");
  EXPECT_EQ(made[0].start, kDay - hours(48));
  EXPECT_EQ(made[0].end, kDay - hours(36));  // 36 stretches of 20 minutes
  EXPECT_EQ(made[1].use, "idle");
  EXPECT_EQ(made[1].project, "vision");
  EXPECT_EQ(made[1].start, kDay - hours(36));  // end to end: one node is one node
  EXPECT_EQ(made[1].end, kDay - hours(24));
  EXPECT_EQ(made[3].start, kDay - hours(12));
  EXPECT_EQ(made[3].end, kDay - minutes(20));  // 35 of yesterday's idle stretches
  // h100-2's day before: its two idle stretches' parts before midnight are one; the part
  // after midnight is a stretch of its own on the next day.
  EXPECT_EQ(made[4].node, "h100-2");
  EXPECT_EQ(made[4].use, "idle");
  EXPECT_EQ(made[4].start, kDay - hours(50));
  EXPECT_EQ(made[4].end, kDay - minutes(48 * 60 + 30));
  EXPECT_EQ(made[5].use, "busy");
  EXPECT_EQ(made[5].end, kDay - hours(48));
  EXPECT_EQ(made[6].use, "idle");
  EXPECT_EQ(made[6].start, kDay - hours(48));
  EXPECT_EQ(made[6].end, kDay - hours(47));
  EXPECT_EQ(ledger.charges().size(), 10u);  // and yesterday's last idle, today's two
  ASSERT_NE(ledger.Open("h100-1"), nullptr);
  EXPECT_EQ(ledger.Open("h100-1")->use, "idle");

  // The money, node-hours and whose they are: the same for whole days.
  ExpectSameMoney(ledger.IdleCost(kDay - hours(48), now), walked);
  ExpectSameMoney(ledger.IdleCost(kDay - hours(48), kDay - hours(24)), day_before);
  const auto after = ledger.Costs(kDay - hours(72), now, now);
  ASSERT_TRUE(after.has_value());
  EXPECT_NEAR(after->node_seconds, costs->node_seconds, 1e-6);
  EXPECT_NEAR(after->cost, costs->cost, 1e-6);
  EXPECT_NEAR(after->idle_cost, costs->idle_cost, 1e-6);
  EXPECT_EQ(after->templates.at(0).peak_nodes, 2);
  EXPECT_NEAR(ledger.IdleCostSince(kDay - hours(48), now).at("vision"), walked.at({"vision", ""}),
              1);

  // Once a day: the same cut again changes nothing.
  ledger.Compact(kDay);
  EXPECT_TRUE(ledger.TakeRemoved().empty());
  EXPECT_TRUE(ledger.TakeChanged().empty());
  // The next day's: yesterday's last idle has ended by then, and its part before midnight
  // joins yesterday's idle.
  ledger.Compact(kDay + hours(24));
  EXPECT_EQ(ledger.TakeRemoved().size(), 3u);
  const std::vector<store::NodeCharge> later = ledger.TakeChanged();
  ASSERT_EQ(later.size(), 3u);
  EXPECT_EQ(later[1].use, "idle");
  EXPECT_EQ(later[1].start, kDay - hours(12));
  EXPECT_EQ(later[1].end, kDay);
  EXPECT_EQ(later[2].start, kDay);
  EXPECT_EQ(later[2].end, kDay + hours(1));
  ExpectSameMoney(ledger.IdleCost(kDay - hours(48), now), walked);

  // What the store keeps after both batches is what the ledger has: a restore folds nothing.
  NodeLedger restored;
  restored.Restore(ledger.charges());
  restored.Compact(kDay + hours(24));
  EXPECT_TRUE(restored.TakeRemoved().empty());
  ExpectSameMoney(restored.IdleCost(kDay - hours(48), now), walked);
}

}  // namespace
}  // namespace baton::control
