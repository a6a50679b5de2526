#include "agent/simulated_gpu_backend.h"

#include <algorithm>
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
  if (!spec_.mig.empty()) {
    std::vector<MigSlice> layout;
    for (size_t k = 0; k < spec_.mig.size(); ++k) {
      layout.push_back(MigSlice{.profile = spec_.mig[k],
                                .start = k < spec_.mig_starts.size() ? spec_.mig_starts[k] : -1});
    }
    layouts_.assign(static_cast<size_t>(spec_.count), layout);
  }
}

std::vector<Gpu> SimulatedGpuBackend::Discover() {
  GpuSpec whole = spec_;
  whole.mig.clear();
  whole.mig_starts.clear();
  std::vector<Gpu> gpus = SimulatedGpus(whole, node_name_);
  if (!layouts_.empty()) {
    // MIG mode: each GPU shows up as its instances, each a device of its own, named by where
    // it sits so that one that stays through a change keeps its UUID.
    std::vector<Gpu> instances;
    for (const Gpu& g : gpus) {
      for (const MigSlice& slice : layouts_[static_cast<size_t>(g.physical)]) {
        Gpu m = g;
        m.index = static_cast<int>(instances.size());
        const uint64_t h = Fnv1a(node_name_ + "/" + std::to_string(g.physical) + "/" +
                                 std::to_string(slice.start) + "/" + slice.profile);
        char uuid[64];
        std::snprintf(uuid, sizeof uuid, "MIG-%08x-%04x-%04x-%04x-%012llx",
                      static_cast<unsigned>(h >> 32), static_cast<unsigned>(h >> 16) & 0xffff,
                      static_cast<unsigned>(h) & 0xffff, g.physical,
                      static_cast<unsigned long long>(Fnv1a(slice.profile) & 0xffffffffffffULL));
        m.uuid = uuid;
        m.mig_profile = slice.profile;
        m.mig_start = slice.start;
        m.model = MigModel(spec_.model, slice.profile);
        auto name = ParseMigProfile(slice.profile);
        m.memory_bytes = name ? int64_t{name->memory_gb} << 30 : 0;
        m.island = 1'000'000 - 1 - g.physical;  // instances of one GPU stay together
        instances.push_back(std::move(m));
      }
    }
    gpus = std::move(instances);
  }
  devices_ = static_cast<int>(gpus.size());
  return gpus;
}

std::vector<MigParent> SimulatedGpuBackend::MigParents() {
  std::vector<MigParent> out;
  for (size_t i = 0; i < layouts_.size(); ++i) {
    out.push_back(MigParent{
        .physical = static_cast<int>(i), .model = spec_.model, .memory_bytes = spec_.memory_bytes});
  }
  return out;
}

Result<std::vector<MigSlice>> SimulatedGpuBackend::MigSlices(int physical) {
  if (physical < 0 || physical >= spec_.count)
    return Err(NotFound("no GPU " + std::to_string(physical)));
  if (layouts_.empty())
    return Err(Conflict("GPU " + std::to_string(physical) + " is not in MIG mode"));
  std::vector<MigSlice> slices = layouts_[static_cast<size_t>(physical)];
  std::stable_sort(slices.begin(), slices.end(),
                   [](const MigSlice& a, const MigSlice& b) { return a.start < b.start; });
  return slices;
}

Status SimulatedGpuBackend::ChangeMig(int physical, const std::vector<MigSlice>& destroy,
                                      const std::vector<MigSlice>& create) {
  ASSIGN_OR_RETURN(std::vector<MigSlice> layout, MigSlices(physical));
  const std::string gpu = "GPU " + std::to_string(physical);
  auto words = [&](const MigSlice& m) {
    return gpu + "'s " + m.profile + " at memory slice " + std::to_string(m.start);
  };
  for (const MigSlice& d : destroy) {
    auto it = std::find(layout.begin(), layout.end(), d);
    if (it == layout.end())
      return NotFound(gpu + " has no " + d.profile + " at memory slice " + std::to_string(d.start));
    layout.erase(it);
  }
  // What stays and what is made must be a layout the hardware holds: each at a start its
  // profile may take, no memory slice twice, at most 7 compute slices and one +me.
  unsigned used = 0;
  int compute = 0, media = 0;
  for (const MigSlice& m : layout) {
    auto g = MigGeometryOf(m.profile, spec_.memory_bytes);
    if (!g || m.start < 0) continue;  // the SPEC's own, taken as given
    used |= ((1u << g->size) - 1u) << m.start;
    compute += g->compute;
    media += g->media ? 1 : 0;
  }
  for (const MigSlice& c : create) {
    auto g = MigGeometryOf(c.profile, spec_.memory_bytes);
    if (!g) return NotFound(gpu + " has no MIG profile " + c.profile);
    if (std::find(g->starts.begin(), g->starts.end(), c.start) == g->starts.end()) {
      std::string may;
      for (int s : g->starts) may += (may.empty() ? "" : ", ") + std::to_string(s);
      return InvalidArgument(gpu + "'s " + c.profile + " cannot start at memory slice " +
                             std::to_string(c.start) + " (it may start at " + may + ")");
    }
    const unsigned run = ((1u << g->size) - 1u) << c.start;
    if ((used & run) != 0) return Conflict(words(c) + ": its slices are taken");
    compute += g->compute;
    media += g->media ? 1 : 0;
    if (compute > kMigComputeSlices)
      return Conflict(words(c) + ": the GPU's 7 compute slices are taken");
    if (media > 1) return Conflict(words(c) + ": the GPU has its +me instance");
    used |= run;
    layout.push_back(c);
  }
  layouts_[static_cast<size_t>(physical)] = std::move(layout);  // devices: survivors first
  return Status::Ok();
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
