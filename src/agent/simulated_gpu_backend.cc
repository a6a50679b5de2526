#include "agent/simulated_gpu_backend.h"

#include <cstdio>

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
    : spec_(std::move(spec)), node_name_(std::move(node_name)), rng_(Fnv1a(node_name_) | 1) {}

std::vector<Gpu> SimulatedGpuBackend::Discover() {
  std::vector<Gpu> gpus;
  uint64_t seed = Fnv1a(node_name_ + "/" + spec_.model);
  auto uuid_of = [&](const char* prefix, uint64_t salt, int i) {
    char uuid[80];
    uint64_t a = seed ^ (salt * 0x9E3779B97F4A7C15ULL);
    std::snprintf(uuid, sizeof uuid, "%s-%08x-%04x-%04x-%04x-%012llx", prefix, static_cast<unsigned>(a >> 32),
                  static_cast<unsigned>(a >> 16) & 0xffff, static_cast<unsigned>(a) & 0xffff, i,
                  static_cast<unsigned long long>(seed & 0xffffffffffffULL));
    return std::string(uuid);
  };
  for (int i = 0; i < spec_.count; ++i) {
    Gpu g;
    g.uuid = uuid_of("GPU", static_cast<uint64_t>(i), i);
    g.model = spec_.model;
    g.memory_bytes = spec_.memory_bytes;
    g.physical = i;
    g.numa_node = spec_.count >= 2 ? (i < spec_.count / 2 ? 0 : 1) : 0;
    // Two PCIe switches per NUMA node, as on DGX and 8-GPU PCIe servers.
    int per_switch = spec_.count >= 4 ? spec_.count / 4 : 1;
    g.pcie_switch = i / per_switch;
    if (spec_.topology == "nvswitch") g.island = 0;
    else if (spec_.topology == "pairs") g.island = i / 2;
    else if (spec_.topology == "cubemesh") g.island = i / 4;
    else g.island = i;
    if (spec_.mig.empty()) {
      g.index = static_cast<int>(gpus.size());
      gpus.push_back(std::move(g));
      continue;
    }
    // MIG mode: the GPU shows up as its instances, each a device of its own.
    for (size_t k = 0; k < spec_.mig.size(); ++k) {
      Gpu m = g;
      m.index = static_cast<int>(gpus.size());
      m.uuid = uuid_of("MIG", 1000 + static_cast<uint64_t>(i) * 16 + k, m.index);
      m.mig_profile = spec_.mig[k];
      m.model = MigModel(spec_.model, m.mig_profile);
      size_t dot = m.mig_profile.find('.');
      m.memory_bytes = std::stoll(m.mig_profile.substr(dot + 1, m.mig_profile.size() - dot - 3)) << 30;
      m.island = 1'000'000 - 1 - i;  // instances of one GPU stay together, apart from other GPUs
      gpus.push_back(std::move(m));
    }
  }
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
    out.push_back(s);
  }
  return out;
}

}  // namespace baton::agent
