// Simulated GPUs from a `--gpus SPEC` (core/node.h): type, memory, NVLink islands by
// topology, and gauges that move with load (utilisation, memory, temperature, power), so that
// every feature runs and is tested on machines without NVIDIA hardware. Deterministic: the
// gauges follow from the busy pattern and a seeded generator.
#pragma once

#include <cstdint>
#include <string>

#include "agent/gpu_backend.h"

namespace baton::agent {

class SimulatedGpuBackend : public GpuBackend {
 public:
  // `node_name` seeds the UUIDs so they are stable across restarts of the same node.
  SimulatedGpuBackend(GpuSpec spec, std::string node_name);

  const char* name() const override { return "simulated"; }
  std::vector<Gpu> Discover() override;
  std::string topology() const override { return spec_.topology; }
  std::vector<GpuSample> Sample(const std::vector<bool>& busy) override;

 private:
  GpuSpec spec_;
  std::string node_name_;
  uint64_t rng_;
  int devices_ = 0;  // GPUs, or MIG instances, that Discover reported
};

}  // namespace baton::agent
