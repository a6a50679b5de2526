// Topology discovery with hwloc on exports of real machines (tests/data/topologies, from
// hwloc's own test suite): NUMA nodes and their CPUs, where each NVIDIA GPU sits (nearest NUMA
// node, PCIe switch), and NVLink islands from hwloc's bandwidth matrices.
#include "agent/host_topology.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace baton::agent {
namespace {

std::string Xml(const std::string& name) {
  const char* src = std::getenv("BATON_SOURCE_DIR");
  return std::string(src != nullptr ? src : BATON_SOURCE_DIR) + "/tests/data/topologies/" + name;
}

TEST(HostTopology, Dgx2SixteenV100sPairedBehindSwitchesOnTwoNumaNodes) {
  auto t = LoadHostTopology(Xml("nvidiaDGX2.xml"));
  ASSERT_TRUE(t.has_value()) << t.error().message();
  ASSERT_EQ(t->numa.size(), 2u);
  EXPECT_EQ(t->numa[0].memory_bytes, 810234351616);
  ASSERT_EQ(t->gpus.size(), 16u);
  std::map<int, int> per_switch;
  for (size_t i = 0; i < t->gpus.size(); ++i) {
    const HostGpu& g = t->gpus[i];
    SCOPED_TRACE(g.bus_id);
    EXPECT_EQ(g.model, "Tesla V100-SXM3-32GB-H");
    EXPECT_EQ(g.uuid.rfind("GPU-", 0), 0u);
    EXPECT_EQ(g.numa_node, i < 8 ? 0 : 1);              // 8 GPUs on each socket's PCIe tree
    EXPECT_EQ(g.pcie_switch, static_cast<int>(i / 2));  // two GPUs behind each PLX switch
    // NVSwitches join each baseboard's 8 GPUs; hwloc's matrix has no link between the boards.
    EXPECT_EQ(g.island, i < 8 ? 0 : 1);
    ++per_switch[g.pcie_switch];
  }
  for (auto [sw, n] : per_switch) EXPECT_EQ(n, 2) << "switch " << sw;
  const HostGpu* first = t->Gpu("00000000:34:00.0");  // NVML's form finds it too
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->uuid, "GPU-d3977428-7a30-086b-2e20-5c1eeed647c6");
  EXPECT_EQ(t->Gpu("0000:99:00.0"), nullptr);
}

TEST(HostTopology, Power8NvLinkPairsFromTheBandwidthMatrix) {
  auto t = LoadHostTopology(Xml("power8gpudistances.xml"));
  ASSERT_TRUE(t.has_value()) << t.error().message();
  ASSERT_EQ(t->numa.size(), 2u);
  EXPECT_EQ(t->cpus, 16);
  ASSERT_EQ(t->gpus.size(), 4u);
  // GPUs 0-1 and 2-3 are NVLinked (each pair also to its own CPU, which joins nothing).
  EXPECT_EQ(t->gpus[0].island, t->gpus[1].island);
  EXPECT_EQ(t->gpus[2].island, t->gpus[3].island);
  EXPECT_NE(t->gpus[0].island, t->gpus[2].island);
  EXPECT_EQ(t->gpus[0].numa_node, 0);
  EXPECT_EQ(t->gpus[3].numa_node, 1);
  EXPECT_EQ(t->gpus[0].model, "Tesla P100-SXM2-16GB");
}

TEST(HostTopology, AServerWithoutGpuDriversKnowsWhereTheDevicesSitNotWhatTheyAre) {
  auto t = LoadHostTopology(Xml("24em64t-2n6c2t-pci.xml"));
  ASSERT_TRUE(t.has_value()) << t.error().message();
  EXPECT_EQ(t->cpus, 24);
  ASSERT_EQ(t->numa.size(), 2u);
  EXPECT_EQ(t->numa[0].cpus.size(), 12u);
  EXPECT_EQ(t->numa[1].cpus.front(), 1);  // hyperthreads alternate between the sockets
  ASSERT_EQ(t->gpus.size(), 3u);          // three Tesla M2070 without a driver
  for (const auto& g : t->gpus) {
    EXPECT_TRUE(g.model.empty());
    EXPECT_TRUE(g.uuid.empty());
    EXPECT_EQ(g.island, -1);  // no NVLink matrix
  }
  EXPECT_EQ(t->gpus[0].numa_node, 0);
  EXPECT_EQ(t->gpus[1].numa_node, 1);
}

TEST(HostTopology, CpuListOfANumaNodeIsTheCpulistJobsAreBoundTo) {
  auto t = LoadHostTopology(Xml("power8gpudistances.xml"));
  ASSERT_TRUE(t.has_value()) << t.error().message();
  // Two of each POWER8 core's eight hardware threads are online: runs of two.
  EXPECT_EQ(t->CpuListOf({0}), "0-1,8-9,16-17,24-25");
  EXPECT_EQ(t->CpuListOf({1}), "80-81,88-89,96-97,104-105");
  EXPECT_EQ(t->CpuListOf({0, 1}), "0-1,8-9,16-17,24-25,80-81,88-89,96-97,104-105");
  EXPECT_EQ(t->CpuListOf({2}), std::nullopt);
  EXPECT_EQ(t->CpuListOf({0, 2}), std::nullopt);  // not all of them this host's
  EXPECT_EQ(t->CpuListOf({}), std::nullopt);
  ASSERT_NE(t->NumaNode(1), nullptr);
  EXPECT_EQ(t->NumaNode(1)->os_index, 1);
  EXPECT_EQ(t->NumaNode(7), nullptr);
}

TEST(HostTopology, CpuListOfInterleavedHyperthreadsListsEachCpu) {
  auto t = LoadHostTopology(Xml("24em64t-2n6c2t-pci.xml"));
  ASSERT_TRUE(t.has_value()) << t.error().message();
  // The sockets' hyperthreads alternate: node 1 has the odd CPUs.
  EXPECT_EQ(t->CpuListOf({1}), "1,3,5,7,9,11,13,15,17,19,21,23");
  EXPECT_EQ(t->CpuListOf({0, 1}), "0-23");
}

TEST(HostTopology, ABadFileIsNamed) {
  auto t = LoadHostTopology("/nonexistent/topology.xml");
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.error().message().find("/nonexistent/topology.xml"), std::string::npos)
      << t.error().message();
}

TEST(HostTopology, ThisMachineLoads) {
  auto t = LoadHostTopology();
  ASSERT_TRUE(t.has_value()) << t.error().message();
  EXPECT_GE(t->cpus, 1);
  EXPECT_GE(t->numa.size(), 1u);
}

}  // namespace
}  // namespace baton::agent
