#include "agent/simulated_gpu_backend.h"

#include <cstdio>

#include "agent/xid_catalog.h"

namespace baton::agent {
namespace {

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

uint64_t Next(uint64_t& state) {  // xorshift64*
  state ^= state >> 12;
  state ^= state << 25;
  state ^= state >> 27;
  return state * 2685821657736338717ULL;
}

}  // namespace

SimulatedGpuBackend::SimulatedGpuBackend(GpuSpec spec, std::string node_name)
    : spec_(std::move(spec)), node_name_(std::move(node_name)), rng_(Fnv1a(node_name_) | 1) {
  now_ = [] { return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now()); };
}

std::vector<Gpu> SimulatedGpuBackend::Discover() {
  std::vector<Gpu> gpus = SimulatedGpus(spec_, node_name_);
  devices_ = static_cast<int>(gpus.size());
  return gpus;
}

std::vector<GpuSample> SimulatedGpuBackend::Sample(const std::vector<bool>& busy) {
  std::vector<GpuSample> out;
  int devices = devices_ > 0 ? devices_ : spec_.count;
  for (int i = 0; i < devices; ++i) {
    bool b = static_cast<size_t>(i) < busy.size() && busy[i];
    int jitter = static_cast<int>(Next(rng_) % 7);
    GpuSample s;
    s.index = i;
    s.utilization_pct = b ? 88 + jitter : 0;
    s.memory_used_bytes = b ? spec_.memory_bytes / 10 * 7 : int64_t{512} << 20;
    s.temperature_c = b ? 66 + jitter : 34 + jitter / 2;
    s.power_w = b ? 560 + jitter * 10 : 70 + jitter;
    const Faults& f = FaultsOf(i);
    if (f.temperature_c != 0) s.temperature_c = f.temperature_c;
    s.ecc_uncorrected = f.ecc_uncorrected;
    if (f.lost) s = GpuSample{.index = i, .lost = true};  // a lost GPU reads as nothing
    out.push_back(s);
  }
  return out;
}

SimulatedGpuBackend::Faults& SimulatedGpuBackend::FaultsOf(int index) {
  int devices = devices_ > 0 ? devices_ : spec_.count;
  if (faults_.size() < static_cast<size_t>(devices)) faults_.resize(static_cast<size_t>(devices));
  Faults& f = faults_.at(static_cast<size_t>(index));
  if (f.until != TimePoint{} && now_() >= f.until) f = Faults{};
  return f;
}

std::vector<XidEvent> SimulatedGpuBackend::PollXids() {
  std::vector<XidEvent> out;
  out.swap(xids_);
  return out;
}

Status SimulatedGpuBackend::CheckGpu(int index) {
  int devices = devices_ > 0 ? devices_ : spec_.count;
  if (index < 0 || index >= devices) return NotFound("no GPU " + std::to_string(index));
  const Faults& f = FaultsOf(index);
  if (f.lost) return Unavailable("the GPU does not answer");
  if (f.broken_by_xid != 0)
    return Unavailable("xid " + std::to_string(f.broken_by_xid) + " needs a GPU reset");
  if (f.ecc_uncorrected != 0) return Unavailable("uncorrectable ECC errors wait for a GPU reset");
  return Status::Ok();
}

Status SimulatedGpuBackend::Inject(const FaultInjection& fault) {
  int devices = devices_ > 0 ? devices_ : spec_.count;
  if (fault.gpu < 0 || fault.gpu >= devices) {
    return InvalidArgument("gpu: this node has GPUs 0-" + std::to_string(devices - 1));
  }
  Faults& f = FaultsOf(fault.gpu);
  if (fault.duration.count() > 0) f.until = now_() + fault.duration;
  switch (fault.fault) {
    case FaultKind::kClear:
      f = Faults{};
      return Status::Ok();
    case FaultKind::kXid:
      xids_.push_back(XidEvent{.gpu = fault.gpu, .xid = static_cast<int>(fault.value)});
      if (ClassifyXid(static_cast<int>(fault.value)).action != XidAction::kApplication) {
        f.broken_by_xid = static_cast<int>(fault.value);
      }
      if (fault.value == 79) f.lost = true;  // fallen off the bus: answers nothing until reset
      return Status::Ok();
    case FaultKind::kTemperature:
      f.temperature_c = static_cast<int>(fault.value);
      return Status::Ok();
    case FaultKind::kEcc:
      f.ecc_uncorrected += fault.value;
      return Status::Ok();
    case FaultKind::kLost:
      f.lost = true;
      return Status::Ok();
    case FaultKind::kSilence:
      break;  // the agent's, not a GPU's
  }
  return InvalidArgument("fault: a simulated GPU takes xid, temperature, ecc, lost or clear");
}

}  // namespace baton::agent
