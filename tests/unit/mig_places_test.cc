// MIG on demand on the agent's side (issue 42): the device indices of an agent that re-plans
// MIG (MigPlaces, MigPlacesBackend), simulated GPUs whose instances change as NVML's do, and
// the wire forms of what the controller and the agent tell each other about it.
#include "agent/mig_places.h"

#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>

#include "agent/simulated_gpu_backend.h"
#include "codec/json_codec.h"
#include "sched/mig_plan.h"

namespace baton::agent {
namespace {

Gpu Instance(int physical, const std::string& profile, int start) {
  return Gpu{.uuid = "MIG-" + std::to_string(physical) + "-" + std::to_string(start),
             .model = MigModel("A100-80GB", profile),
             .physical = physical,
             .mig_profile = profile,
             .mig_start = start};
}

TEST(MigPlaces, AMigGpuTakesEightIndicesItsInstancesAtTheirFirstMemorySlice) {
  // GPU 0 whole, GPU 1 in MIG mode (instances listed out of order), GPU 2 in MIG mode with no
  // instance at all, GPU 3 whole.
  std::vector<Gpu> found = {Gpu{.index = 0, .model = "A100-80GB", .physical = 0},
                            Instance(1, "3g.40gb", 4), Instance(1, "1g.10gb", 0),
                            Gpu{.index = 3, .model = "A100-80GB", .physical = 3}};
  std::vector<MigParent> parents = {
      {.physical = 1, .model = "A100-80GB", .memory_bytes = 80LL << 30},
      {.physical = 2, .model = "A100-80GB", .memory_bytes = 80LL << 30}};
  std::vector<int> inner;
  std::vector<Gpu> gpus = MigPlaces(found, parents, &inner);
  ASSERT_EQ(gpus.size(), 1u + 8u + 8u + 1u);
  for (size_t i = 0; i < gpus.size(); ++i) EXPECT_EQ(gpus[i].index, static_cast<int>(i));
  EXPECT_FALSE(gpus[0].vacant);
  EXPECT_EQ(gpus[1 + 0].mig_profile, "1g.10gb");
  EXPECT_EQ(gpus[1 + 4].mig_profile, "3g.40gb");
  EXPECT_EQ(gpus[1 + 4].uuid, "MIG-1-4");
  for (int k : {1, 2, 3, 5, 6, 7}) {
    EXPECT_TRUE(gpus[1 + k].vacant) << k;
    EXPECT_EQ(gpus[1 + k].physical, 1);
    EXPECT_EQ(gpus[1 + k].mig_start, k);
    EXPECT_TRUE(gpus[1 + k].mig_profile.empty());
  }
  for (int k = 0; k < 8; ++k) EXPECT_TRUE(gpus[9 + k].vacant) << k;
  EXPECT_EQ(gpus[17].physical, 3);
  EXPECT_EQ(inner,
            (std::vector<int>{0, 2, -1, -1, -1, 1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 3}));
  // A vacant place is not a GPU anyone counts.
  NodeInfo node{.name = "n", .gpus = gpus};
  auto counted = CountGpuModels({&node});
  EXPECT_EQ(counted["A100-80GB"].total, 2);
  EXPECT_EQ(counted["A100-80GB-MIG-1g.10gb"].total, 1);
}

TEST(MigPlaces, SimulatedInstancesChangeWithinTheHardwaresGeometryAndStayingOnesKeepTheirIndex) {
  SimulatedGpuBackend found(*ParseGpuSpec("2xA100-80GB:mig=7g.80gb"), "n1");
  MigPlacesBackend backend(found);
  ASSERT_EQ(backend.MigParents().size(), 2u);
  EXPECT_EQ(backend.MigParents()[1].memory_bytes, 80LL << 30);
  std::vector<Gpu> gpus = backend.Discover();
  ASSERT_EQ(gpus.size(), 16u);
  EXPECT_EQ(gpus[0].mig_profile, "7g.80gb");
  EXPECT_EQ(gpus[8].mig_profile, "7g.80gb");
  EXPECT_TRUE(gpus[1].vacant);

  ASSERT_TRUE(
      backend
          .ChangeMig(0, {{.profile = "7g.80gb", .start = 0}},
                     {{.profile = "3g.40gb", .start = 4}, {.profile = "1g.10gb", .start = 0}})
          .ok());
  std::vector<Gpu> after = backend.Discover();
  ASSERT_EQ(after.size(), 16u);
  EXPECT_EQ(after[0].mig_profile, "1g.10gb");
  EXPECT_EQ(after[4].mig_profile, "3g.40gb");
  EXPECT_EQ(after[4].memory_bytes, 40LL << 30);
  EXPECT_TRUE(after[1].vacant);
  EXPECT_EQ(after[8], gpus[8]);  // the other GPU untouched, its device where it was
  auto slices = backend.MigSlices(0);
  ASSERT_TRUE(slices.has_value());
  EXPECT_EQ(*slices, (std::vector<MigSlice>{{"1g.10gb", 0}, {"3g.40gb", 4}}));

  // A second change: the 3g.40gb stays, with its index and UUID.
  ASSERT_TRUE(backend.ChangeMig(0, {{"1g.10gb", 0}}, {{"2g.20gb", 0}, {"1g.10gb", 2}}).ok());
  std::vector<Gpu> again = backend.Discover();
  EXPECT_EQ(again[4], after[4]);
  EXPECT_EQ(again[0].mig_profile, "2g.20gb");
  EXPECT_EQ(again[2].mig_profile, "1g.10gb");

  // Readings come for every index, vacant places idle; faults reach the instance's device.
  std::vector<bool> busy(16, false);
  busy[4] = true;
  std::vector<GpuSample> samples = backend.Sample(busy);
  ASSERT_EQ(samples.size(), 16u);
  EXPECT_GT(samples[4].utilization_pct, 50);
  EXPECT_EQ(samples[5].utilization_pct, 0);
  EXPECT_EQ(samples[5].index, 5);
  ASSERT_TRUE(backend.Inject(FaultInjection{.gpu = 4, .fault = FaultKind::kLost}).ok());
  EXPECT_FALSE(backend.CheckGpu(4).ok());
  EXPECT_TRUE(backend.CheckGpu(0).ok());
  EXPECT_EQ(backend.Inject(FaultInjection{.gpu = 5, .fault = FaultKind::kLost}).message(),
            "gpu: GPU 5 of this node is a vacant MIG place, not a device");

  // What the hardware cannot hold is refused, naming GPU, profile and slice; nothing changes.
  EXPECT_EQ(backend.ChangeMig(0, {}, {{"3g.40gb", 2}}).message(),
            "GPU 0's 3g.40gb cannot start at memory slice 2 (it may start at 0, 4)");
  EXPECT_EQ(backend.ChangeMig(0, {}, {{"1g.10gb", 4}}).message(),
            "GPU 0's 1g.10gb at memory slice 4: its slices are taken");
  EXPECT_EQ(backend.ChangeMig(0, {{"4g.40gb", 0}}, {}).message(),
            "GPU 0 has no 4g.40gb at memory slice 0");
  EXPECT_EQ(backend.ChangeMig(0, {}, {{"5g.60gb", 0}}).message(),
            "GPU 0 has no MIG profile 5g.60gb");
  EXPECT_EQ(backend.ChangeMig(0, {}, {{"1g.10gb", 3}, {"1g.10gb", 7}}).message(),
            "GPU 0's 1g.10gb cannot start at memory slice 7 (it may start at 0, 1, 2, 3, 4, 5, 6)");
  EXPECT_EQ(*backend.MigSlices(0),
            (std::vector<MigSlice>{{"2g.20gb", 0}, {"1g.10gb", 2}, {"3g.40gb", 4}}));
}

// Any sequence of changes, those the hardware holds and those it refuses: each index stays
// its GPU's place for the instance that starts at that memory slice, an instance not destroyed
// keeps its index and UUID, a refused change changes nothing, and every GPU's instances are a
// layout the hardware holds.
RC_GTEST_PROP(MigPlacesProperty, NoChangeMovesAnInstanceThatStays, ()) {
  SimulatedGpuBackend found(*ParseGpuSpec("2xA100-80GB:mig=7g.80gb"), "n1");
  MigPlacesBackend backend(found);
  std::vector<Gpu> before = backend.Discover();
  const std::vector<std::string> profiles = {"1g.10gb", "1g.20gb", "2g.20gb",
                                             "3g.40gb", "4g.40gb", "7g.80gb"};
  const int steps = *rc::gen::inRange(1, 25);
  for (int step = 0; step < steps; ++step) {
    const int physical = *rc::gen::inRange(0, 2);
    std::vector<MigSlice> destroy;
    const std::vector<MigSlice> now = *backend.MigSlices(physical);
    for (const MigSlice& m : now) {
      if (*rc::gen::arbitrary<bool>()) destroy.push_back(m);
    }
    std::vector<MigSlice> create;
    const int made = *rc::gen::inRange(0, 5);
    for (int k = 0; k < made; ++k)
      create.push_back(MigSlice{.profile = *rc::gen::elementOf(profiles),
                                .start = *rc::gen::inRange(0, kMigMemorySlices)});
    const bool done = backend.ChangeMig(physical, destroy, create).ok();
    const std::vector<Gpu> after = backend.Discover();
    RC_ASSERT(after.size() == 16u);
    for (size_t k = 0; k < after.size(); ++k) {
      const Gpu& g = after[k];
      RC_ASSERT(g.index == static_cast<int>(k));
      RC_ASSERT(g.physical == static_cast<int>(k) / kMigPlaces);
      if (!g.vacant) RC_ASSERT(g.mig_start == static_cast<int>(k) % kMigPlaces);
      const Gpu& was = before[k];
      const bool destroyed =
          done && was.physical == physical &&
          std::find(destroy.begin(), destroy.end(),
                    MigSlice{.profile = was.mig_profile, .start = was.mig_start}) != destroy.end();
      if (!was.vacant && !destroyed) RC_ASSERT(g == was);
      if (!done) RC_ASSERT(g == was);
    }
    for (int p = 0; p < 2; ++p) {
      std::vector<sched::MigInstance> layout;
      for (const Gpu& g : after) {
        if (!g.vacant && g.physical == p)
          layout.push_back(sched::MigInstance{.profile = g.mig_profile, .start = g.mig_start});
      }
      RC_ASSERT(sched::CheckMigLayout(layout, int64_t{80} << 30).ok());
    }
    before = after;
  }
}

TEST(MigPlaces, AGpuNotInMigModeHasNoInstancesToChange) {
  SimulatedGpuBackend found(*ParseGpuSpec("2xH100-80GB"), "n1");
  EXPECT_TRUE(found.MigParents().empty());
  EXPECT_EQ(found.MigSlices(0).error().message(), "GPU 0 is not in MIG mode");
  MigPlacesBackend backend(found);
  std::vector<Gpu> gpus = backend.Discover();
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[1].physical, 1);
}

TEST(MigPlaces, TheRegistrationAndTheOrderCarryItOnTheWire) {
  SimulatedGpuBackend found(*ParseGpuSpec("1xA100-80GB:mig=3g.40gb*2"), "n1");
  MigPlacesBackend backend(found);
  RegisterRequest req;
  req.node.name = "n1";
  req.node.gpus = backend.Discover();
  req.node.mig_gpus = backend.MigParents();
  auto back = codec::DecodeRegister(codec::EncodeRegister(req));
  ASSERT_TRUE(back.has_value()) << back.error().message();
  EXPECT_EQ(back->node.gpus, req.node.gpus);
  EXPECT_EQ(back->node.mig_gpus, req.node.mig_gpus);
  EXPECT_TRUE(back->node.gpus[1].vacant);

  Order o;
  o.seq = 3;
  o.kind = Order::Kind::kMig;
  o.mig = MigOrder{
      .physical = 0, .destroy = {{"3g.40gb", 4}}, .create = {{"1g.10gb", 4}, {"2g.20gb", 6}}};
  auto orders = codec::DecodeOrders(codec::EncodeOrders({o}));
  ASSERT_TRUE(orders.has_value()) << orders.error().message();
  ASSERT_EQ(orders->size(), 1u);
  EXPECT_EQ((*orders)[0].kind, Order::Kind::kMig);
  EXPECT_EQ((*orders)[0].mig, o.mig);

  // Bounds: a start past the GPU's memory slices, a vacant place that is no MIG GPU's.
  std::string text = codec::EncodeOrders({o});
  text.replace(text.find("\"start\":6"), 9, "\"start\":8");
  EXPECT_NE(codec::DecodeOrders(text).error().message().find("start"), std::string::npos);
  req.node.gpus[1].physical = -1;
  EXPECT_NE(codec::DecodeRegister(codec::EncodeRegister(req)).error().message().find("vacant"),
            std::string::npos);
}

}  // namespace
}  // namespace baton::agent
