// Where an agent's GPUs come from: NVML on NVIDIA machines, or a simulation of them. The agent
// asks once what GPUs there are, then samples their gauges periodically.
#pragma once

#include <vector>

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
  // Injects a fault: only simulated GPUs can fake one.
  virtual Status Inject(const FaultInjection& fault) {
    (void)fault;
    return InvalidArgument("faults are injected only into simulated GPUs; this agent's are " +
                           std::string(GpuBackendName(kind())));
  }
};

}  // namespace baton::agent
