#include "agent/mig_places.h"

namespace baton::agent {

std::vector<Gpu> MigPlacesBackend::Discover() {
  return MigPlaces(found_.Discover(), found_.MigParents(), &inner_);
}

int MigPlacesBackend::Found(int index) const {
  return index >= 0 && static_cast<size_t>(index) < inner_.size() ? inner_[index] : -1;
}

std::vector<GpuSample> MigPlacesBackend::Sample(const std::vector<bool>& busy) {
  std::vector<bool> found_busy;
  for (size_t i = 0; i < inner_.size(); ++i) {
    if (inner_[i] < 0) continue;
    if (found_busy.size() <= static_cast<size_t>(inner_[i])) found_busy.resize(inner_[i] + 1);
    found_busy[inner_[i]] = i < busy.size() && busy[i];
  }
  std::vector<GpuSample> found = found_.Sample(found_busy);
  std::vector<GpuSample> out;
  for (size_t i = 0; i < inner_.size(); ++i) {
    GpuSample s{.index = static_cast<int>(i)};
    for (const GpuSample& f : found) {
      if (inner_[i] >= 0 && f.index == inner_[i]) {
        s = f;
        s.index = static_cast<int>(i);
        break;
      }
    }
    out.push_back(s);
  }
  return out;
}

std::vector<XidEvent> MigPlacesBackend::PollXids() {
  std::vector<XidEvent> out;
  for (XidEvent x : found_.PollXids()) {
    for (size_t i = 0; i < inner_.size(); ++i) {
      if (inner_[i] == x.gpu) {
        x.gpu = static_cast<int>(i);
        out.push_back(x);
        break;
      }
    }
  }
  return out;
}

Status MigPlacesBackend::CheckGpu(int index) {
  const int found = Found(index);
  return found >= 0 ? found_.CheckGpu(found) : Status::Ok();
}

std::vector<std::string> MigPlacesBackend::PciAddresses() const {
  std::vector<std::string> found = found_.PciAddresses();
  if (found.empty()) return found;
  std::vector<std::string> out(inner_.size());
  for (size_t i = 0; i < inner_.size(); ++i) {
    if (inner_[i] >= 0 && static_cast<size_t>(inner_[i]) < found.size()) out[i] = found[inner_[i]];
  }
  return out;
}

Status MigPlacesBackend::Inject(const FaultInjection& fault) {
  FaultInjection f = fault;
  if (fault.fault != FaultKind::kSilence) {
    f.gpu = Found(fault.gpu);
    if (f.gpu < 0)
      return InvalidArgument("gpu: GPU " + std::to_string(fault.gpu) +
                             " of this node is a vacant MIG place, not a device");
  }
  return found_.Inject(f);
}

}  // namespace baton::agent
