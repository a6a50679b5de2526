// The NVML backend, driven through the NVML test double (tests/nvml_double/): a shared library
// with NVML's C functions and scripted answers, loaded through the backend's own dlopen path.
#include "agent/nvml_backend.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "agent/mig_places.h"
#include "core/node.h"

namespace baton::agent {
namespace {

namespace fs = std::filesystem;

// A temporary machine: the double's script; where the GPUs sit comes from an hwloc export of a
// real server (tests/data/topologies).
class Machine {
 public:
  Machine() {
    char tmpl[] = "/tmp/baton-nvml-XXXXXX";
    dir_ = mkdtemp(tmpl);
    script_ = dir_ + "/nvml.script";
    setenv("BATON_NVML_DOUBLE_SCRIPT", script_.c_str(), 1);
  }
  ~Machine() {
    unsetenv("BATON_NVML_DOUBLE_SCRIPT");
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  void Script(const std::string& text) {
    std::ofstream(script_, std::ios::trunc) << text;
    // The double re-reads a script whose size or time changed; make sure the time does.
    fs::last_write_time(script_, fs::last_write_time(script_) + std::chrono::seconds(++edits_));
  }
  // The NVIDIA DGX-2's topology by default: GPUs at 0000:34, 36 (one PLX switch), 39, 3b (the
  // next), ... on NUMA node 0 for the first eight.
  Result<std::unique_ptr<NvmlGpuBackend>> Open(const std::string& xml = "nvidiaDGX2.xml") {
    return NvmlGpuBackend::Open(NvmlOptions{
        .library = BATON_NVML_DOUBLE,
        .topology_xml = std::string(BATON_SOURCE_DIR) + "/tests/data/topologies/" + xml});
  }

 private:
  std::string dir_, script_;
  int edits_ = 0;
};

// The DGX-2's GPU bus numbers, in order.
constexpr int kDgx2Bus[] = {0x34, 0x36, 0x39, 0x3b, 0x57, 0x59, 0x5c, 0x5e, 0xb7};

std::string Gpu(int i, const std::string& extra) {
  char bus[32];
  std::snprintf(bus, sizeof bus, "00000000:%02X:00.0", kDgx2Bus[i]);
  return "gpu uuid=GPU-" + std::to_string(1000 + i) +
         " name=\"NVIDIA H100 80GB HBM3\" memory=85520809984 used=" +
         std::to_string((i + 1) * (int64_t{1} << 30)) + " bus=" + bus +
         " util=" + std::to_string(10 * i) + " memutil=5 temp=" + std::to_string(40 + i) +
         " power_mw=" + std::to_string(100'000 + i * 1000) + " ecc=0 " + extra + "\n";
}

TEST(NvmlModel, NamesFromNvmlBecomeBatonTypes) {
  const int64_t gib = int64_t{1} << 30;
  EXPECT_EQ(ModelFromNvmlName("NVIDIA H100 80GB HBM3", 79 * gib), "H100-80GB");
  EXPECT_EQ(ModelFromNvmlName("NVIDIA A100-SXM4-80GB", 79 * gib), "A100-80GB");
  EXPECT_EQ(ModelFromNvmlName("NVIDIA A100-PCIE-40GB", 39 * gib), "A100-40GB");
  EXPECT_EQ(ModelFromNvmlName("Tesla V100-SXM2-32GB", 31 * gib + gib / 2), "V100-32GB");
  EXPECT_EQ(ModelFromNvmlName("NVIDIA L40S", 45 * gib), "L40S-48GB");  // no size in the name
  EXPECT_EQ(ModelFromNvmlName("Tesla T4", 15 * gib), "T4-16GB");
  EXPECT_EQ(ModelFromNvmlName("NVIDIA A10", 22 * gib + gib / 2), "A10-24GB");
  EXPECT_EQ(ModelFromNvmlName("NVIDIA GeForce RTX 4090", 23 * gib + gib / 2), "RTX4090-24GB");
  EXPECT_EQ(ModelFromNvmlName("", 0), "GPU");
}

TEST(NvmlBackend, DiscoversGpusTheirLinksSwitchesAndNumaNodes) {
  Machine m;
  // Two NVLink pairs (0-1, 2-3) on the DGX-2's first four GPUs, plus its ninth (the second
  // socket's first): two PLX switches for the four, NUMA nodes 0 and 1.
  m.Script("driver version=550.54.15\n" + Gpu(0, "nvlink=1") + Gpu(1, "nvlink=0") +
           Gpu(2, "nvlink=3") + Gpu(3, "nvlink=2") + Gpu(8, ""));
  auto b = m.Open();
  ASSERT_TRUE(b.has_value()) << b.error().message();
  EXPECT_EQ((*b)->kind(), GpuBackendKind::kNvml);
  EXPECT_EQ((*b)->driver(), "550.54.15");
  std::vector<baton::Gpu> gpus = (*b)->Discover();
  ASSERT_EQ(gpus.size(), 5u);
  EXPECT_EQ(gpus[4].numa_node, 1);
  EXPECT_EQ(gpus[4].pcie_switch, 2);
  EXPECT_EQ(gpus[4].island, 2);  // no NVLink of its own
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(gpus[i].index, i);
    EXPECT_EQ(gpus[i].uuid, "GPU-" + std::to_string(1000 + i));
    EXPECT_EQ(gpus[i].model, "H100-80GB");
    EXPECT_EQ(gpus[i].memory_bytes, 85520809984);
    EXPECT_EQ(gpus[i].island, i / 2);
    EXPECT_EQ(gpus[i].pcie_switch, i / 2);
    EXPECT_EQ(gpus[i].numa_node, 0);  // the DGX-2's first socket
    EXPECT_TRUE(gpus[i].mig_profile.empty());
  }
  EXPECT_EQ((*b)->topology(), GpuTopology::kNvlink);
}

TEST(NvmlBackend, WithoutNvmlLinksHwlocsBandwidthMatrixGivesTheIslands) {
  Machine m;
  // The POWER8's four P100s, NVLinked in pairs by hwloc's matrix; NVML reports no link.
  m.Script(
      "gpu uuid=GPU-p0 name=\"Tesla P100-SXM2-16GB\" bus=00000002:01:00.0\n"
      "gpu uuid=GPU-p1 name=\"Tesla P100-SXM2-16GB\" bus=00000003:01:00.0\n"
      "gpu uuid=GPU-p2 name=\"Tesla P100-SXM2-16GB\" bus=0000000A:01:00.0\n"
      "gpu uuid=GPU-p3 name=\"Tesla P100-SXM2-16GB\" bus=0000000B:01:00.0\n");
  auto b = m.Open("power8gpudistances.xml");
  ASSERT_TRUE(b.has_value()) << b.error().message();
  auto gpus = (*b)->Discover();
  ASSERT_EQ(gpus.size(), 4u);
  EXPECT_EQ(gpus[0].island, gpus[1].island);
  EXPECT_EQ(gpus[2].island, gpus[3].island);
  EXPECT_NE(gpus[0].island, gpus[2].island);
  EXPECT_EQ(gpus[0].numa_node, 0);
  EXPECT_EQ(gpus[2].numa_node, 1);
  EXPECT_EQ(gpus[0].model, "P100-16GB");
  EXPECT_EQ((*b)->topology(), GpuTopology::kNvlink);
}

TEST(NvmlBackend, GpusLinkedThroughNvSwitchesFormOneIsland) {
  Machine m;
  std::string script;
  // Every GPU's links lead to NVSwitches: bus ids that are no GPU's.
  for (int i = 0; i < 4; ++i) script += Gpu(i, "nvlink=switch");
  m.Script(script);
  auto b = m.Open();
  ASSERT_TRUE(b.has_value()) << b.error().message();
  auto gpus = (*b)->Discover();
  ASSERT_EQ(gpus.size(), 4u);
  for (const auto& g : gpus) EXPECT_EQ(g.island, 0);
  EXPECT_EQ((*b)->topology(), GpuTopology::kNvswitch);
}

TEST(NvmlBackend, SamplesGaugesAndSeesAGpuFallOffTheBus) {
  Machine m;
  std::string gpus = Gpu(0, "") + Gpu(1, "") + Gpu(2, "ecc=3");
  m.Script(gpus);
  auto b = m.Open();
  ASSERT_TRUE(b.has_value()) << b.error().message();
  ASSERT_EQ((*b)->Discover().size(), 3u);
  auto s = (*b)->Sample({false, false, false});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[1].utilization_pct, 10);
  EXPECT_EQ(s[1].memory_used_bytes, 2 * (int64_t{1} << 30));
  EXPECT_EQ(s[1].temperature_c, 41);
  EXPECT_EQ(s[1].power_w, 101);
  EXPECT_EQ(s[2].ecc_uncorrected, 3);
  for (const auto& x : s) EXPECT_FALSE(x.lost);
  // GPU 2 stops answering.
  m.Script(gpus + "fail function=* gpu=2 code=15\n");
  s = (*b)->Sample({false, false, false});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_FALSE(s[0].lost);
  EXPECT_FALSE(s[1].lost);
  EXPECT_TRUE(s[2].lost);
  EXPECT_EQ(s[0].temperature_c, 40);  // the others keep working
}

TEST(NvmlBackend, XidsArriveOnceForTheirGpu) {
  Machine m;
  std::string gpus = Gpu(0, "") + Gpu(1, "");
  m.Script(gpus);
  auto b = m.Open();
  ASSERT_TRUE(b.has_value()) << b.error().message();
  ASSERT_EQ((*b)->Discover().size(), 2u);
  EXPECT_TRUE((*b)->PollXids().empty());
  m.Script(gpus + "xid gpu=1 xid=79\n");
  auto x = (*b)->PollXids();
  ASSERT_EQ(x.size(), 1u);
  EXPECT_EQ(x[0].gpu, 1);
  EXPECT_EQ(x[0].xid, 79);
  EXPECT_TRUE((*b)->PollXids().empty());  // delivered once
  m.Script(gpus + "xid gpu=1 xid=79\nxid gpu=0 xid=48\n");
  x = (*b)->PollXids();
  ASSERT_EQ(x.size(), 1u);
  EXPECT_EQ(x[0].gpu, 0);
  EXPECT_EQ(x[0].xid, 48);
}

TEST(NvmlBackend, TheHealthCheckFailsWhileMemoryRepairsWaitForAResetOrTheGpuIsGone) {
  Machine m;
  std::string gpus =
      Gpu(0, "") + Gpu(1, "pages_pending=1") + Gpu(2, "remap_pending=1") + Gpu(3, "remap_failed=1");
  m.Script(gpus);
  auto b = m.Open();
  ASSERT_TRUE(b.has_value()) << b.error().message();
  ASSERT_EQ((*b)->Discover().size(), 4u);
  EXPECT_TRUE((*b)->CheckGpu(0).ok());
  EXPECT_EQ((*b)->CheckGpu(1).message(), "retired memory pages wait for a GPU reset");
  EXPECT_EQ((*b)->CheckGpu(2).message(), "remapped memory rows wait for a GPU reset");
  EXPECT_EQ((*b)->CheckGpu(3).message(),
            "a memory row could not be remapped: the GPU needs service");
  // GPU 0 falls off the bus; a driver without the memory queries says nothing of them.
  m.Script(gpus +
           "fail function=* gpu=0 code=15\nfail function=nvmlDeviceGetRemappedRows code=3\n");
  EXPECT_FALSE((*b)->CheckGpu(0).ok());
  EXPECT_EQ((*b)->CheckGpu(0).message(), "the GPU does not answer: GPU is lost");
  EXPECT_TRUE((*b)->CheckGpu(2).ok());
}

TEST(NvmlBackend, MigInstancesAreTheDevices) {
  Machine m;
  m.Script(
      "gpu uuid=GPU-a name=\"NVIDIA A100-SXM4-80GB\" memory=85899345920 used=0 "
      "bus=00000000:18:00.0 mig=1\n"
      "mig parent=0 uuid=MIG-1 name=\"NVIDIA A100-SXM4-80GB MIG 3g.40gb\" memory=42949672960\n"
      "mig parent=0 uuid=MIG-2 name=\"NVIDIA A100-SXM4-80GB MIG 1g.10gb\" memory=10737418240\n" +
      Gpu(1, ""));
  auto b = m.Open();
  ASSERT_TRUE(b.has_value()) << b.error().message();
  auto gpus = (*b)->Discover();
  ASSERT_EQ(gpus.size(), 3u);
  EXPECT_EQ(gpus[0].uuid, "MIG-1");
  EXPECT_EQ(gpus[0].mig_profile, "3g.40gb");
  EXPECT_EQ(gpus[0].model, MigModel("A100-80GB", "3g.40gb"));
  EXPECT_EQ(gpus[0].memory_bytes, int64_t{40} << 30);
  EXPECT_EQ(gpus[0].physical, 0);
  EXPECT_EQ(gpus[0].mig_start, 0);  // its GPU instance's placement, as NVML says
  EXPECT_EQ(gpus[1].uuid, "MIG-2");
  EXPECT_EQ(gpus[1].physical, 0);
  EXPECT_EQ(gpus[1].mig_start, 4);
  EXPECT_EQ(gpus[2].mig_start, -1);  // a whole GPU
  EXPECT_EQ(gpus[2].uuid, "GPU-1001");
  EXPECT_TRUE(gpus[2].mig_profile.empty());
  EXPECT_EQ(gpus[2].index, 2);
  EXPECT_EQ(gpus[2].physical, 1);  // its CUDA ordinal, which the MIG GPU before it shifts
}

// An H100 in MIG mode with two 3g.40gb instances, as `nvidia-smi mig -cgi 9,9 -C` leaves it.
const std::string kH100Mig =
    "gpu uuid=GPU-h name=\"NVIDIA H100 80GB HBM3\" memory=85899345920 bus=00000000:18:00.0 "
    "mig=1\n"
    "mig parent=0 uuid=MIG-a name=\"NVIDIA H100 80GB HBM3 MIG 3g.40gb\" memory=42412802048\n"
    "mig parent=0 uuid=MIG-b name=\"NVIDIA H100 80GB HBM3 MIG 3g.40gb\" memory=42412802048\n";

std::vector<MigSlice> Slices(std::initializer_list<std::pair<const char*, int>> list) {
  std::vector<MigSlice> out;
  for (auto [profile, start] : list) out.push_back(MigSlice{.profile = profile, .start = start});
  return out;
}

TEST(NvmlBackend, MigInstancesAreDestroyedAndCreatedThroughNvml) {
  Machine m;
  m.Script(kH100Mig);
  auto b = m.Open();
  ASSERT_TRUE(b.has_value()) << b.error().message();
  auto now = (*b)->MigSlices(0);
  ASSERT_TRUE(now.has_value()) << now.error().message();
  EXPECT_EQ(*now, Slices({{"3g.40gb", 0}, {"3g.40gb", 4}}));

  // The second half becomes a 2g.20gb and a 1g.10gb.
  ASSERT_TRUE(
      (*b)->ChangeMig(0, Slices({{"3g.40gb", 4}}), Slices({{"2g.20gb", 4}, {"1g.10gb", 6}})).ok());
  now = (*b)->MigSlices(0);
  ASSERT_TRUE(now.has_value()) << now.error().message();
  EXPECT_EQ(*now, Slices({{"3g.40gb", 0}, {"2g.20gb", 4}, {"1g.10gb", 6}}));
  // ... and they are the GPU's devices now, with their profiles' memory.
  auto gpus = (*b)->Discover();
  ASSERT_EQ(gpus.size(), 3u);
  EXPECT_EQ(gpus[0].uuid, "MIG-a");
  EXPECT_EQ(gpus[1].mig_profile, "2g.20gb");
  EXPECT_EQ(gpus[1].model, MigModel("H100-80GB", "2g.20gb"));
  EXPECT_EQ(gpus[1].memory_bytes, int64_t{20096} << 20);
  EXPECT_EQ(gpus[2].mig_profile, "1g.10gb");
  EXPECT_EQ(gpus[2].physical, 0);
  EXPECT_EQ(gpus[1].mig_start, 4);
  EXPECT_EQ(gpus[2].mig_start, 6);
  EXPECT_NE(gpus[1].uuid, gpus[2].uuid);

  // All of it back into one 7g.80gb.
  ASSERT_TRUE((*b)->ChangeMig(0, Slices({{"3g.40gb", 0}, {"2g.20gb", 4}, {"1g.10gb", 6}}),
                              Slices({{"7g.80gb", 0}}))
                  .ok());
  EXPECT_EQ(*(*b)->MigSlices(0), Slices({{"7g.80gb", 0}}));
}

TEST(NvmlBackend, AnAgentThatRePlansMigKeepsEachInstancesIndexThroughAChange) {
  Machine m;
  // GPU 0 in MIG mode with no instance at all, GPU 1 whole, GPU 2 an H100 in MIG mode.
  m.Script(
      "gpu uuid=GPU-a name=\"NVIDIA A100-SXM4-80GB\" memory=85899345920 bus=00000000:18:00.0 "
      "mig=1\n" +
      Gpu(1, "") +
      "gpu uuid=GPU-h name=\"NVIDIA H100 80GB HBM3\" memory=85899345920 "
      "bus=00000000:19:00.0 mig=1\n"
      "mig parent=2 uuid=MIG-a name=\"NVIDIA H100 80GB HBM3 MIG 3g.40gb\" "
      "memory=42412802048\n"
      "mig parent=2 uuid=MIG-b name=\"NVIDIA H100 80GB HBM3 MIG 3g.40gb\" "
      "memory=42412802048\n");
  auto b = m.Open();
  ASSERT_TRUE(b.has_value()) << b.error().message();
  // A GPU in MIG mode runs work only in its instances: with none it offers no device.
  ASSERT_EQ((*b)->Discover().size(), 3u);
  std::vector<MigParent> parents = (*b)->MigParents();
  ASSERT_EQ(parents.size(), 2u);
  EXPECT_EQ(parents[0].physical, 0);
  EXPECT_EQ(parents[0].model, "A100-80GB");
  EXPECT_EQ(parents[1].physical, 2);

  MigPlacesBackend places(**b);
  std::vector<baton::Gpu> gpus = places.Discover();
  ASSERT_EQ(gpus.size(), 8u + 1u + 8u);
  for (int k = 0; k < 8; ++k) EXPECT_TRUE(gpus[k].vacant) << k;
  EXPECT_EQ(gpus[8].uuid, "GPU-1001");
  EXPECT_EQ(gpus[9 + 0].uuid, "MIG-a");
  EXPECT_EQ(gpus[9 + 4].uuid, "MIG-b");

  // The A100 gets a 4g.40gb and the H100's second half two instances: MIG-a stays at 9.
  ASSERT_TRUE(places.ChangeMig(0, {}, Slices({{"4g.40gb", 0}})).ok());
  ASSERT_TRUE(
      places.ChangeMig(2, Slices({{"3g.40gb", 4}}), Slices({{"2g.20gb", 4}, {"1g.10gb", 6}})).ok());
  std::vector<baton::Gpu> after = places.Discover();
  ASSERT_EQ(after.size(), gpus.size());
  EXPECT_EQ(after[0].mig_profile, "4g.40gb");
  EXPECT_FALSE(after[0].vacant);
  EXPECT_EQ(after[8], gpus[8]);
  EXPECT_EQ(after[9], gpus[9]);
  EXPECT_EQ(after[9 + 4].mig_profile, "2g.20gb");
  EXPECT_EQ(after[9 + 6].mig_profile, "1g.10gb");
  EXPECT_TRUE(after[9 + 5].vacant);
  // Readings and health checks reach each instance's own device.
  std::vector<GpuSample> samples = places.Sample(std::vector<bool>(after.size(), false));
  ASSERT_EQ(samples.size(), after.size());
  EXPECT_EQ(samples[9 + 6].index, 15);
  EXPECT_TRUE(places.CheckGpu(9 + 6).ok());
}

TEST(NvmlBackend, AMigChangeTheHardwareRefusesSaysWhy) {
  Machine m;
  m.Script(kH100Mig);
  auto b = m.Open();
  ASSERT_TRUE(b.has_value()) << b.error().message();
  auto refused = [&](const std::vector<MigSlice>& destroy, const std::vector<MigSlice>& create) {
    Status st = (*b)->ChangeMig(0, destroy, create);
    EXPECT_FALSE(st.ok());
    return st.message();
  };
  // Slices another instance holds; a start the profile may not have; a profile it lacks; an
  // instance that is not there.
  EXPECT_NE(refused({}, Slices({{"2g.20gb", 4}}))
                .find("GPU 0's 2g.20gb at memory slice 4: its "
                      "slices are taken"),
            std::string::npos);
  EXPECT_NE(refused({}, Slices({{"3g.40gb", 2}}))
                .find("GPU 0's 3g.40gb cannot start at memory slice 2 (it may start at 0, 4)"),
            std::string::npos);
  EXPECT_NE(refused({}, Slices({{"5g.60gb", 0}})).find("GPU 0 has no MIG profile 5g.60gb"),
            std::string::npos);
  EXPECT_NE(refused(Slices({{"1g.10gb", 3}}), {}).find("no such instance"), std::string::npos);
  // Nothing was changed by any of them.
  EXPECT_EQ(*(*b)->MigSlices(0), Slices({{"3g.40gb", 0}, {"3g.40gb", 4}}));

  // A GPU not in MIG mode.
  m.Script("gpu uuid=GPU-h name=\"NVIDIA H100 80GB HBM3\" memory=85899345920\n");
  auto whole = m.Open();
  ASSERT_TRUE(whole.has_value());
  auto none = (*whole)->MigSlices(0);
  ASSERT_FALSE(none.has_value());
  EXPECT_EQ(none.error().message(), "GPU 0 is not in MIG mode");
}

TEST(NvmlBackend, AnInstanceInUseIsNotDestroyedAndAFailedCreateLeavesNoHalfInstance) {
  Machine m;
  m.Script(
      "gpu uuid=GPU-a name=\"NVIDIA A100-SXM4-80GB\" memory=85899345920 mig=1\n"
      "mig parent=0 uuid=MIG-a name=\"NVIDIA A100-SXM4-80GB MIG 4g.40gb\" memory=42144366592 "
      "busy=1\n"
      "fail function=nvmlGpuInstanceCreateComputeInstance gpu=0 code=999\n");
  auto b = m.Open();
  ASSERT_TRUE(b.has_value()) << b.error().message();
  Status busy = (*b)->ChangeMig(0, Slices({{"4g.40gb", 0}}), {});
  EXPECT_EQ(busy.message(), "GPU 0's 4g.40gb at memory slice 0 is in use: a process runs on it");
  Status failed = (*b)->ChangeMig(0, {}, Slices({{"3g.40gb", 4}}));
  EXPECT_NE(failed.message().find("GPU 0's 3g.40gb at memory slice 4: "
                                  "nvmlGpuInstanceCreateComputeInstance: "),
            std::string::npos)
      << failed.message();
  // The GPU instance made before its compute instance failed is gone again.
  EXPECT_EQ(*(*b)->MigSlices(0), Slices({{"4g.40gb", 0}}));
  EXPECT_EQ((*b)->Discover().size(), 1u);
}

TEST(NvmlBackend, ErrorsSayWhatFailed) {
  auto missing = NvmlGpuBackend::Open(NvmlOptions{.library = "/nonexistent/libnvidia-ml.so.1"});
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message().find("cannot load /nonexistent/libnvidia-ml.so.1"),
            std::string::npos);
  Machine m;
  m.Script("init code=9\n");
  auto no_driver = m.Open();
  ASSERT_FALSE(no_driver.has_value());
  EXPECT_NE(no_driver.error().message().find("nvmlInit: "), std::string::npos)
      << no_driver.error().message();
}

}  // namespace
}  // namespace baton::agent
