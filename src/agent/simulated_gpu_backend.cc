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
    out.push_back(s);
  }
  return out;
}

}  // namespace baton::agent
