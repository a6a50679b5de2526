// MIG layouts and their re-planning (sched/mig_plan.h, issue 42): the hardware's geometry on
// A100-40GB, A100-80GB, H100-80GB and H200 as `nvidia-smi mig -lgipp` lists it, layouts a GPU
// can and cannot have, and plans that reuse idle instances, fill free slices largest first,
// destroy idle instances only where needed and wait for the busy ones that end soonest.
#include "sched/mig_plan.h"

#include <gtest/gtest.h>

namespace baton::sched {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;
constexpr int64_t k80 = 80 * kGiB;
constexpr int64_t kH200 = int64_t{143771} << 20;  // what NVML reports for an H200's 141 GB

MigGeometry Geometry(std::string_view profile, int64_t memory) {
  auto g = MigGeometryOf(profile, memory);
  EXPECT_TRUE(g.has_value()) << profile << ": " << (g ? "" : g.error().message());
  return g ? *g : MigGeometry{};
}

TEST(MigGeometry, InstancesArePlacedTogetherWhereverTheHardwareCanHoldThem) {
  const int64_t k80 = int64_t{80} << 30;
  // In order given, found by search: the 3g.40gb only fits at 4 beside a 2g.20gb at 0.
  auto starts = PlaceMig({"2g.20gb", "1g.10gb", "3g.40gb", "1g.10gb"}, k80);
  ASSERT_TRUE(starts.has_value()) << starts.error().message();
  EXPECT_EQ(*starts, (std::vector<int>{0, 2, 4, 3}));
  EXPECT_EQ(*PlaceMig({"7g.80gb"}, k80), std::vector<int>{0});
  EXPECT_EQ(
      PlaceMig({"1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"}, k80)
          ->back(),
      6);
  // Three 1g.20gb and a 2g.20gb need 8 slices in pairs at 0, 2, 4, 6; the 2g.20gb cannot
  // start at 6.
  EXPECT_EQ(*PlaceMig({"1g.20gb", "1g.20gb", "1g.20gb", "2g.20gb"}, k80),
            (std::vector<int>{2, 4, 6, 0}));
  auto too_many = PlaceMig({"4g.40gb", "4g.40gb"}, k80);
  ASSERT_FALSE(too_many.has_value());
  EXPECT_NE(too_many.error().message().find("8 compute slices in all"), std::string::npos);
  EXPECT_EQ(*PlaceMig({"4g.40gb", "3g.40gb"}, k80), (std::vector<int>{0, 4}));
  auto none = PlaceMig({"1g.20gb", "1g.20gb", "1g.20gb", "1g.20gb", "1g.10gb"}, k80);
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().message().find("no placement"), std::string::npos);
  EXPECT_FALSE(PlaceMig({"5g.60gb"}, k80).has_value());
}

TEST(MigGeometry, IsTheHardwaresPlacementTable) {
  using V = std::vector<int>;
  // A100-80GB and H100-80GB: nvidia-smi mig -lgipp, profiles 19, 15, 14, 9, 5, 0.
  EXPECT_EQ(Geometry("1g.10gb", k80).starts, (V{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(Geometry("1g.10gb", k80).size, 1);
  EXPECT_EQ(Geometry("1g.20gb", k80).starts, (V{0, 2, 4, 6}));
  EXPECT_EQ(Geometry("1g.20gb", k80).size, 2);
  EXPECT_EQ(Geometry("2g.20gb", k80).starts, (V{0, 2, 4}));
  EXPECT_EQ(Geometry("3g.40gb", k80).starts, (V{0, 4}));
  EXPECT_EQ(Geometry("3g.40gb", k80).size, 4);
  EXPECT_EQ(Geometry("3g.40gb", k80).compute, 3);
  EXPECT_EQ(Geometry("4g.40gb", k80).starts, (V{0}));
  EXPECT_EQ(Geometry("7g.80gb", k80).size, 8);
  // A100-40GB's names for the same shapes; H200's.
  EXPECT_EQ(Geometry("1g.5gb", 40 * kGiB).size, 1);
  EXPECT_EQ(Geometry("1g.10gb", 40 * kGiB).size, 2);
  EXPECT_EQ(Geometry("3g.20gb", 40 * kGiB).starts, (V{0, 4}));
  EXPECT_EQ(Geometry("1g.18gb", kH200).size, 1);
  EXPECT_EQ(Geometry("1g.35gb", kH200).size, 2);
  EXPECT_EQ(Geometry("3g.71gb", kH200).size, 4);
  EXPECT_EQ(Geometry("7g.141gb", kH200).size, 8);
  EXPECT_TRUE(Geometry("1g.10gb+me", k80).media);
  // What no GPU has, and what is no profile.
  for (const char* bad :
       {"5g.40gb", "3g.10gb", "banana", "3g.", "g.40gb", "3g.40", "2g.20gb+me+me"}) {
    auto g = MigGeometryOf(bad, k80);
    EXPECT_FALSE(g.has_value()) << bad;
  }
  EXPECT_NE(MigGeometryOf("5g.40gb", k80).error().message().find("no instance of 5 compute slices"),
            std::string::npos);
  EXPECT_FALSE(MigGeometryOf("1g.10gb", 0).has_value());
}

TEST(MigLayout, IsOneTheHardwareAllows) {
  std::vector<MigInstance> sevens;
  for (int s = 0; s < 7; ++s) sevens.push_back({.profile = "1g.10gb", .start = s});
  EXPECT_TRUE(CheckMigLayout(sevens, k80).ok());
  EXPECT_TRUE(CheckMigLayout({{"4g.40gb", 0}, {"3g.40gb", 4}}, k80).ok());
  EXPECT_TRUE(
      CheckMigLayout({{"2g.20gb", 0}, {"2g.20gb", 2}, {"2g.20gb", 4}, {"1g.10gb", 6}}, k80).ok());
  Status st = CheckMigLayout({{"3g.40gb", 0}, {"4g.40gb", 4}}, k80);
  EXPECT_NE(st.message().find("4g.40gb cannot start at memory slice 4"), std::string::npos)
      << st.message();
  st = CheckMigLayout({{"2g.20gb", 0}, {"1g.10gb", 1}}, k80);
  EXPECT_NE(st.message().find("overlaps"), std::string::npos) << st.message();
  EXPECT_FALSE(CheckMigLayout({{"1g.10gb+me", 0}, {"1g.10gb+me", 1}}, k80).ok());
  EXPECT_FALSE(CheckMigLayout({{"1g.10gb", 7}}, k80).ok());  // slice 7 is 7g's and 1g.20gb's
}

TEST(MigLayout, AProfileFitsAtItsFirstFreeStart) {
  EXPECT_EQ(FitMig({}, "7g.80gb", k80), 0);
  EXPECT_EQ(FitMig({{"1g.10gb", 0}}, "7g.80gb", k80), std::nullopt);
  EXPECT_EQ(FitMig({{"1g.10gb", 0}}, "3g.40gb", k80), 4);
  EXPECT_EQ(FitMig({{"1g.10gb", 0}}, "4g.40gb", k80), std::nullopt);  // only at 0
  EXPECT_EQ(FitMig({{"1g.10gb", 0}}, "2g.20gb", k80), 2);
  EXPECT_EQ(FitMig({{"1g.10gb", 0}}, "unknown", k80), std::nullopt);
}

MigGpu Gpu(int index, std::vector<MigInstance> instances, int64_t memory = k80) {
  return MigGpu{
      .node = "n1", .gpu = index, .memory_bytes = memory, .instances = std::move(instances)};
}

TEST(MigPlan, AnIdleInstanceOfTheProfileIsUsedAsItIs) {
  MigPlan plan = PlanMig({Gpu(0, {{.profile = "3g.40gb", .start = 0}})}, {"3g.40gb"});
  EXPECT_EQ(plan.reused, 1);
  EXPECT_TRUE(plan.changes.empty());
  EXPECT_TRUE(plan.unmet.empty());
}

TEST(MigPlan, FreeSlicesAreFilledLargestFirstBesideBusyInstances) {
  MigPlan plan = PlanMig({Gpu(0, {{.profile = "3g.40gb", .start = 0, .busy = true}})},
                         {"1g.10gb", "2g.20gb", "1g.10gb"});
  ASSERT_EQ(plan.changes.size(), 1u);
  const MigChange& c = plan.changes[0];
  EXPECT_TRUE(c.destroy.empty());
  EXPECT_FALSE(c.after.has_value());
  EXPECT_EQ(c.create, (std::vector<MigInstance>{{"2g.20gb", 4}, {"1g.10gb", 6}}));
  EXPECT_EQ(plan.unmet, std::vector<std::string>{"1g.10gb"});  // slice 7 is no 1g's
  EXPECT_TRUE(CheckMigLayout({{"3g.40gb", 0}, {"2g.20gb", 4}, {"1g.10gb", 6}}, k80).ok());
}

TEST(MigPlan, LargestFirstLeavesNoSmallRequestInTheWayOfABigOne) {
  // In queue order a 1g first would take slice 0 and leave no room for the 4g.
  MigPlan plan = PlanMig({Gpu(0, {})}, {"1g.10gb", "4g.40gb", "3g.40gb"});
  ASSERT_EQ(plan.changes.size(), 1u);
  EXPECT_EQ(plan.changes[0].create, (std::vector<MigInstance>{{"4g.40gb", 0}, {"3g.40gb", 4}}));
  EXPECT_EQ(plan.unmet, std::vector<std::string>{"1g.10gb"});  // 7 compute slices taken
}

TEST(MigPlan, IdleInstancesGoOnlyWhereTheNewOneNeedsTheirSlices) {
  std::vector<MigInstance> sevens;
  for (int s = 0; s < 7; ++s) sevens.push_back({.profile = "1g.10gb", .start = s});
  MigPlan plan = PlanMig({Gpu(0, sevens)}, {"3g.40gb"});
  ASSERT_EQ(plan.changes.size(), 1u);
  const MigChange& c = plan.changes[0];
  // At 4 it takes the slices of three 1g (slice 7 is free), at 0 those of four.
  EXPECT_EQ(c.create, (std::vector<MigInstance>{{"3g.40gb", 4}}));
  EXPECT_EQ(c.destroy, (std::vector<MigInstance>{{"1g.10gb", 6}, {"1g.10gb", 5}, {"1g.10gb", 4}}));
  EXPECT_TRUE(c.drain.empty());
  EXPECT_FALSE(c.after.has_value());  // 1g.10gb at 0 to 3 are kept
}

TEST(MigPlan, TheGpuThatLosesLeastIsReconfigured) {
  std::vector<MigInstance> sevens;
  for (int s = 0; s < 7; ++s) sevens.push_back({.profile = "1g.10gb", .start = s});
  // GPU 1 gives up one idle 2g (2 compute slices) for a 4g; GPU 0 would give up four 1g.
  MigPlan plan =
      PlanMig({Gpu(0, sevens), Gpu(1, {{.profile = "2g.20gb", .start = 0},
                                       {.profile = "3g.40gb", .start = 4, .busy = true}})},
              {"4g.40gb"});
  ASSERT_EQ(plan.changes.size(), 1u);
  EXPECT_EQ(plan.changes[0].gpu, 1);
  EXPECT_EQ(plan.changes[0].destroy, (std::vector<MigInstance>{{"2g.20gb", 0}}));
  // A claimed idle instance is not destroyed for another request.
  plan = PlanMig({Gpu(0, {{.profile = "2g.20gb", .start = 0}})}, {"2g.20gb", "4g.40gb"});
  EXPECT_EQ(plan.reused, 1);
  EXPECT_EQ(plan.unmet, std::vector<std::string>{"4g.40gb"});
}

TEST(MigPlan, BusyInstancesThatEndSoonestAreWaitedFor) {
  const TimePoint t0 = FromMillis(1'790'000'000'000);
  MigPlan plan = PlanMig(
      {Gpu(0, {{.profile = "7g.80gb",
                .start = 0,
                .busy = true,
                .ends = t0 + std::chrono::minutes(10)}}),
       Gpu(1, {{.profile = "7g.80gb",
                .start = 0,
                .busy = true,
                .ends = t0 + std::chrono::minutes(5)}}),
       Gpu(2, {{.profile = "7g.80gb", .start = 0, .busy = true}})},  // no end: never waited for
      {"1g.10gb", "1g.10gb"});
  ASSERT_EQ(plan.changes.size(), 1u);
  const MigChange& c = plan.changes[0];
  EXPECT_EQ(c.gpu, 1);
  EXPECT_EQ(c.after, t0 + std::chrono::minutes(5));
  EXPECT_EQ(c.drain.size(), 1u);
  EXPECT_EQ(c.destroy.size(), 1u);
  EXPECT_EQ(c.create, (std::vector<MigInstance>{{"1g.10gb", 0}, {"1g.10gb", 1}}));
  EXPECT_TRUE(plan.unmet.empty());
  // Only jobs without an end in the way: nothing is planned.
  plan = PlanMig({Gpu(2, {{.profile = "7g.80gb", .start = 0, .busy = true}})}, {"1g.10gb"});
  EXPECT_TRUE(plan.changes.empty());
  EXPECT_EQ(plan.unmet, std::vector<std::string>{"1g.10gb"});
}

TEST(MigPlan, AGpuBeingReconfiguredOrOfAnotherSizeIsLeftAlone) {
  MigGpu busy = Gpu(0, {});
  busy.reconfiguring = true;
  MigPlan plan = PlanMig({busy, Gpu(1, {}, 40 * kGiB)}, {"3g.40gb"});
  EXPECT_TRUE(plan.changes.empty());  // an A100-40GB has no 3g.40gb
  EXPECT_EQ(plan.unmet, std::vector<std::string>{"3g.40gb"});
  plan = PlanMig({busy, Gpu(1, {}, 40 * kGiB)}, {"3g.20gb"});
  ASSERT_EQ(plan.changes.size(), 1u);
  EXPECT_EQ(plan.changes[0].gpu, 1);
}

TEST(MigFragmentation, IsHowBrokenUpTheFreeSlicesAre) {
  EXPECT_DOUBLE_EQ(MigFragmentation({}, k80), 0.0);
  EXPECT_DOUBLE_EQ(MigFragmentation({{"3g.40gb", 0}}, k80), 0.0);
  EXPECT_DOUBLE_EQ(MigFragmentation({{"7g.80gb", 0}}, k80), 0.0);
  EXPECT_DOUBLE_EQ(
      MigFragmentation({{"1g.10gb", 0}, {"1g.10gb", 2}, {"1g.10gb", 4}, {"1g.10gb", 6}}, k80),
      0.75);
}

}  // namespace
}  // namespace baton::sched
