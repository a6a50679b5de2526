// GPUs from NVIDIA's management library: discovery (UUID, name, memory, PCI bus id, NUMA node,
// NVLink islands, PCIe switches, MIG instances), MIG instances made and destroyed, gauges
// (utilisation, memory, temperature, power, uncorrected ECC errors) and XID events. NVML is loaded
// with dlopen when the agent starts (agent/nvml_api.h), so the same binary runs on machines without
// a driver; the tests load a double of the library through the same path.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "agent/gpu_backend.h"
#include "core/status.h"

namespace baton::agent {

struct NvmlOptions {
  // The library to load: NVML's soname by default; $BATON_NVML_LIBRARY overrides it (tests).
  std::string library;
  // Where each GPU sits (NUMA node, PCIe switch) comes from hwloc: this machine's topology, or
  // an hwloc XML export (tests).
  std::string topology_xml;
};

class NvmlGpuBackend : public GpuBackend {
 public:
  // Loads NVML and initialises it; an error names the library and what failed ("cannot load
  // libnvidia-ml.so.1: ...", "nvmlInit: Driver Not Loaded").
  static Result<std::unique_ptr<NvmlGpuBackend>> Open(NvmlOptions options = {});
  ~NvmlGpuBackend() override;

  GpuBackendKind kind() const override { return GpuBackendKind::kNvml; }
  std::vector<Gpu> Discover() override;
  GpuTopology topology() const override { return topology_; }
  std::vector<GpuSample> Sample(const std::vector<bool>& busy) override;
  std::vector<XidEvent> PollXids() override;
  // The GPU answers NVML and has no retired pages or remapped rows waiting for a reset.
  Status CheckGpu(int index) override;
  std::vector<std::string> PciAddresses() const override;
  std::vector<MigParent> MigParents() override { return mig_parents_; }
  Result<std::vector<MigSlice>> MigSlices(int physical) override;
  Status ChangeMig(int physical, const std::vector<MigSlice>& destroy,
                   const std::vector<MigSlice>& create) override;
  // The driver's version, "" if NVML does not say.
  const std::string& driver() const { return driver_; }

  struct Api;  // the resolved functions (nvml_backend.cc)

 private:
  NvmlGpuBackend() = default;

  void* handle_ = nullptr;  // from dlopen
  std::unique_ptr<Api> api_;
  NvmlOptions options_;
  std::string driver_;
  GpuTopology topology_ = GpuTopology::kPcie;
  // Per device Discover reported: the physical GPU's handle and index; the MIG handle if any.
  struct Device {
    void* gpu = nullptr;
    void* mig = nullptr;
    int physical = 0;
    std::string bus;  // a whole GPU's PCI address, sysfs form; "" for a MIG instance
  };
  // Physical GPU `physical`'s handle (Discover's numbering, else NVML's); null if none.
  void* PhysicalHandle(int physical) const;
  std::vector<Device> devices_;
  std::vector<void*> physical_;         // physical GPU handles, by NVML index
  std::vector<MigParent> mig_parents_;  // the GPUs Discover found in MIG mode
  void* events_ = nullptr;              // the event set XIDs arrive on
};

// Baton's name for a GPU model from NVML's name and memory: "NVIDIA H100 80GB HBM3" with 80 GiB
// → "H100-80GB", "Tesla V100-SXM2-32GB" → "V100-32GB", "NVIDIA L40S" with 45 GiB → "L40S-48GB".
// The memory is the name's own "NNGB" when it has one, else the marketed size at or just
// above what the device reports.
std::string ModelFromNvmlName(const std::string& name, int64_t memory_bytes);

}  // namespace baton::agent
