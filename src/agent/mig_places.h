// The GPUs of an agent that re-plans MIG (`baton agent --mig-reconfigure`, issue 42), numbered
// so that a change of one GPU's instances moves no other device's index: a GpuBackend over the
// one that finds the devices, which lays them out with MigPlaces (core/node.h) — a whole GPU
// one index, a GPU in MIG mode kMigPlaces, its instances at first + their first memory slice
// and vacant places between — and turns each index back into the found device's for readings,
// health checks, faults and XIDs. Running jobs, the journal and the agent's job book all hold
// device indices; a MIG change leaves every index they hold where it was.
#pragma once

#include <vector>

#include "agent/gpu_backend.h"

namespace baton::agent {

class MigPlacesBackend : public GpuBackend {
 public:
  explicit MigPlacesBackend(GpuBackend& found) : found_(found) {}

  GpuBackendKind kind() const override { return found_.kind(); }
  std::vector<Gpu> Discover() override;
  GpuTopology topology() const override { return found_.topology(); }
  // A vacant place reads as idle and answering.
  std::vector<GpuSample> Sample(const std::vector<bool>& busy) override;
  std::vector<XidEvent> PollXids() override;
  Status CheckGpu(int index) override;
  std::vector<std::string> PciAddresses() const override;
  std::vector<MigParent> MigParents() override { return found_.MigParents(); }
  Result<std::vector<MigSlice>> MigSlices(int physical) override {
    return found_.MigSlices(physical);
  }
  Status ChangeMig(int physical, const std::vector<MigSlice>& destroy,
                   const std::vector<MigSlice>& create) override {
    return found_.ChangeMig(physical, destroy, create);
  }
  Status Inject(const FaultInjection& fault) override;

 private:
  int Found(int index) const;  // the found device of an index; -1: vacant or none
  GpuBackend& found_;
  std::vector<int> inner_;  // per index: the index found_ gave it, or -1
};

}  // namespace baton::agent
