// The simulated GPU backend: what a node reports for a SPEC, MIG instances included.
#include <gtest/gtest.h>

#include "agent/simulated_gpu_backend.h"

namespace baton::agent {
namespace {

TEST(SimulatedGpus, TopologiesOfTheMachinesTheyStandFor) {
  // DGX H100: one NVSwitch island, 2 NUMA nodes, 4 PCIe switches.
  auto dgx = SimulatedGpuBackend(*ParseGpuSpec("8xH100-80GB"), "n").Discover();
  ASSERT_EQ(dgx.size(), 8u);
  for (const Gpu& g : dgx) EXPECT_EQ(g.island, 0);
  EXPECT_EQ(dgx[3].numa_node, 0);
  EXPECT_EQ(dgx[4].numa_node, 1);
  EXPECT_EQ(dgx[1].pcie_switch, 0);
  EXPECT_EQ(dgx[2].pcie_switch, 1);
  // DGX-1 V100: hybrid cube-mesh, two fully linked quads.
  auto dgx1 = SimulatedGpuBackend(*ParseGpuSpec("8xV100-32GB"), "n").Discover();
  EXPECT_EQ(dgx1[3].island, 0);
  EXPECT_EQ(dgx1[4].island, 1);
  // 8 x L40S: no NVLink; two PCIe switches per NUMA node.
  auto l40s = SimulatedGpuBackend(*ParseGpuSpec("8xL40S-48GB"), "n").Discover();
  EXPECT_NE(l40s[0].island, l40s[1].island);
  EXPECT_EQ(l40s[0].pcie_switch, l40s[1].pcie_switch);
  EXPECT_NE(l40s[1].pcie_switch, l40s[2].pcie_switch);
  EXPECT_EQ(l40s[2].numa_node, 0);
  EXPECT_EQ(l40s[5].numa_node, 1);
}

TEST(SimulatedGpus, MigModeShowsEachInstanceAsADevice) {
  SimulatedGpuBackend backend(*ParseGpuSpec("2xA100-80GB:mig=3g.40gb+2g.20gb+1g.10gb*2"),
                              "a100-mig");
  std::vector<Gpu> gpus = backend.Discover();
  ASSERT_EQ(gpus.size(), 8u);  // 4 instances on each of 2 GPUs
  EXPECT_EQ(gpus[0].model, "A100-80GB-MIG-3g.40gb");
  EXPECT_EQ(gpus[0].memory_bytes, 40LL << 30);
  EXPECT_EQ(gpus[3].mig_profile, "1g.10gb");
  EXPECT_EQ(gpus[3].memory_bytes, 10LL << 30);
  EXPECT_EQ(gpus[4].physical, 1);
  for (size_t i = 0; i < gpus.size(); ++i) {
    EXPECT_EQ(gpus[i].index, static_cast<int>(i));
    EXPECT_EQ(gpus[i].uuid.rfind("MIG-", 0), 0u) << gpus[i].uuid;
  }
  EXPECT_EQ(gpus[0].island, gpus[3].island);  // one GPU's instances belong together
  EXPECT_NE(gpus[0].island, gpus[4].island);
  EXPECT_EQ(backend.Sample(std::vector<bool>(8, false)).size(), 8u);
  // Stable across restarts of the same node.
  EXPECT_EQ(
      SimulatedGpuBackend(*ParseGpuSpec("2xA100-80GB:mig=3g.40gb+2g.20gb+1g.10gb*2"), "a100-mig")
          .Discover(),
      gpus);
}

}  // namespace
}  // namespace baton::agent
