// Where an agent's GPUs come from: NVML on NVIDIA machines, or a simulation of them. The agent
// asks once what GPUs there are, then samples their gauges periodically.
#pragma once

#include <string>
#include <vector>

#include "core/mig.h"
#include "core/node.h"
#include "core/protocol.h"
#include "core/status.h"

namespace baton::agent {

// An XID the driver reported for one of the agent's GPUs (its index as Discover numbered it;
// for a MIG GPU, the first of its instances).
struct XidEvent {
  int gpu = 0;
  int xid = 0;
};

class GpuBackend {
 public:
  virtual ~GpuBackend() = default;
  virtual GpuBackendKind kind() const = 0;
  virtual std::vector<Gpu> Discover() = 0;
  virtual GpuTopology topology() const = 0;
  // One reading of every GPU. `busy[i]` says whether a job runs on GPU i (the simulation
  // uses it; real backends read the hardware).
  virtual std::vector<GpuSample> Sample(const std::vector<bool>& busy) = 0;
  // XIDs reported since the last call; never blocks.
  virtual std::vector<XidEvent> PollXids() { return {}; }
  // The backend's own health check of a GPU out of service (agent/health.h): whether it may
  // come back. Beyond what the gauges show, which the health monitor checks itself.
  virtual Status CheckGpu(int index) {
    (void)index;
    return Status::Ok();
  }
  // Each GPU's PCI address as sysfs writes it ("0000:18:00.0"), by the index Discover gave it;
  // "" where it has none (simulated GPUs, MIG instances). Empty before Discover.
  virtual std::vector<std::string> PciAddresses() const { return {}; }
  // MIG on demand (issue 42), for physical GPU `physical` (its NVML index) in MIG mode: the
  // instances it has now, in memory-slice order, and a change of them: `destroy` (each with its
  // compute instances) and then `create` (each with its whole compute instance). A change stops
  // at the first step that fails, and says which; what was done stays done (MigSlices says
  // what there is). Discover afterwards reports the new instances.
  // The physical GPUs in MIG mode (MigParent), whose instances MigSlices and ChangeMig see
  // and change; each one's instances are the devices of Discover whose `physical` it is.
  virtual std::vector<MigParent> MigParents() { return {}; }
  virtual Result<std::vector<MigSlice>> MigSlices(int physical) {
    (void)physical;
    return Err(NoMigChanges());
  }
  virtual Status ChangeMig(int physical, const std::vector<MigSlice>& destroy,
                           const std::vector<MigSlice>& create) {
    (void)physical;
    (void)destroy;
    (void)create;
    return NoMigChanges();
  }
  // Injects a fault: only simulated GPUs can fake one.
  virtual Status Inject(const FaultInjection& fault) {
    (void)fault;
    return InvalidArgument("faults are injected only into simulated GPUs; this agent's are " +
                           std::string(GpuBackendName(kind())));
  }

 private:
  Status NoMigChanges() const {
    return Unavailable(
        "MIG instances are made and destroyed only through NVML; this agent's "
        "GPUs are " +
        std::string(GpuBackendName(kind())));
  }
};

}  // namespace baton::agent
