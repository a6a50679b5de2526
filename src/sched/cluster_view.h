// The scheduler's picture of the cluster: what every schedulable GPU, CPU and byte of memory
// has free right now. The controller builds it; scheduling passes consume it by value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/job.h"

namespace baton::sched {

struct GpuSlot {
  int index = 0;
  std::string model;
  int64_t memory_bytes = 0;
  int64_t free_milli = 1000;      // 1000 = whole GPU free; less = shared by fractional jobs
  int64_t free_memory_bytes = 0;  // memory not promised to fractional jobs
  bool usable = true;             // false when drained or failed
};

struct NodeSlots {
  std::string name;
  std::vector<GpuSlot> gpus;
  int total_cpus = 0;
  int free_cpus = 0;
  int64_t total_memory_bytes = 0;
  int64_t free_memory_bytes = 0;
  bool schedulable = true;        // false when lost or drained
};

struct ClusterView {
  std::vector<NodeSlots> nodes;

  int64_t FreeWholeGpus() const;
  // Subtracts (or with sign -1, returns) an allocation's GPUs, CPUs and memory.
  void Apply(const std::vector<NodeAllocation>& allocation, const Resources& r, int sign);
  NodeSlots* FindNode(const std::string& name);
};

}  // namespace baton::sched
