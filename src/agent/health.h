// The agent's GPU health monitor. It judges each GPU from what the backend says of it (gauges,
// a GPU that stopped answering, XID events) and keeps it out of service until it is well again:
//
//   - an XID the catalog (agent/xid_catalog.h) puts down to the application leaves the GPU in
//     service and becomes a notice;
//   - a fault that needs a reset (most XIDs, a lost GPU, uncorrectable ECC errors, a temperature
//     at or above the limit) makes it "reset": it comes back by itself once it has been quiet
//     for `readmit_after`, is cooler than the limit by 5 °C, answers, and the backend's own
//     check passes; the same XID again after it came back makes it a drain (the reset did not
//     cure it);
//   - a fault the catalog calls a hardware fault makes it "drain": the controller keeps it out
//     until an admin returns it.
//
// Pure logic: time is a parameter and the backend's check is a callable, so it is tested alone.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "core/node.h"
#include "core/protocol.h"
#include "core/status.h"

namespace baton::agent {

struct HealthLimits {
  int max_temperature_c = 90;                         // at or above: out of service
  Duration readmit_after = std::chrono::seconds(30);  // quiet time before a GPU may come back
};

class HealthMonitor {
 public:
  HealthMonitor() = default;
  // `physical[i]`: the physical GPU of device i (MIG instances share their GPU's faults).
  HealthMonitor(std::vector<int> physical, HealthLimits limits);

  // Each returns whether some GPU's health changed.
  bool ObserveSamples(const std::vector<GpuSample>& samples, TimePoint now);
  bool ObserveXid(int device, int xid, TimePoint now);
  // Brings back the GPUs in "reset" that have been quiet long enough and pass `check`.
  bool Recheck(const std::function<Status(int device)>& check, TimePoint now);

  // An admin returned the GPU to service: its faults are forgotten (whatever the state).
  bool Readmit(int device, TimePoint now);

  const std::vector<GpuHealth>& health() const { return health_; }
  // Notices gathered since the last call.
  std::vector<GpuNotice> TakeNotices();

 private:
  // Puts every device of `device`'s physical GPU out of service. `event`: a fault that happened
  // now (an XID), rather than a condition seen again (still lost, still hot).
  bool Fault(int device, GpuHealthState state, const std::string& reason, bool event,
             TimePoint now);

  std::vector<int> physical_;
  HealthLimits limits_;
  std::vector<GpuHealth> health_;
  std::vector<GpuSample> last_;            // the latest sample of each device
  std::vector<int64_t> ecc_baseline_;      // uncorrected ECC errors already counted
  std::vector<TimePoint> last_fault_;      // when each device last showed a fault
  std::vector<std::set<int>> reset_xids_;  // reset-class XIDs each device has had
  std::vector<GpuNotice> notices_;
};

}  // namespace baton::agent
