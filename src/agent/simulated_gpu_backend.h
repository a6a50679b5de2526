// Simulated GPUs from a `--gpus SPEC` (core/node.h): type, memory, NVLink islands by
// topology, and gauges that move with load (utilisation, memory, temperature, power), so that
// every feature runs and is tested on machines without NVIDIA hardware. Deterministic: the
// gauges follow from the busy pattern and a seeded generator.
//
// Faults can be injected (the controller forwards POST /v1/nodes/NAME/inject): an XID (which
// leaves a GPU failing its health check when the catalog says it needs a reset or service; XID
// 79 also makes it stop answering), a temperature, uncorrectable ECC errors, a GPU lost from the
// bus, and `clear`, which stands for a GPU reset. A fault given a duration clears by itself.
//
// GPUs given MIG instances (`:mig=`) are in MIG mode: their instances can be destroyed and
// created (MigSlices, ChangeMig) within the hardware's geometry (core/mig.h), as NVML would,
// and Discover reports them as they are then. Like real instances, changes do not outlive the
// agent's process: a restarted agent finds the SPEC's layout again.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "agent/gpu_backend.h"

namespace baton::agent {

class SimulatedGpuBackend : public GpuBackend {
 public:
  // `node_name` seeds the UUIDs so they are stable across restarts of the same node.
  SimulatedGpuBackend(GpuSpec spec, std::string node_name);

  GpuBackendKind kind() const override { return GpuBackendKind::kSimulated; }
  std::vector<Gpu> Discover() override;
  GpuTopology topology() const override { return spec_.topology; }
  std::vector<GpuSample> Sample(const std::vector<bool>& busy) override;
  std::vector<XidEvent> PollXids() override;
  Status CheckGpu(int index) override;
  Status Inject(const FaultInjection& fault) override;
  std::vector<MigParent> MigParents() override;
  Result<std::vector<MigSlice>> MigSlices(int physical) override;
  Status ChangeMig(int physical, const std::vector<MigSlice>& destroy,
                   const std::vector<MigSlice>& create) override;

  // The clock faults' durations are measured on (tests set their own).
  void SetClock(std::function<TimePoint()> now) { now_ = std::move(now); }

 private:
  struct Faults {
    bool lost = false;
    int temperature_c = 0;  // 0 = none
    int64_t ecc_uncorrected = 0;
    int broken_by_xid = 0;  // an XID that needs a reset; 0 = none
    TimePoint until{};      // all of them clear then; {} = when told
  };
  Faults& FaultsOf(int index);  // expires them first

  std::function<TimePoint()> now_;
  std::vector<Faults> faults_;
  std::vector<XidEvent> xids_;
  GpuSpec spec_;
  std::string node_name_;
  uint64_t rng_;
  int devices_ = 0;  // GPUs, or MIG instances, that Discover reported
  // With MIG: each GPU's instances now, as its devices are listed (start -1: unknown).
  std::vector<std::vector<MigSlice>> layouts_;
};

}  // namespace baton::agent
