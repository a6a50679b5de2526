// The machine around the GPUs, from hwloc (the agent's one model of it): NUMA nodes and their
// CPUs, which the agent binds jobs to, and for each NVIDIA GPU
// its PCI bus id, nearest NUMA node, the PCIe switch above it, and, where hwloc knows NVLink
// bandwidths (IBM POWER, NVML's plugin), which GPUs NVLink joins. Read from the running machine,
// or from an hwloc XML export (`lstopo file.xml`), which is how the tests see real servers.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace baton::agent {

struct HostGpu {
  std::string bus_id;   // "0000:34:00.0"
  std::string model;    // hwloc's GPUModel ("Tesla V100-SXM3-32GB-H"), "" when unknown
  std::string uuid;     // hwloc's NVIDIAUUID, "" when unknown
  int numa_node = 0;    // OS index of the nearest NUMA node
  int pcie_switch = 0;  // GPUs behind the same switch share the number (numbered from 0)
  int island = -1;      // GPUs joined by NVLink share it; -1 when hwloc knows no NVLink
};

struct HostTopology {
  struct Numa {
    int os_index = 0;
    std::vector<int> cpus;  // OS indices of its processing units
    int64_t memory_bytes = 0;
  };
  std::vector<Numa> numa;
  int cpus = 0;
  std::vector<HostGpu> gpus;  // NVIDIA display and 3D controllers, in PCI order

  // The GPU at `bus_id` (any case, 4- or 8-digit domain), or null.
  const HostGpu* Gpu(std::string_view bus_id) const;
  // The NUMA node with this OS index, or null.
  const Numa* NumaNode(int os_index) const;
  // The CPUs of these NUMA nodes as one cpulist ("0-15,32-47"), for binding a job to them;
  // nullopt when one of them is not this host's or has no CPUs (a memory-only node), or when
  // `nodes` is empty.
  std::optional<std::string> CpuListOf(const std::set<int>& nodes) const;
};

// This machine's topology (`xml` empty), or the one an hwloc XML export describes. An error
// names the file and what hwloc could not do.
Result<HostTopology> LoadHostTopology(const std::string& xml = "");

}  // namespace baton::agent
