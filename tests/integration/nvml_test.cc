// `baton up --gpus nvml` with the NVML test double in place of libnvidia-ml: the real binary
// loads it through the same dlopen path as on a GPU server, registers the GPUs it reports,
// and runs jobs on them.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "harness.h"

namespace baton::testing {
namespace {

TEST(Nvml, UpRegistersTheGpusNvmlReportsAndRunsJobsOnThem) {
  TempDir dir;
  std::string script = dir.path() + "/nvml.script";
  std::ofstream(script)
      << "driver version=550.54.15\n"
         "gpu uuid=GPU-0aa name=\"NVIDIA H100 80GB HBM3\" memory=85520809984 used=0 "
         "bus=00000000:18:00.0 util=3 temp=33 power_mw=70000 ecc=0 nvlink=1\n"
         "gpu uuid=GPU-0bb name=\"NVIDIA H100 80GB HBM3\" memory=85520809984 used=0 "
         "bus=00000000:2A:00.0 util=0 temp=31 power_mw=69000 ecc=2 nvlink=0\n";
  // The child inherits these (the harness keeps a BATON_NVML_LIBRARY it finds set).
  setenv("BATON_NVML_DOUBLE_SCRIPT", script.c_str(), 1);
  setenv("BATON_NVML_LIBRARY", BATON_NVML_DOUBLE, 1);
  BatonProcess baton(dir.path() + "/server", {"--gpus", "nvml"});
  unsetenv("BATON_NVML_LIBRARY");
  unsetenv("BATON_NVML_DOUBLE_SCRIPT");

  // The local agent registers once the server serves.
  CliResult nodes = RunCli(baton, {"nodes", "--json"});
  for (int i = 0; i < 100 && nodes.out.find("GPU-0aa") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    nodes = RunCli(baton, {"nodes", "--json"});
  }
  ASSERT_EQ(nodes.exit_code, 0) << nodes.out;
  EXPECT_NE(nodes.out.find("\"gpu_backend\":\"nvml\""), std::string::npos) << nodes.out;
  EXPECT_NE(nodes.out.find("GPU-0aa"), std::string::npos) << nodes.out;
  EXPECT_NE(nodes.out.find("GPU-0bb"), std::string::npos) << nodes.out;
  EXPECT_NE(nodes.out.find("\"model\":\"H100-80GB\""), std::string::npos) << nodes.out;

  CliResult submitted =
      RunCli(baton, {"submit", "-g", "2", "--", "sh", "-c", "echo gpus=$CUDA_VISIBLE_DEVICES"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out;
  std::string id = submitted.out.substr(0, submitted.out.find('\n'));
  CliResult waited = RunCli(baton, {"wait", id, "--timeout", "30s"});
  ASSERT_EQ(waited.exit_code, 0) << waited.out;
  std::string log;
  for (int i = 0; i < 100 && log.find("gpus=") == std::string::npos; ++i) {
    log = RunCli(baton, {"logs", id}).out;
    if (log.find("gpus=") == std::string::npos)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_NE(log.find("gpus=0,1\n"), std::string::npos) << log;

  // The driver reports XID 48 (double-bit ECC) on the second GPU: the agent hears it through
  // NVML's event set and the GPU leaves service alone, until its check passes.
  std::ofstream(script, std::ios::app) << "xid gpu=1 xid=48\n";
  bool fenced = Within(std::chrono::seconds(5), [&] {
    std::string out = RunCli(baton, {"nodes", "--json"}).out;
    return out.find("\"health\":\"reset\",\"health_reason\":\"xid 48: double-bit ECC error\"") !=
           std::string::npos;
  });
  EXPECT_TRUE(fenced) << RunCli(baton, {"nodes", "--json"}).out;

  // Without the library, `--gpus nvml` refuses to start and says why.
  TempDir other;
  setenv("BATON_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  CliResult refused =
      RunCli(baton, {"up", "--data", other.path(), "--listen", "127.0.0.1:0", "--gpus", "nvml"});
  unsetenv("BATON_NVML_LIBRARY");
  EXPECT_EQ(refused.exit_code, 1) << refused.out;
  EXPECT_NE(refused.out.find("--gpus nvml: cannot load /nonexistent/libnvidia-ml.so.1"),
            std::string::npos)
      << refused.out;
}

}  // namespace
}  // namespace baton::testing
