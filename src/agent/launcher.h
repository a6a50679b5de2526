// What a launch order becomes on this node before the job starts: the job's directory made,
// and its process spec (argv; environment; the user it runs as, who gets its directory; its
// working directory and code snapshot; its Python environment or container image; a batch
// script's host or step server; the CPUs and memory of its GPUs' NUMA nodes; its cgroup), or
// why it cannot start here. The agent starts the spec through its Executor and records the
// job (agent_launch.cc); how the job runs and ends is the agent's.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/cgroup.h"
#include "agent/env.h"
#include "agent/executor.h"
#include "agent/host_topology.h"
#include "core/log.h"
#include "core/node.h"
#include "core/protocol.h"

namespace baton::agent {

struct AgentOptions;

// The job's directory under the agent's data directory: DATA/jobs/ID.
inline std::string JobDirOf(const std::string& data_dir, JobId id) {
  return data_dir + "/jobs/" + id.ToString();
}

// The job's $BATON_PREEMPT_DEADLINE: DATA/deadlines/ID.ATTEMPT, written by the agent when it
// stops the attempt (agent_reclaim.cc).
inline std::string DeadlineFileOf(const std::string& data_dir, JobId id, int attempt) {
  return data_dir + "/deadlines/" + id.ToString() + "." + std::to_string(attempt);
}

// Why a launch cannot start here: the exit code it is reported with (126: its user may not
// run it here, as a shell says of a program it may not execute; 127: anything else) and why.
struct LaunchRefusal {
  int exit_code = 127;
  std::string message;
};

class Launcher {
 public:
  struct Deps {
    const AgentOptions& options;
    Env& env;
    CgroupManager& cgroups;        // the agent's, as its start detected them
    const std::vector<Gpu>& gpus;  // the node's, as its start found them
    // Each GPU's PCI address, by index (GpuBackend::PciAddresses): where the kernel's dmem
    // controller holds a fractional job's GPU memory.
    const std::vector<std::string>& gpu_addresses;
    GpuBackendKind backend;  // simulated GPUs are not passed into containers
    bool as_root;            // jobs run as their users
    // Code snapshot `id`'s archive, fetched from the controller.
    std::function<Result<std::string>(const std::string& id)> fetch_code;
  };
  explicit Launcher(Deps deps);

  // The job's directory and its process spec for `order`, its cgroup named `cgroup`; the
  // agent adds the paths of its run files (status, pid) and session.
  tl::expected<ProcessSpec, LaunchRefusal> Prepare(const LaunchOrder& order,
                                                   const std::string& cgroup);
  // The job's environment: the agent's basics, the job's own, and Baton's variables (and
  // Slurm's, for a job with slurm_env).
  std::map<std::string, std::string> Environment(const LaunchOrder& order) const;
  // The container runtimes on the agent's PATH (NodeInfo::runtimes).
  static std::vector<std::string> FindRuntimes();

 private:
  std::string JobDir(JobId id) const;
  LogContext Context(JobId job = {}) const;
  // Binds the job to the CPUs (and, on one node, the memory) of its GPUs' NUMA nodes.
  void BindToGpuNuma(const LaunchOrder& order, ProcessSpec* spec);
  // As root: the job runs as its user, who gets its directory. An error says why it cannot.
  Result<UnixUser> RunAsUser(const LaunchOrder& order, ProcessSpec* spec);
  Status Reachable(const std::string& job_dir, const std::string& name, const UnixUser& user);
  void ShareCheckpoints(const LaunchOrder& order, const UnixUser& user);
  // Puts the job in a cgroup of its own (`name`) with its limits, where the host allows it.
  void JoinCgroup(const LaunchOrder& order, const std::string& name, ProcessSpec* spec);
  // A batch script's first node runs it through baton-slurm's batch host, its other nodes the
  // step server; jobs with slurm_env get srun and scontrol.
  Status PlaceBatch(const LaunchOrder& order, ProcessSpec* spec);
  // The launch's working directory and Python environment or image, or why it cannot run here.
  Status PlaceLaunch(const LaunchOrder& order, const std::optional<UnixUser>& user,
                     ProcessSpec* spec);
  // The job's copy of its code snapshot (its working directory), or why there is none.
  Result<std::string> PrepareCode(const LaunchOrder& order, const std::optional<UnixUser>& user);
  // Puts the launch in the job's Python environment (venv or conda), or says why it cannot
  // be here.
  Status InPythonEnvironment(const LaunchOrder& order, ProcessSpec* spec);
  // The dmem region that holds a fractional job's GPU memory (cgroup v2's dmem controller, where
  // the GPU's driver registered one named by its PCI address), or "".
  std::string DmemRegionOf(const LaunchOrder& order) const;
  // The launch's command through the job's container runtime, or why it has none
  // (launcher_image.cc).
  Status InImage(const LaunchOrder& order, ProcessSpec* spec);

  const AgentOptions& options_;
  Env& env_;
  CgroupManager& cgroups_;
  const std::vector<Gpu>& gpus_;
  const std::vector<std::string>& gpu_addresses_;
  GpuBackendKind backend_;
  bool as_root_;
  std::function<Result<std::string>(const std::string& id)> fetch_code_;
  std::set<int> numa_warned_;  // GPU NUMA nodes this host lacks, told once
};

}  // namespace baton::agent
