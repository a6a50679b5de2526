// Job cgroups: each job runs in a group of its own, with its memory, CPU time, CPUs and memory
// nodes, and process count limited, and its OOM kills counted. With cgroup v2 the root is the
// agent's own group joined with "baton-jobs" unless the operator names one: cgroup v2 lets a
// group hand controllers to its children only while it holds no processes itself, and the
// agent's own group holds the agent and the shims, so jobs live one level down.
//
// Where the controllers are mounted as cgroup v1 hierarchies (a host whose memory controller
// is a v1 hierarchy: many GPU clusters, as Slurm's task/cgroup supports both), a job has a group
// in each hierarchy (memory with swap, cpu, cpuset, pids, devices), each under the agent's own
// group in it joined with "baton-jobs", and the devices controller keeps the job from the
// node's other GPUs' device files. A job's group is then named by its directories, ':' between,
// wherever a path is taken or given below.
//
// cgroup v2 has no devices controller: there each job's group gets a BPF program
// (BPF_PROG_TYPE_CGROUP_DEVICE, attached with BPF_F_ALLOW_MULTI so a parent's programs still
// apply) that refuses the denied devices, and the job is kept from other GPUs alike.
//
// Nothing here fails the agent. Where cgroup v2 is missing, read-only, or lacks a controller,
// the manager keeps a human-readable warning for each thing it cannot do (the agent logs them at
// start) and jobs run without that limit: a clear fallback, never a silent one.
//
// Not thread-safe; the agent's main loop owns it.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace baton::agent {

// What one job's group is limited to. 0 or "" leaves that resource unlimited.
struct CgroupLimits {
  int64_t memory_bytes = 0;  // memory.max
  int64_t cpu_millis = 0;    // cpu.max: 1000 = one CPU, written as "QUOTA 100000"
  std::string cpus;          // cpuset.cpus, a cpulist such as "0-15,32-47"
  std::string mems;          // cpuset.mems, NUMA nodes such as "0"
  int64_t pids = 0;          // pids.max
  // Character devices the job may not open or make (cgroup v1's devices controller; under v2 a
  // BPF device program attached to the job's group): the node's other GPUs, {195, index}.
  std::vector<std::pair<int, int>> denied_devices;
  // Device memory (cgroup v2's dmem controller, Linux 6.14 and later): a region of
  // DeviceMemoryRegions and the bytes of it the job may hold (dmem.max), one write each.
  std::vector<std::pair<std::string, int64_t>> device_memory;
};

// A region of device memory the dmem controller accounts (dmem.capacity at the cgroup2 root):
// "drm/0000:18:00.0/vram0" for a DRM driver's VRAM, and its size.
struct DmemRegion {
  std::string name;
  int64_t bytes = 0;
};

class CgroupManager {
 public:
  // Sets up the root of the job groups: `root_override` when given, else the cgroup2 mount
  // point joined with this process's own group and "baton-jobs" (DefaultCgroupRoot). Creates
  // the root when missing and enables memory, cpu, cpuset and pids for its children where it
  // can, asking the root's parent first when the root lacks one of them. Never fails: what it
  // cannot do is in warnings(), and usable() says whether job groups can be made at all.
  static CgroupManager Detect(std::string root_override = "");
  // A manager that makes no groups (usable() is false): for an agent with cgroups turned off.
  CgroupManager() = default;

  // Whether job groups can be created under root() (some controllers may still be missing).
  bool usable() const { return usable_; }
  const std::string& root() const { return root_; }
  // Whether job groups get this controller ("memory", "cpu", "cpuset", "pids", "devices"; under
  // v2 "devices" is a BPF program, offered where the root is a real cgroup2 directory and the
  // kernel loads one; "dmem" under v2 where the kernel has it, without a warning where not:
  // most kernels do not yet).
  bool Has(std::string_view controller) const { return enabled_.count(controller) > 0; }
  int version() const { return version_; }
  // One line for the agent's start log.
  std::string describe() const;
  // One line per fallback, each saying what jobs run without.
  const std::vector<std::string>& warnings() const { return warnings_; }

  // The device memory regions the dmem controller accounts: dmem.capacity in the nearest group
  // at or above root() that has one (the cgroup2 root's). Empty without dmem.
  std::vector<DmemRegion> DmemRegions() const;

  // The path of the job group called `name` (whether it exists or not); with v1, its
  // directory in each hierarchy, ':' between.
  std::string GroupPath(const std::string& name) const;

  // Creates ROOT/NAME (an existing group is reused) and writes each limit whose controller is
  // enabled; limits of missing controllers are skipped (a warning already says so). Returns the
  // group's path. On a failed write the group is removed again and the error names the file.
  // A `name` that is not one path component is InvalidArgument; an unusable manager Unavailable.
  Result<std::string> Create(const std::string& name, const CgroupLimits& limits);

  // Kills every process in the group (cgroup.kill where the kernel has it, 5.14 and later; else
  // SIGKILL to each pid in cgroup.procs) and removes it (each of its v1 directories), retrying
  // briefly while the processes die. A group that is already gone is fine. `path` must lie
  // under root() (each directory under its hierarchy's root).
  Status Remove(const std::string& path);

  // How many processes of the group the OOM killer ended ("oom_kill" in memory.events, v1's
  // memory.oom_control); 0 when the file or the line is not there.
  int64_t OomKills(const std::string& path) const;

 private:
  explicit CgroupManager(std::string root) : root_(std::move(root)) {}
  void SetUp(const std::string& parent);
  void EnableControllers(const std::string& parent);
  void SetUpV1(const std::vector<std::pair<std::string, std::string>>& roots);
  Result<std::string> CreateV1(const std::string& name, const CgroupLimits& limits);
  // The v1 directory of `controller` in a group's path list ("" when it has none).
  std::string V1Dir(const std::string& path, std::string_view controller) const;

  int version_ = 2;
  std::string root_;
  // v1: each enabled controller's root ("memory" -> /sys/fs/cgroup/memory/.../baton-jobs).
  std::vector<std::pair<std::string, std::string>> v1_roots_;
  bool memsw_ = false;  // v1 memory accounts swap: memory.memsw.limit_in_bytes
  bool usable_ = false;
  std::set<std::string, std::less<>> enabled_;
  std::vector<std::string> warnings_;
};

// The default root from the text of /proc/self/mounts and /proc/self/cgroup: the first cgroup2
// mount point joined with the "0::PATH" group and "baton-jobs". The error says which is missing.
Result<std::string> DefaultCgroupRoot(std::string_view mounts, std::string_view self_cgroup);

// The cgroup v1 roots likewise: for each of memory, cpu, cpuset, pids and devices mounted as a
// v1 hierarchy, its mount point joined with this process's group in it ("N:CONTROLLERS:PATH")
// and "baton-jobs". Empty when memory is not a v1 hierarchy (then cgroup v2 is used).
std::vector<std::pair<std::string, std::string>> V1CgroupRoots(std::string_view mounts,
                                                               std::string_view self_cgroup);

}  // namespace baton::agent
