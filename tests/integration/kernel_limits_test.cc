// Limits the kernel enforces, through the real binary and this machine's cgroups (v1 here: the
// memory, pids, cpuset and devices controllers are v1 hierarchies and v2 is mounted without
// controllers; v2 where a host has it): a job past its memory is killed and reported as out of
// memory, a fork bomb stops at its process limit, and a job cannot open another GPU's device
// file. Run as root (the agent needs it to make groups); skipped where the host has no cgroup
// controller the agent can use, saying so.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "agent/cgroup.h"
#include "harness.h"

namespace baton::testing {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Whether this host gives the agent's jobs real cgroups, and why not.
std::string NoCgroups() {
  if (geteuid() != 0) return "needs root: the agent makes the job groups";
  if (!agent::V1CgroupRoots(Slurp("/proc/self/mounts"), Slurp("/proc/self/cgroup")).empty())
    return "";
  auto v2 = agent::DefaultCgroupRoot(Slurp("/proc/self/mounts"), Slurp("/proc/self/cgroup"));
  if (!v2) return v2.error().message();
  std::string mount = v2->substr(0, v2->rfind('/'));
  if (Slurp(mount + "/cgroup.controllers").find("memory") == std::string::npos)
    return "cgroup v2 at " + mount + " has no memory controller and there is no v1 hierarchy";
  return "";
}

#define SKIP_WITHOUT_CGROUPS()                       \
  if (std::string why = NoCgroups(); !why.empty()) { \
    GTEST_SKIP() << why;                             \
  }

TEST(KernelLimits, AJobPastItsMemoryIsKilledAndReportedAsOutOfMemory) {
  SKIP_WITHOUT_CGROUPS();
  TempDir dir;
  BatonProcess baton(dir.path(), {"--gpus", "1xH100-80GB"});
  auto c = baton.Client();
  // 400 MiB written under a limit of 100 MiB (memory and swap alike).
  const std::string allocate =
      R"json(["/usr/bin/python3", "-c", "x = b'x' * (400 << 20); print('allocated', len(x))"])json";
  int64_t id = Submit(*c, R"({"command": )" + allocate + R"(, "resources": {"memory": "100MiB"}})");
  std::string job = WaitForJob(*c, id, 60000);
  EXPECT_EQ(JsonString(job, "state"), "failed") << job;
  EXPECT_NE(job.find("killed by the out-of-memory killer at its memory limit of 100MiB"),
            std::string::npos)
      << job;
  std::string logs = LogsUntil(*c, id, "out-of-memory");
  EXPECT_EQ(logs.find("allocated"), std::string::npos) << logs;
  // The same job under 1 GiB runs to its end: the limit, not the machine, stopped it.
  int64_t roomy =
      Submit(*c, R"({"command": )" + allocate + R"(, "resources": {"memory": "1GiB"}})");
  EXPECT_EQ(JsonString(WaitForJob(*c, roomy, 60000), "state"), "succeeded");
}

TEST(KernelLimits, AForkBombStopsAtItsProcessLimit) {
  SKIP_WITHOUT_CGROUPS();
  TempDir dir;
  BatonProcess baton(dir.path(), {"--gpus", "1xH100-80GB", "--job-pids-max", "40"});
  auto c = baton.Client();
  const std::string bomb =
      R"json(["/usr/bin/python3", "-c", "import os, time\nn = 0\ntry:\n    while n < 1000:\n        if os.fork() == 0:\n            time.sleep(60)\n            os._exit(0)\n        n += 1\nexcept OSError as e:\n    print('stopped after', n, 'forks:', e.strerror, flush=True)\n"])json";
  int64_t id = Submit(*c, R"({"command": )" + bomb + "}");
  std::string logs = LogsUntil(*c, id, "stopped after");
  size_t at = logs.find("stopped after ");
  ASSERT_NE(at, std::string::npos) << logs;
  int forks = std::stoi(logs.substr(at + 14));
  EXPECT_LT(forks, 40) << logs;  // the job itself is one of the 40
  EXPECT_GT(forks, 20) << logs;
  EXPECT_NE(logs.find("Resource temporarily unavailable"), std::string::npos) << logs;
  RunCli(baton, {"cancel", std::to_string(id)});
  WaitForJob(*c, id);
}

// The device files of both GPUs (195:0 and 195:1), made where the job can; opening one with no
// driver behind it fails with ENXIO, one the job may not open or make with EPERM.
const std::string kDeviceProbe =
    R"json(["/usr/bin/python3", "-c", "import os, errno, stat, tempfile\nd = tempfile.mkdtemp()\nfor m in (0, 1):\n    p = os.path.join(d, 'nvidia%d' % m)\n    try:\n        os.mknod(p, stat.S_IFCHR | 0o600, os.makedev(195, m))\n        os.close(os.open(p, os.O_RDWR))\n        print('gpu', m, 'opened', flush=True)\n    except OSError as e:\n        print('gpu', m, errno.errorcode[e.errno], flush=True)\n"])json";

// One GPU of two, and what the probe said of each.
void ExpectOnlyItsOwnGpu(BatonProcess& baton) {
  auto c = baton.Client();
  int64_t id = Submit(*c, R"({"command": )" + kDeviceProbe + R"(, "resources": {"gpus": 1}})");
  std::string job = WaitForJob(*c, id, 30000);
  ASSERT_EQ(JsonString(job, "state"), "succeeded") << job;
  std::string logs = LogsUntil(*c, id, "gpu 1 ");
  int own = job.find(R"("gpus":[1])") != std::string::npos ? 1 : 0;
  EXPECT_NE(logs.find("gpu " + std::to_string(own) + " ENXIO"), std::string::npos)
      << "its own GPU's device file is open to it (no driver here): " << logs << job;
  EXPECT_NE(logs.find("gpu " + std::to_string(1 - own) + " EPERM"), std::string::npos)
      << "the other GPU's device file is not: " << logs << job;
}

TEST(KernelLimits, AJobCannotOpenAnotherGpusDeviceFile) {
  SKIP_WITHOUT_CGROUPS();
  if (agent::V1CgroupRoots(Slurp("/proc/self/mounts"), Slurp("/proc/self/cgroup")).empty())
    GTEST_SKIP() << "a host with cgroup v2 only: the next test is its device isolation";
  TempDir dir;
  BatonProcess baton(dir.path(), {"--gpus", "2xH100-80GB"});
  ExpectOnlyItsOwnGpu(baton);
}

// cgroup v2 has no devices controller: the agent attaches a BPF program to each job's group.
// Here (a hybrid host) the job groups go under the cgroup2 mount through --cgroup-root, which
// needs no controller for device programs.
TEST(KernelLimits, UnderCgroupV2ABpfProgramKeepsAJobFromAnotherGpusDeviceFile) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root: the agent makes the job groups";
  auto v2 = agent::DefaultCgroupRoot(Slurp("/proc/self/mounts"), Slurp("/proc/self/cgroup"));
  if (!v2) GTEST_SKIP() << v2.error().message();
  // Beside the agent's default root, one of this test's own.
  std::string root = v2->substr(0, v2->rfind('/')) + "/baton-test-" + std::to_string(getpid());
  TempDir dir;
  {
    BatonProcess baton(dir.path(), {"--gpus", "2xH100-80GB", "--cgroup-root", root});
    std::string log;
    Within(std::chrono::seconds(10), [&] {
      log = ReadFile(dir.path() + "/baton.out");
      return log.find("job cgroups:") != std::string::npos;
    });
    if (log.find("cannot load a BPF device program") != std::string::npos) {
      rmdir(root.c_str());
      GTEST_SKIP() << "this host refuses BPF device programs: " << log;
    }
    EXPECT_NE(log.find("(devices by a BPF program)"), std::string::npos) << log;
    ExpectOnlyItsOwnGpu(baton);
  }
  EXPECT_EQ(rmdir(root.c_str()), 0)
      << root << ": " << std::strerror(errno) << " (the job groups under it were not all removed)";
}

}  // namespace
}  // namespace baton::testing
