// What a launch order becomes on a node before its job starts (agent/launcher.h): the job's
// environment, its process spec, and the refusals with the exit code the job ends with. The
// agent's tests start the specs; these look at them alone, over an in-memory Env.
#include "agent/launcher.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "agent/agent.h"
#include "mem_env.h"

namespace baton::agent {
namespace {

using testing::MemEnv;

struct LauncherTest : ::testing::Test {
  AgentOptions options{.name = "n1", .data_dir = "/data"};
  MemEnv env;
  CgroupManager cgroups;  // none usable: no cgroup is made
  std::vector<Gpu> gpus;
  std::vector<std::string> addresses;  // each GPU's PCI address
  std::vector<std::string> fetched;
  Result<std::string> fetch_answer = std::string("archive bytes");

  Launcher Make(bool as_root = false) {
    return Launcher(Launcher::Deps{.options = options,
                                   .env = env,
                                   .cgroups = cgroups,
                                   .gpus = gpus,
                                   .gpu_addresses = addresses,
                                   .backend = GpuBackendKind::kSimulated,
                                   .as_root = as_root,
                                   .fetch_code = [this](const std::string& id) {
                                     fetched.push_back(id);
                                     return fetch_answer;
                                   }});
  }
  static LaunchOrder Order() {
    LaunchOrder o;
    o.job = JobId{7};
    o.user = "alice";
    o.command = {"python", "train.py"};
    o.nodelist = "n1,n2";
    return o;
  }
};

TEST_F(LauncherTest, TheEnvironmentNamesGpusAsCudaDoesAndTheRendezvousUnlessTheJobSetsIt) {
  gpus = {Gpu{.index = 0, .uuid = "GPU-a", .physical = 3},
          Gpu{.index = 1, .uuid = "MIG-b", .physical = 3, .mig_profile = "1g.10gb"}};
  LaunchOrder o = Order();
  o.gpus = {0, 1};
  o.num_nodes = 2;
  o.master_port = 29507;
  o.env = {{"MASTER_ADDR", "head"}};
  std::map<std::string, std::string> env = Make().Environment(o);
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "3,MIG-b");  // a MIG instance by its UUID
  EXPECT_EQ(env["MASTER_ADDR"], "head");              // the job's own
  EXPECT_EQ(env["MASTER_PORT"], "29507");
  EXPECT_EQ(env["WORLD_SIZE"], "2");
  EXPECT_EQ(env["BATON_JOB_ID"], "7");
  EXPECT_EQ(env["BATON_NODE_NAME"], "n1");
  EXPECT_EQ(env["BATON_CHECKPOINT_DIR"], "/data/jobs/7/checkpoints");
  EXPECT_EQ(env.count("SLURM_JOB_ID"), 0u);
  o.slurm_env = true;
  env = Make().Environment(o);
  EXPECT_EQ(env["SLURM_JOB_ID"], "7");
  EXPECT_TRUE(env["PATH"].starts_with("/data/slurm-bin:")) << env["PATH"];
}

TEST_F(LauncherTest, ASpecRunsTheCommandInTheJobsDirectoryWithItsLog) {
  LaunchOrder o = Order();
  o.shell = true;
  o.command = {"echo hi | tee out"};
  auto spec = Make().Prepare(o, "baton-1-7.0");
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->argv, (std::vector<std::string>{"/bin/sh", "-c", "echo hi | tee out"}));
  EXPECT_EQ(spec->workdir, "/data/jobs/7");
  EXPECT_EQ(spec->log_path, "/data/jobs/7/output.log");
  EXPECT_TRUE(spec->cgroup.empty());  // no usable cgroups here
  EXPECT_TRUE(std::find(spec->env.begin(), spec->env.end(), "BATON_JOB_ID=7") != spec->env.end());
}

TEST_F(LauncherTest, WhatCannotRunHereIsRefusedWithTheCodeItsJobEndsWith) {
  LaunchOrder o = Order();
  o.venv = "/opt/missing";
  auto venv = Make().Prepare(o, "g");
  ASSERT_FALSE(venv);
  EXPECT_EQ(venv.error().exit_code, 127);
  EXPECT_EQ(venv.error().message,
            "node n1: venv /opt/missing: not a Python virtual environment here (no "
            "/opt/missing/bin/python)");
  // Under root, a job of root's runs only where the agent allows it: its user's refusal.
  o = Order();
  o.user = "root";
  auto root = Make(/*as_root=*/true).Prepare(o, "g");
  ASSERT_FALSE(root);
  EXPECT_EQ(root.error().exit_code, 126);
  EXPECT_NE(root.error().message.find("jobs do not run as root on node n1"), std::string::npos)
      << root.error().message;
}

TEST_F(LauncherTest, ACodeSnapshotIsFetchedOnceIntoTheAgentsCacheThenUnpacked) {
  LaunchOrder o = Order();
  o.code = "abcdef0123456789";
  auto spec = Make().Prepare(o, "g");
  // MemEnv runs no tar: the unpacking fails, after the archive was fetched and kept.
  ASSERT_FALSE(spec);
  EXPECT_NE(spec.error().message.find("code snapshot: MemEnv runs no programs (tar)"),
            std::string::npos)
      << spec.error().message;
  EXPECT_EQ(fetched, (std::vector<std::string>{"abcdef0123456789"}));
  EXPECT_EQ(env.ReadFile("/data/code-cache/abcdef0123456789.tar.gz").value_or(""), "archive bytes");
  (void)Make().Prepare(o, "g");
  EXPECT_EQ(fetched.size(), 1u);  // cached: not fetched again
  // A controller that cannot give it: the job cannot start, and says why.
  o.code = "ffff";
  fetch_answer = Err(Unavailable("the controller answered 404 for snapshot ffff"));
  auto missing = Make().Prepare(o, "g");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message,
            "node n1: code snapshot: the controller answered 404 for snapshot ffff");
}

// Where the kernel has cgroup v2's dmem controller and the GPU's driver a region named by its
// PCI address, a fractional job's GPU memory is held there too, and its log says so; a whole
// GPU's job, or a GPU no region names, gets no dmem limit.
TEST_F(LauncherTest, AFractionalJobsGpuMemoryIsHeldByTheDmemControllerWhereThereIsOne) {
  char tmpl[] = "/tmp/baton-dmem-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string root = dir + "/jobs";
  std::filesystem::create_directories(root);
  std::ofstream(root + "/cgroup.controllers") << "memory pids dmem\n";
  std::ofstream(dir + "/dmem.capacity")
      << "drm/0000:18:00.0/vram0 85899345920\ndrm/0000:3b:00.0/vram0 85899345920\n";
  cgroups = CgroupManager::Detect(root);
  ASSERT_TRUE(cgroups.Has("dmem")) << cgroups.describe();
  gpus = {Gpu{.index = 0, .uuid = "GPU-a"}, Gpu{.index = 1, .uuid = "GPU-b"},
          Gpu{.index = 2, .uuid = "GPU-c"}};
  addresses = {"0000:18:00.0", "0000:3b:00.0", "0000:5e:00.0"};
  auto launch = [&](int gpu, int64_t milli, int64_t memory, const std::string& group) {
    LaunchOrder o = Order();
    o.gpus = {gpu};
    o.milli_per_gpu = milli;
    o.gpu_memory_bytes = memory;
    auto spec = Make().Prepare(o, group);
    EXPECT_TRUE(spec) << spec.error().message;
    std::ifstream in(root + "/" + group + "/dmem.max");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  EXPECT_EQ(launch(1, 500, int64_t{10} << 30, "g1"), "drm/0000:3b:00.0/vram0 10737418240");
  auto log = env.ReadRange("/data/jobs/7/output.log", 0, 1 << 20);
  ASSERT_TRUE(log.has_value());
  EXPECT_NE(log->find("baton: the kernel holds this job to 10GiB of GPU 1's memory (cgroup "
                      "dmem.max, drm/0000:3b:00.0/vram0)"),
            std::string::npos)
      << *log;
  EXPECT_EQ(launch(1, 1000, 0, "g2"), "");                // a whole GPU
  EXPECT_EQ(launch(1, 500, 0, "g3"), "");                 // no GPU memory asked
  EXPECT_EQ(launch(2, 500, int64_t{1} << 30, "g4"), "");  // no region for its address
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace baton::agent
