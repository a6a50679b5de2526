#include "agent/nvml_backend.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>

#include "agent/host_topology.h"
#include "agent/nvml_api.h"

namespace baton::agent {

// NVML's functions as loaded. The first group must exist; the others are left null when an old
// driver lacks them (no MIG, no NVLink, no events), and what needs them is skipped.
struct NvmlGpuBackend::Api {
  decltype(&nvmlInit_v2) init = nullptr;
  decltype(&nvmlShutdown) shutdown = nullptr;
  decltype(&nvmlErrorString) error_string = nullptr;
  decltype(&nvmlDeviceGetCount_v2) count = nullptr;
  decltype(&nvmlDeviceGetHandleByIndex_v2) handle = nullptr;
  decltype(&nvmlDeviceGetUUID) uuid = nullptr;
  decltype(&nvmlDeviceGetName) name = nullptr;
  decltype(&nvmlDeviceGetMemoryInfo) memory = nullptr;

  decltype(&nvmlSystemGetDriverVersion) driver = nullptr;
  decltype(&nvmlDeviceGetPciInfo_v3) pci = nullptr;
  decltype(&nvmlDeviceGetUtilizationRates) utilization = nullptr;
  decltype(&nvmlDeviceGetTemperature) temperature = nullptr;
  decltype(&nvmlDeviceGetPowerUsage) power = nullptr;
  decltype(&nvmlDeviceGetTotalEccErrors) ecc = nullptr;
  decltype(&nvmlDeviceGetNvLinkState) link_state = nullptr;
  decltype(&nvmlDeviceGetNvLinkRemotePciInfo_v2) link_remote = nullptr;
  decltype(&nvmlDeviceGetMigMode) mig_mode = nullptr;
  decltype(&nvmlDeviceGetMaxMigDeviceCount) mig_count = nullptr;
  decltype(&nvmlDeviceGetMigDeviceHandleByIndex) mig_handle = nullptr;
  decltype(&nvmlEventSetCreate) event_set_create = nullptr;
  decltype(&nvmlDeviceRegisterEvents) register_events = nullptr;
  decltype(&nvmlEventSetWait_v2) event_wait = nullptr;
  decltype(&nvmlEventSetFree) event_set_free = nullptr;
  decltype(&nvmlDeviceGetRetiredPagesPendingStatus) retired_pending = nullptr;
  decltype(&nvmlDeviceGetRemappedRows) remapped_rows = nullptr;
  // MIG instances made and destroyed (MigSlices, ChangeMig): all or none.
  decltype(&nvmlDeviceGetGpuInstanceProfileInfoV) gi_profile = nullptr;
  decltype(&nvmlDeviceGetGpuInstancePossiblePlacements_v2) gi_placements = nullptr;
  decltype(&nvmlDeviceCreateGpuInstanceWithPlacement) gi_create = nullptr;
  decltype(&nvmlDeviceGetGpuInstances) gi_list = nullptr;
  decltype(&nvmlGpuInstanceGetInfo) gi_info = nullptr;
  decltype(&nvmlGpuInstanceDestroy) gi_destroy = nullptr;
  decltype(&nvmlGpuInstanceGetComputeInstanceProfileInfo) ci_profile = nullptr;
  decltype(&nvmlGpuInstanceCreateComputeInstance) ci_create = nullptr;
  decltype(&nvmlGpuInstanceGetComputeInstances) ci_list = nullptr;
  decltype(&nvmlComputeInstanceDestroy) ci_destroy = nullptr;
  // A MIG device's placement (Gpu::mig_start), where the driver says.
  decltype(&nvmlDeviceGetGpuInstanceId) gi_id_of = nullptr;
  decltype(&nvmlDeviceGetGpuInstanceById) gi_by_id = nullptr;

  bool CanChangeMig() const {
    return gi_profile != nullptr && gi_placements != nullptr && gi_create != nullptr &&
           gi_list != nullptr && gi_info != nullptr && gi_destroy != nullptr &&
           ci_profile != nullptr && ci_create != nullptr && ci_list != nullptr &&
           ci_destroy != nullptr && mig_mode != nullptr;
  }

  std::string Error(nvmlReturn_t r) const {
    const char* s = error_string != nullptr ? error_string(r) : nullptr;
    return s != nullptr ? std::string(s) : "NVML error " + std::to_string(r);
  }
};

namespace {

template <class F>
void Resolve(void* lib, const char* symbol, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, symbol));
}

nvmlDevice_t Dev(void* h) { return static_cast<nvmlDevice_t>(h); }

// NVML writes "00000000:18:00.0"; hwloc and sysfs name the device "0000:18:00.0".
std::string SysfsBusId(const std::string& nvml) {
  std::string id = nvml;
  for (char& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  size_t colon = id.find(':');
  if (colon != std::string::npos && colon > 4) id = id.substr(colon - 4);
  return id;
}

// The marketed memory sizes a GPU is sold with, in GB.
constexpr int kMarketedGb[] = {8,  10, 12, 16, 20,  24,  32,  40,  48,
                               64, 80, 94, 96, 141, 144, 180, 192, 288};

}  // namespace

std::string ModelFromNvmlName(const std::string& name, int64_t memory_bytes) {
  // Words of the name, without the vendor's.
  std::vector<std::string> words;
  std::string word;
  for (char c : name + " ") {
    if (c == ' ') {
      if (!word.empty()) words.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  words.erase(std::remove_if(words.begin(), words.end(),
                             [](const std::string& w) {
                               return w == "NVIDIA" || w == "Tesla" || w == "GeForce";
                             }),
              words.end());
  if (words.empty()) return "GPU";
  // "A100-SXM4-80GB": the family before the first '-', the memory maybe after it.
  std::string first = words[0];
  std::string family = first.substr(0, first.find('-'));
  if ((family == "RTX" || family == "GTX") && words.size() > 1) family += words[1];
  int gb = 0;
  auto read_gb = [&](const std::string& s) {
    size_t at = s.find("GB");
    if (at == std::string::npos || at == 0) return;
    size_t start = at;
    while (start > 0 && std::isdigit(static_cast<unsigned char>(s[start - 1]))) --start;
    if (start < at) gb = std::atoi(s.substr(start, at - start).c_str());
  };
  for (const auto& w : words) {
    if (gb == 0) read_gb(w);
  }
  if (gb <= 0 || gb > 4096) {
    double gib = static_cast<double>(memory_bytes) / static_cast<double>(int64_t{1} << 30);
    gb = static_cast<int>(std::ceil(gib));
    for (int m : kMarketedGb) {
      if (m >= gib - 0.5) {
        gb = m;
        break;
      }
    }
  }
  std::string model;
  for (char c : family) {
    if (std::isalnum(static_cast<unsigned char>(c))) model += c;
  }
  return (model.empty() ? "GPU" : model) + "-" + std::to_string(gb) + "GB";
}

Result<std::unique_ptr<NvmlGpuBackend>> NvmlGpuBackend::Open(NvmlOptions options) {
  if (options.library.empty()) {
    const char* env = std::getenv("BATON_NVML_LIBRARY");
    options.library = env != nullptr && *env != '\0' ? env : "libnvidia-ml.so.1";
  }
  void* lib = dlopen(options.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    return Err(NotFound("cannot load " + options.library + ": " +
                        (why != nullptr ? why : "unknown error")));
  }
  std::unique_ptr<NvmlGpuBackend> b(new NvmlGpuBackend());
  b->handle_ = lib;
  b->options_ = std::move(options);
  b->api_ = std::make_unique<Api>();
  Api& a = *b->api_;
  Resolve(lib, "nvmlInit_v2", a.init);
  Resolve(lib, "nvmlShutdown", a.shutdown);
  Resolve(lib, "nvmlErrorString", a.error_string);
  Resolve(lib, "nvmlDeviceGetCount_v2", a.count);
  Resolve(lib, "nvmlDeviceGetHandleByIndex_v2", a.handle);
  Resolve(lib, "nvmlDeviceGetUUID", a.uuid);
  Resolve(lib, "nvmlDeviceGetName", a.name);
  Resolve(lib, "nvmlDeviceGetMemoryInfo", a.memory);
  Resolve(lib, "nvmlSystemGetDriverVersion", a.driver);
  Resolve(lib, "nvmlDeviceGetPciInfo_v3", a.pci);
  Resolve(lib, "nvmlDeviceGetUtilizationRates", a.utilization);
  Resolve(lib, "nvmlDeviceGetTemperature", a.temperature);
  Resolve(lib, "nvmlDeviceGetPowerUsage", a.power);
  Resolve(lib, "nvmlDeviceGetTotalEccErrors", a.ecc);
  Resolve(lib, "nvmlDeviceGetNvLinkState", a.link_state);
  Resolve(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2", a.link_remote);
  Resolve(lib, "nvmlDeviceGetMigMode", a.mig_mode);
  Resolve(lib, "nvmlDeviceGetMaxMigDeviceCount", a.mig_count);
  Resolve(lib, "nvmlDeviceGetMigDeviceHandleByIndex", a.mig_handle);
  Resolve(lib, "nvmlEventSetCreate", a.event_set_create);
  Resolve(lib, "nvmlDeviceRegisterEvents", a.register_events);
  Resolve(lib, "nvmlEventSetWait_v2", a.event_wait);
  Resolve(lib, "nvmlEventSetFree", a.event_set_free);
  Resolve(lib, "nvmlDeviceGetRetiredPagesPendingStatus", a.retired_pending);
  Resolve(lib, "nvmlDeviceGetRemappedRows", a.remapped_rows);
  Resolve(lib, "nvmlDeviceGetGpuInstanceProfileInfoV", a.gi_profile);
  Resolve(lib, "nvmlDeviceGetGpuInstancePossiblePlacements_v2", a.gi_placements);
  Resolve(lib, "nvmlDeviceCreateGpuInstanceWithPlacement", a.gi_create);
  Resolve(lib, "nvmlDeviceGetGpuInstances", a.gi_list);
  Resolve(lib, "nvmlGpuInstanceGetInfo", a.gi_info);
  Resolve(lib, "nvmlGpuInstanceDestroy", a.gi_destroy);
  Resolve(lib, "nvmlGpuInstanceGetComputeInstanceProfileInfo", a.ci_profile);
  Resolve(lib, "nvmlGpuInstanceCreateComputeInstance", a.ci_create);
  Resolve(lib, "nvmlGpuInstanceGetComputeInstances", a.ci_list);
  Resolve(lib, "nvmlComputeInstanceDestroy", a.ci_destroy);
  Resolve(lib, "nvmlDeviceGetGpuInstanceId", a.gi_id_of);
  Resolve(lib, "nvmlDeviceGetGpuInstanceById", a.gi_by_id);
  for (auto [fn, symbol] : {std::pair{reinterpret_cast<void*>(a.init), "nvmlInit_v2"},
                            {reinterpret_cast<void*>(a.shutdown), "nvmlShutdown"},
                            {reinterpret_cast<void*>(a.count), "nvmlDeviceGetCount_v2"},
                            {reinterpret_cast<void*>(a.handle), "nvmlDeviceGetHandleByIndex_v2"},
                            {reinterpret_cast<void*>(a.uuid), "nvmlDeviceGetUUID"},
                            {reinterpret_cast<void*>(a.name), "nvmlDeviceGetName"},
                            {reinterpret_cast<void*>(a.memory), "nvmlDeviceGetMemoryInfo"}}) {
    if (fn == nullptr) {
      return Err(Unavailable(b->options_.library + " lacks " + symbol +
                             ": not NVML, or a driver too old"));
    }
  }
  if (nvmlReturn_t r = a.init(); r != NVML_SUCCESS) {
    a.shutdown = nullptr;  // nothing to shut down
    return Err(Unavailable("nvmlInit: " + a.Error(r)));
  }
  if (a.driver != nullptr) {
    char version[96] = {};
    if (a.driver(version, sizeof version) == NVML_SUCCESS) b->driver_ = version;
  }
  return b;
}

NvmlGpuBackend::~NvmlGpuBackend() {
  if (api_ != nullptr) {
    if (events_ != nullptr && api_->event_set_free != nullptr) {
      api_->event_set_free(static_cast<nvmlEventSet_t>(events_));
    }
    if (api_->shutdown != nullptr) api_->shutdown();
  }
  if (handle_ != nullptr) dlclose(handle_);
}

namespace {

using Api = NvmlGpuBackend::Api;

// A physical GPU as Discover first reads it.
struct PhysicalGpu {
  Gpu gpu;
  std::string bus;                 // sysfs form
  std::vector<std::string> peers;  // bus ids at the other end of active NVLinks
};

PhysicalGpu ReadPhysicalGpu(const Api& a, nvmlDevice_t h) {
  PhysicalGpu p;
  char text[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
  if (a.uuid(h, text, sizeof text) == NVML_SUCCESS) p.gpu.uuid = text;
  std::string name = a.name(h, text, sizeof text) == NVML_SUCCESS ? text : "";
  nvmlMemory_t mem{};
  if (a.memory(h, &mem) == NVML_SUCCESS) p.gpu.memory_bytes = static_cast<int64_t>(mem.total);
  p.gpu.model = ModelFromNvmlName(name, p.gpu.memory_bytes);
  nvmlPciInfo_t pci{};
  if (a.pci != nullptr && a.pci(h, &pci) == NVML_SUCCESS) p.bus = SysfsBusId(pci.busId);
  if (a.link_state != nullptr && a.link_remote != nullptr) {
    for (unsigned int link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
      int active = NVML_FEATURE_DISABLED;
      if (a.link_state(h, link, &active) != NVML_SUCCESS) break;
      if (active != NVML_FEATURE_ENABLED) continue;
      nvmlPciInfo_t remote{};
      if (a.link_remote(h, link, &remote) == NVML_SUCCESS)
        p.peers.push_back(SysfsBusId(remote.busId));
    }
  }
  return p;
}

// NUMA node and the PCIe switch above each GPU, from hwloc. A GPU hwloc does not know gets
// NUMA node 0 and a switch of its own.
void PlaceOnHost(const Result<HostTopology>& host, std::vector<PhysicalGpu>* found) {
  std::map<int, int> switches;  // hwloc's numbering -> ours (dense, in GPU order)
  for (size_t i = 0; i < found->size(); ++i) {
    PhysicalGpu& p = (*found)[i];
    const HostGpu* h = host && !p.bus.empty() ? host->Gpu(p.bus) : nullptr;
    int key = h != nullptr ? h->pcie_switch : -1 - static_cast<int>(i);
    auto [it, added] = switches.emplace(key, static_cast<int>(switches.size()));
    p.gpu.pcie_switch = it->second;
    p.gpu.numa_node = h != nullptr ? h->numa_node : 0;
  }
}

// NVLink islands: GPUs joined by active links, directly or through NVSwitches (a link whose
// far end is not one of these GPUs); one island per connected group, numbered in order.
// Returns the host's topology: nvswitch, nvlink or pcie.
GpuTopology SetNvlinkIslands(const Result<HostTopology>& host, std::vector<PhysicalGpu>* found) {
  std::vector<int> parent(found->size() + 1);
  std::iota(parent.begin(), parent.end(), 0);
  const int kSwitch = static_cast<int>(found->size());
  std::function<int(int)> root = [&](int x) {
    return parent[x] == x ? x : parent[x] = root(parent[x]);
  };
  std::map<std::string, int> by_bus;
  for (size_t i = 0; i < found->size(); ++i) by_bus[(*found)[i].bus] = static_cast<int>(i);
  bool any_link = false, via_switch = false;
  for (size_t i = 0; i < found->size(); ++i) {
    for (const auto& peer : (*found)[i].peers) {
      any_link = true;
      auto it = by_bus.find(peer);
      int other = it != by_bus.end() ? it->second : kSwitch;
      via_switch |= other == kSwitch;
      parent[root(static_cast<int>(i))] = root(other);
    }
  }
  // Without NVML's links (an old driver), hwloc's NVLink bandwidth matrix, where it has one.
  if (!any_link && host) {
    std::map<int, int> first_of_island;
    for (size_t i = 0; i < found->size(); ++i) {
      const HostGpu* h = (*found)[i].bus.empty() ? nullptr : host->Gpu((*found)[i].bus);
      if (h == nullptr || h->island < 0) continue;
      auto [it, added] = first_of_island.emplace(h->island, static_cast<int>(i));
      if (!added) {
        parent[root(static_cast<int>(i))] = root(it->second);
        any_link = true;
      }
    }
  }
  std::map<int, int> islands;
  for (size_t i = 0; i < found->size(); ++i) {
    auto [it, added] = islands.emplace(root(static_cast<int>(i)), static_cast<int>(islands.size()));
    (*found)[i].gpu.island = it->second;
  }
  if (via_switch) return GpuTopology::kNvswitch;
  return any_link ? GpuTopology::kNvlink : GpuTopology::kPcie;
}

// A MIG instance of a physical GPU: what Discover reports for it (index not yet set) and its
// handle.
struct MigInstance {
  Gpu gpu;
  nvmlDevice_t handle = nullptr;
};

// The first memory slice of MIG device `m` of GPU `h`: its GPU instance's placement; -1 where
// the driver does not say.
int MigStartOf(const Api& a, nvmlDevice_t h, nvmlDevice_t m) {
  unsigned int id = 0;
  nvmlGpuInstance_t gi = nullptr;
  nvmlGpuInstanceInfo_t info{};
  if (a.gi_id_of == nullptr || a.gi_by_id == nullptr || a.gi_info == nullptr ||
      a.gi_id_of(m, &id) != NVML_SUCCESS || a.gi_by_id(h, id, &gi) != NVML_SUCCESS ||
      a.gi_info(gi, &info) != NVML_SUCCESS || info.placement.start >= kMigMemorySlices)
    return -1;
  return static_cast<int>(info.placement.start);
}

// The MIG instances of physical GPU `h` (at most 8); none when MIG is off or unknown.
// `*mig`: whether MIG is on (it may be on with no instance).
std::vector<MigInstance> MigInstances(const Api& a, nvmlDevice_t h, const Gpu& whole,
                                      bool* mig_on) {
  std::vector<MigInstance> out;
  unsigned int current = NVML_DEVICE_MIG_DISABLE, pending = NVML_DEVICE_MIG_DISABLE;
  bool mig = a.mig_mode != nullptr && a.mig_count != nullptr && a.mig_handle != nullptr &&
             a.mig_mode(h, &current, &pending) == NVML_SUCCESS && current == NVML_DEVICE_MIG_ENABLE;
  *mig_on = mig;
  unsigned int instances = 0;
  if (mig && a.mig_count(h, &instances) != NVML_SUCCESS) instances = 0;
  for (unsigned int k = 0; k < std::min(instances, 8u); ++k) {
    nvmlDevice_t m = nullptr;
    if (a.mig_handle(h, k, &m) != NVML_SUCCESS || m == nullptr) continue;
    Gpu g = whole;
    char text[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
    if (a.uuid(m, text, sizeof text) == NVML_SUCCESS) g.uuid = text;
    std::string name = a.name(m, text, sizeof text) == NVML_SUCCESS ? text : "";
    size_t at = name.rfind("MIG ");
    g.mig_profile = at == std::string::npos ? "mig" : name.substr(at + 4);
    g.model = MigModel(whole.model, g.mig_profile);
    nvmlMemory_t mem{};
    if (a.memory(m, &mem) == NVML_SUCCESS) g.memory_bytes = static_cast<int64_t>(mem.total);
    g.mig_start = MigStartOf(a, h, m);
    out.push_back(MigInstance{.gpu = std::move(g), .handle = m});
  }
  return out;
}

// XIDs: one event set for every physical GPU that supports it; null when NVML has no events.
void* XidEventSet(const Api& a, const std::vector<void*>& physical) {
  if (a.event_set_create == nullptr || a.register_events == nullptr || a.event_wait == nullptr) {
    return nullptr;
  }
  nvmlEventSet_t set = nullptr;
  if (a.event_set_create(&set) != NVML_SUCCESS) return nullptr;
  for (void* h : physical) (void)a.register_events(Dev(h), nvmlEventTypeXidCriticalError, set);
  return set;
}

}  // namespace

std::vector<Gpu> NvmlGpuBackend::Discover() {
  const Api& a = *api_;
  std::vector<Gpu> out;
  devices_.clear();
  physical_.clear();
  mig_parents_.clear();
  unsigned int count = 0;
  if (a.count(&count) != NVML_SUCCESS) return out;
  count = std::min(count, 64u);

  std::vector<PhysicalGpu> found;
  for (unsigned int i = 0; i < count; ++i) {
    nvmlDevice_t h = nullptr;
    if (a.handle(i, &h) != NVML_SUCCESS) continue;
    PhysicalGpu p = ReadPhysicalGpu(a, h);
    physical_.push_back(h);
    p.gpu.physical = static_cast<int>(physical_.size()) - 1;
    found.push_back(std::move(p));
  }
  auto host = LoadHostTopology(options_.topology_xml);
  PlaceOnHost(host, &found);
  topology_ = SetNvlinkIslands(host, &found);

  // Devices: a whole GPU, or its MIG instances when MIG is on.
  for (size_t i = 0; i < found.size(); ++i) {
    const int physical = static_cast<int>(i);
    bool mig_on = false;
    std::vector<MigInstance> migs = MigInstances(a, Dev(physical_[i]), found[i].gpu, &mig_on);
    for (MigInstance& m : migs) {
      m.gpu.index = static_cast<int>(out.size());
      out.push_back(m.gpu);
      devices_.push_back(Device{.gpu = physical_[i], .mig = m.handle, .physical = physical});
    }
    // A GPU in MIG mode runs work only in its instances: with none it offers no device.
    if (mig_on) {
      mig_parents_.push_back(MigParent{.physical = physical,
                                       .model = found[i].gpu.model,
                                       .memory_bytes = found[i].gpu.memory_bytes});
    } else {
      Gpu g = found[i].gpu;
      g.index = static_cast<int>(out.size());
      g.physical = physical;  // its CUDA ordinal, which MIG GPUs before it may make differ
      out.push_back(g);
      devices_.push_back(Device{.gpu = physical_[i], .physical = physical, .bus = found[i].bus});
    }
  }
  if (events_ == nullptr) events_ = XidEventSet(a, physical_);
  return out;
}

std::vector<GpuSample> NvmlGpuBackend::Sample(
    const std::vector<bool>& /*busy: the hardware says*/) {
  const Api& a = *api_;
  std::vector<GpuSample> out;
  out.reserve(devices_.size());
  for (size_t i = 0; i < devices_.size(); ++i) {
    nvmlDevice_t h = Dev(devices_[i].gpu);
    GpuSample s;
    s.index = static_cast<int>(i);
    auto lost = [&](nvmlReturn_t r) {
      if (r == NVML_ERROR_GPU_IS_LOST) s.lost = true;
      return r == NVML_SUCCESS;
    };
    nvmlUtilization_t util{};
    if (a.utilization != nullptr && devices_[i].mig == nullptr && lost(a.utilization(h, &util))) {
      s.utilization_pct = static_cast<int>(std::min(util.gpu, 100u));
    }
    nvmlMemory_t mem{};
    nvmlDevice_t m = devices_[i].mig != nullptr ? Dev(devices_[i].mig) : h;
    if (lost(a.memory(m, &mem))) s.memory_used_bytes = static_cast<int64_t>(mem.used);
    unsigned int temp = 0, milliwatts = 0;
    if (a.temperature != nullptr && lost(a.temperature(h, NVML_TEMPERATURE_GPU, &temp))) {
      s.temperature_c = static_cast<int>(temp);
    }
    if (a.power != nullptr && lost(a.power(h, &milliwatts)))
      s.power_w = static_cast<int>(milliwatts / 1000);
    unsigned long long ecc = 0;
    if (a.ecc != nullptr &&
        lost(a.ecc(h, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &ecc))) {
      s.ecc_uncorrected = static_cast<int64_t>(ecc);
    }
    out.push_back(s);
  }
  return out;
}

Status NvmlGpuBackend::CheckGpu(int index) {
  if (index < 0 || static_cast<size_t>(index) >= devices_.size())
    return NotFound("no GPU " + std::to_string(index));
  const Api& a = *api_;
  nvmlDevice_t h = Dev(devices_[index].gpu);
  nvmlMemory_t mem{};
  if (nvmlReturn_t r = a.memory(h, &mem); r != NVML_SUCCESS)
    return Unavailable("the GPU does not answer: " + a.Error(r));
  // Functions a GPU or driver lacks (NOT_SUPPORTED, or absent from an older library) say nothing.
  int pages_pending = 0;
  if (a.retired_pending != nullptr && a.retired_pending(h, &pages_pending) == NVML_SUCCESS &&
      pages_pending != 0) {
    return Unavailable("retired memory pages wait for a GPU reset");
  }
  unsigned int corr = 0, unc = 0, rows_pending = 0, failed = 0;
  if (a.remapped_rows != nullptr &&
      a.remapped_rows(h, &corr, &unc, &rows_pending, &failed) == NVML_SUCCESS) {
    if (failed != 0)
      return Unavailable("a memory row could not be remapped: the GPU needs service");
    if (rows_pending != 0) return Unavailable("remapped memory rows wait for a GPU reset");
  }
  return Status::Ok();
}

std::vector<XidEvent> NvmlGpuBackend::PollXids() {
  std::vector<XidEvent> out;
  if (events_ == nullptr) return out;
  for (int n = 0; n < 1024; ++n) {
    nvmlEventData_t data{};
    if (api_->event_wait(static_cast<nvmlEventSet_t>(events_), &data, 0) != NVML_SUCCESS) break;
    if ((data.eventType & nvmlEventTypeXidCriticalError) == 0) continue;
    // The first device Discover made of that physical GPU.
    for (size_t i = 0; i < devices_.size(); ++i) {
      if (devices_[i].gpu == data.device) {
        out.push_back(
            XidEvent{.gpu = static_cast<int>(i), .xid = static_cast<int>(data.eventData)});
        break;
      }
    }
  }
  return out;
}

// ---- MIG instances made and destroyed (issue 42) ----

namespace {

// Profile indices asked of NVML: its NVML_GPU_INSTANCE_PROFILE_COUNT grows with drivers (10 in
// 12.2, more since), and an index past the last answers NVML_ERROR_INVALID_ARGUMENT.
constexpr unsigned int kProfilesAsked = 32;
constexpr unsigned int kMaxInstances = 8;  // GPU (or compute) instances of one profile, at most

// A GPU instance profile a GPU has.
struct GiProfile {
  std::string name;  // "3g.40gb"
  unsigned int id = 0;
  unsigned int compute = 0;  // compute slices
};

// A GPU instance a GPU has.
struct GiHere {
  MigSlice slice;
  nvmlGpuInstance_t handle = nullptr;
  unsigned int compute = 0;
};

std::string GpuWords(int physical) { return "GPU " + std::to_string(physical); }

Result<std::vector<GiProfile>> GiProfiles(const Api& a, nvmlDevice_t h, int physical) {
  unsigned int current = NVML_DEVICE_MIG_DISABLE, pending = NVML_DEVICE_MIG_DISABLE;
  if (nvmlReturn_t r = a.mig_mode(h, &current, &pending); r != NVML_SUCCESS)
    return Err(Unavailable(GpuWords(physical) + ": nvmlDeviceGetMigMode: " + a.Error(r)));
  if (current != NVML_DEVICE_MIG_ENABLE)
    return Err(InvalidArgument(GpuWords(physical) + " is not in MIG mode"));
  std::vector<GiProfile> out;
  for (unsigned int index = 0; index < kProfilesAsked; ++index) {
    nvmlGpuInstanceProfileInfo_v2_t info{};
    info.version = nvmlGpuInstanceProfileInfo_v2;
    nvmlReturn_t r = a.gi_profile(h, index, &info);
    if (r == NVML_ERROR_INVALID_ARGUMENT) break;  // past the driver's last profile
    if (r == NVML_ERROR_NOT_SUPPORTED) continue;  // not on this GPU
    if (r != NVML_SUCCESS) {
      return Err(Unavailable(GpuWords(physical) +
                             ": nvmlDeviceGetGpuInstanceProfileInfoV: " + a.Error(r)));
    }
    std::string name(info.name, strnlen(info.name, sizeof info.name));
    if (name.starts_with("MIG ")) name = name.substr(4);
    out.push_back(GiProfile{.name = name, .id = info.id, .compute = info.sliceCount});
  }
  return out;
}

Result<std::vector<GiHere>> GisHere(const Api& a, nvmlDevice_t h, int physical,
                                    const std::vector<GiProfile>& profiles) {
  std::vector<GiHere> out;
  for (const GiProfile& p : profiles) {
    nvmlGpuInstance_t gis[kMaxInstances] = {};
    unsigned int count = kMaxInstances;
    if (nvmlReturn_t r = a.gi_list(h, p.id, gis, &count); r != NVML_SUCCESS) {
      return Err(Unavailable(GpuWords(physical) + ": nvmlDeviceGetGpuInstances(" + p.name +
                             "): " + a.Error(r)));
    }
    for (unsigned int k = 0; k < std::min(count, kMaxInstances); ++k) {
      nvmlGpuInstanceInfo_t info{};
      if (nvmlReturn_t r = a.gi_info(gis[k], &info); r != NVML_SUCCESS)
        return Err(Unavailable(GpuWords(physical) + ": nvmlGpuInstanceGetInfo: " + a.Error(r)));
      out.push_back(
          GiHere{.slice = {.profile = p.name, .start = static_cast<int>(info.placement.start)},
                 .handle = gis[k],
                 .compute = p.compute});
    }
  }
  std::sort(out.begin(), out.end(), [](const GiHere& x, const GiHere& y) {
    return x.slice.start != y.slice.start ? x.slice.start < y.slice.start
                                          : x.slice.profile < y.slice.profile;
  });
  return out;
}

std::string SliceWords(int physical, const MigSlice& s) {
  return GpuWords(physical) + "'s " + s.profile + " at memory slice " + std::to_string(s.start);
}

// Destroys a GPU instance's compute instances, then it.
Status DestroyGi(const Api& a, int physical, const GiHere& gi) {
  for (unsigned int index = 0; index < kProfilesAsked; ++index) {
    nvmlComputeInstanceProfileInfo_t info{};
    nvmlReturn_t r =
        a.ci_profile(gi.handle, index, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info);
    if (r == NVML_ERROR_INVALID_ARGUMENT) break;
    if (r != NVML_SUCCESS) continue;  // not a profile of this GPU instance
    nvmlComputeInstance_t cis[kMaxInstances] = {};
    unsigned int count = kMaxInstances;
    if (a.ci_list(gi.handle, info.id, cis, &count) != NVML_SUCCESS) continue;
    for (unsigned int k = 0; k < std::min(count, kMaxInstances); ++k) {
      if (nvmlReturn_t d = a.ci_destroy(cis[k]); d != NVML_SUCCESS) {
        return d == NVML_ERROR_IN_USE
                   ? Conflict(SliceWords(physical, gi.slice) + " is in use: a process runs on it")
                   : Unavailable(SliceWords(physical, gi.slice) +
                                 ": nvmlComputeInstanceDestroy: " + a.Error(d));
      }
    }
  }
  if (nvmlReturn_t r = a.gi_destroy(gi.handle); r != NVML_SUCCESS) {
    return r == NVML_ERROR_IN_USE ? Conflict(SliceWords(physical, gi.slice) + " is in use")
                                  : Unavailable(SliceWords(physical, gi.slice) +
                                                ": nvmlGpuInstanceDestroy: " + a.Error(r));
  }
  return Status::Ok();
}

// Creates a GPU instance of `p` at `start` and its whole compute instance; on a failure, none.
Status CreateGi(const Api& a, nvmlDevice_t h, int physical, const GiProfile& p, int start) {
  const MigSlice slice{.profile = p.name, .start = start};
  nvmlGpuInstancePlacement_t placements[kMaxInstances] = {};
  unsigned int count = kMaxInstances;
  if (nvmlReturn_t r = a.gi_placements(h, p.id, placements, &count); r != NVML_SUCCESS) {
    return Unavailable(GpuWords(physical) + ": nvmlDeviceGetGpuInstancePossiblePlacements(" +
                       p.name + "): " + a.Error(r));
  }
  const nvmlGpuInstancePlacement_t* at = nullptr;
  std::string allowed;
  for (unsigned int k = 0; k < std::min(count, kMaxInstances); ++k) {
    if (static_cast<int>(placements[k].start) == start) at = &placements[k];
    allowed += (allowed.empty() ? "" : ", ") + std::to_string(placements[k].start);
  }
  if (at == nullptr) {
    return InvalidArgument(GpuWords(physical) + "'s " + p.name + " cannot start at memory slice " +
                           std::to_string(start) + " (it may start at " + allowed + ")");
  }
  nvmlGpuInstance_t gi = nullptr;
  if (nvmlReturn_t r = a.gi_create(h, p.id, at, &gi); r != NVML_SUCCESS) {
    return r == NVML_ERROR_INSUFFICIENT_RESOURCES
               ? Conflict(SliceWords(physical, slice) +
                          ": its slices are taken (NVML: " + a.Error(r) + ")")
               : Unavailable(SliceWords(physical, slice) +
                             ": nvmlDeviceCreateGpuInstanceWithPlacement: " + a.Error(r));
  }
  // Its whole compute instance: the compute profile of as many slices as it has.
  Status made = Unavailable(SliceWords(physical, slice) + ": no compute instance profile of " +
                            std::to_string(p.compute) + " slices");
  for (unsigned int index = 0; index < kProfilesAsked; ++index) {
    nvmlComputeInstanceProfileInfo_t info{};
    nvmlReturn_t r = a.ci_profile(gi, index, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info);
    if (r == NVML_ERROR_INVALID_ARGUMENT) break;
    if (r != NVML_SUCCESS || info.sliceCount != p.compute) continue;
    nvmlComputeInstance_t ci = nullptr;
    r = a.ci_create(gi, info.id, &ci);
    made = r == NVML_SUCCESS ? Status::Ok()
                             : Unavailable(SliceWords(physical, slice) +
                                           ": nvmlGpuInstanceCreateComputeInstance: " + a.Error(r));
    break;
  }
  if (!made.ok()) (void)a.gi_destroy(gi);  // no GPU instance without its compute instance
  return made;
}

}  // namespace

std::vector<std::string> NvmlGpuBackend::PciAddresses() const {
  std::vector<std::string> out;
  for (const Device& d : devices_) out.push_back(d.bus);
  return out;
}

void* NvmlGpuBackend::PhysicalHandle(int physical) const {
  if (physical >= 0 && static_cast<size_t>(physical) < physical_.size()) return physical_[physical];
  nvmlDevice_t h = nullptr;  // before Discover: NVML's own numbering
  if (physical < 0 || api_->handle(static_cast<unsigned int>(physical), &h) != NVML_SUCCESS)
    return nullptr;
  return h;
}

Result<std::vector<MigSlice>> NvmlGpuBackend::MigSlices(int physical) {
  const Api& a = *api_;
  if (!a.CanChangeMig())
    return Err(Unavailable("this NVML lacks the MIG instance functions (a driver too old)"));
  nvmlDevice_t h = Dev(PhysicalHandle(physical));
  if (h == nullptr) return Err(NotFound(GpuWords(physical) + ": no such GPU"));
  ASSIGN_OR_RETURN(std::vector<GiProfile> profiles, GiProfiles(a, h, physical));
  ASSIGN_OR_RETURN(std::vector<GiHere> here, GisHere(a, h, physical, profiles));
  std::vector<MigSlice> out;
  for (GiHere& g : here) out.push_back(std::move(g.slice));
  return out;
}

Status NvmlGpuBackend::ChangeMig(int physical, const std::vector<MigSlice>& destroy,
                                 const std::vector<MigSlice>& create) {
  const Api& a = *api_;
  if (!a.CanChangeMig())
    return Unavailable("this NVML lacks the MIG instance functions (a driver too old)");
  nvmlDevice_t h = Dev(PhysicalHandle(physical));
  if (h == nullptr) return NotFound(GpuWords(physical) + ": no such GPU");
  ASSIGN_OR_RETURN(std::vector<GiProfile> profiles, GiProfiles(a, h, physical));
  auto profile = [&](const std::string& name) -> const GiProfile* {
    for (const GiProfile& p : profiles) {
      if (p.name == name) return &p;
    }
    return nullptr;
  };
  // Every name known before anything is done.
  for (const auto* list : {&destroy, &create}) {
    for (const MigSlice& s : *list) {
      if (profile(s.profile) == nullptr)
        return InvalidArgument(GpuWords(physical) + " has no MIG profile " + s.profile);
    }
  }
  ASSIGN_OR_RETURN(std::vector<GiHere> here, GisHere(a, h, physical, profiles));
  for (const MigSlice& s : destroy) {
    auto it = std::find_if(here.begin(), here.end(), [&](const GiHere& g) { return g.slice == s; });
    if (it == here.end()) return NotFound(SliceWords(physical, s) + ": no such instance");
    RETURN_IF_ERROR(DestroyGi(a, physical, *it));
    here.erase(it);
  }
  for (const MigSlice& s : create)
    RETURN_IF_ERROR(CreateGi(a, h, physical, *profile(s.profile), s.start));
  return Status::Ok();
}

}  // namespace baton::agent
