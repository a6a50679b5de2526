// Where an agent's GPUs come from: NVML on NVIDIA machines, or a simulation of them. The agent
// asks once what GPUs there are, then samples their gauges periodically.
#pragma once

#include <vector>

#include "core/node.h"
#include "core/status.h"

namespace baton::agent {

class GpuBackend {
 public:
  virtual ~GpuBackend() = default;
  virtual const char* name() const = 0;        // "simulated", "nvml"
  virtual std::vector<Gpu> Discover() = 0;
  virtual std::string topology() const = 0;    // "nvswitch", "pairs", "pcie"
  // One reading of every GPU. `busy[i]` says whether a job runs on GPU i (the simulation
  // uses it; real backends read the hardware).
  virtual std::vector<GpuSample> Sample(const std::vector<bool>& busy) = 0;
};

}  // namespace baton::agent
