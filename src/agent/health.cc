#include "agent/health.h"

#include <algorithm>

#include "agent/xid_catalog.h"

namespace baton::agent {

HealthMonitor::HealthMonitor(std::vector<int> physical, HealthLimits limits)
    : physical_(std::move(physical)), limits_(limits) {
  health_.resize(physical_.size());
  last_.resize(physical_.size());
  ecc_baseline_.assign(physical_.size(), -1);
  last_fault_.resize(physical_.size());
  reset_xids_.resize(physical_.size());
  for (size_t i = 0; i < health_.size(); ++i) {
    health_[i].index = static_cast<int>(i);
    last_[i].index = static_cast<int>(i);
  }
}

bool HealthMonitor::Fault(int device, GpuHealthState state, const std::string& reason, bool event,
                          TimePoint now) {
  if (device < 0 || static_cast<size_t>(device) >= health_.size()) return false;
  bool changed = false;
  for (size_t i = 0; i < health_.size(); ++i) {
    if (physical_[i] != physical_[device]) continue;
    last_fault_[i] = now;  // the quiet time starts again
    GpuHealth& h = health_[i];
    bool escalate = h.state == GpuHealthState::kOk ||
                    (state == GpuHealthState::kDrain && h.state == GpuHealthState::kReset);
    // A condition that persists (still lost, still hot) is not news; an event (an XID, more ECC
    // errors) is, even on a GPU already out of service.
    if (!escalate && !event) continue;
    if (escalate) h.state = state;
    if (h.state == state) h.reason = reason;  // a drain keeps the reason that made it one
    h.since = now;
    changed = true;
  }
  return changed;
}

bool HealthMonitor::ObserveSamples(const std::vector<GpuSample>& samples, TimePoint now) {
  bool changed = false;
  for (const GpuSample& s : samples) {
    if (s.index < 0 || static_cast<size_t>(s.index) >= health_.size()) continue;
    size_t i = static_cast<size_t>(s.index);
    last_[i] = s;
    if (s.lost) {
      changed |= Fault(s.index, GpuHealthState::kReset,
                       "the GPU stopped answering (fallen off the bus)", false, now);
      continue;
    }
    if (s.temperature_c >= limits_.max_temperature_c) {
      changed |=
          Fault(s.index, GpuHealthState::kReset,
                "temperature " + std::to_string(s.temperature_c) + " °C at or above the limit of " +
                    std::to_string(limits_.max_temperature_c) + " °C",
                false, now);
    }
    // The volatile count only grows until the GPU is reset (which zeroes it): any growth is a
    // new uncorrectable error; the first reading is the baseline.
    if (ecc_baseline_[i] < 0 || s.ecc_uncorrected < ecc_baseline_[i]) {
      ecc_baseline_[i] = s.ecc_uncorrected;
    } else if (s.ecc_uncorrected > ecc_baseline_[i]) {
      int64_t n = s.ecc_uncorrected - ecc_baseline_[i];
      ecc_baseline_[i] = s.ecc_uncorrected;
      changed |=
          Fault(s.index, GpuHealthState::kReset,
                std::to_string(n) + " uncorrectable ECC error" + (n == 1 ? "" : "s"), true, now);
    }
  }
  return changed;
}

bool HealthMonitor::ObserveXid(int device, int xid, TimePoint now) {
  if (device < 0 || static_cast<size_t>(device) >= health_.size()) return false;
  XidInfo info = ClassifyXid(xid);
  std::string what = "xid " + std::to_string(xid) + ": " + std::string(info.name);
  if (info.action == XidAction::kApplication) {
    notices_.push_back(GpuNotice{
        .gpu = device, .xid = xid, .message = what + " (an application error)", .at = now});
    return false;
  }
  GpuHealthState state =
      info.action == XidAction::kDrain ? GpuHealthState::kDrain : GpuHealthState::kReset;
  // A reset that did not cure it: the same XID on a GPU that came back from it is a drain.
  bool again = !reset_xids_[device].insert(xid).second;
  if (state == GpuHealthState::kReset && again && health_[device].state == GpuHealthState::kOk) {
    state = GpuHealthState::kDrain;
    what += " (again after the GPU came back from it)";
  }
  return Fault(device, state, what, true, now);
}

bool HealthMonitor::Recheck(const std::function<Status(int device)>& check, TimePoint now) {
  bool changed = false;
  for (size_t i = 0; i < health_.size(); ++i) {
    GpuHealth& h = health_[i];
    if (h.state != GpuHealthState::kReset || now - last_fault_[i] < limits_.readmit_after) continue;
    const GpuSample& s = last_[i];
    if (s.lost || s.temperature_c > limits_.max_temperature_c - 5) continue;
    if (!check(static_cast<int>(i)).ok()) continue;
    h = GpuHealth{
        .index = static_cast<int>(i), .state = GpuHealthState::kOk, .reason = "", .since = now};
    changed = true;
  }
  return changed;
}

bool HealthMonitor::Readmit(int device, TimePoint now) {
  if (device < 0 || static_cast<size_t>(device) >= health_.size()) return false;
  bool changed = false;
  for (size_t i = 0; i < health_.size(); ++i) {
    if (physical_[i] != physical_[device]) continue;
    reset_xids_[i].clear();
    if (health_[i].state == GpuHealthState::kOk) continue;
    health_[i] = GpuHealth{
        .index = static_cast<int>(i), .state = GpuHealthState::kOk, .reason = "", .since = now};
    changed = true;
  }
  return changed;
}

std::vector<GpuNotice> HealthMonitor::TakeNotices() {
  std::vector<GpuNotice> out;
  out.swap(notices_);
  return out;
}

}  // namespace baton::agent
