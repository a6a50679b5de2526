#include "agent/host_topology.h"

#include <dlfcn.h>
#include <hwloc.h>

#include <cctype>
#include <cstdio>
#include <map>
#include <numeric>
#include <set>

// hwloc is loaded when a topology is first read (dlopen), not linked: linked, it and the libudev
// it brings were mapped and relocated by every `baton` command, about 0.7 ms of each start.
// What this file and hwloc.h's inline helpers call is defined below, forwarding to the library.
// clang-format off
#define BATON_HWLOC_FUNCTIONS(X)                                                             \
  X(hwloc_topology_init) X(hwloc_topology_set_xml) X(hwloc_topology_set_io_types_filter)     \
  X(hwloc_topology_load) X(hwloc_topology_destroy) X(hwloc_distances_get_by_name)            \
  X(hwloc_distances_release) X(hwloc_get_type_depth) X(hwloc_get_nbobjs_by_depth)            \
  X(hwloc_get_obj_by_depth) X(hwloc_bitmap_first) X(hwloc_bitmap_isincluded)                 \
  X(hwloc_bitmap_iszero)
// clang-format on

namespace {

struct HwlocLibrary {
#define BATON_HWLOC_MEMBER(fn) decltype(&::fn) fn = nullptr;
  BATON_HWLOC_FUNCTIONS(BATON_HWLOC_MEMBER)
#undef BATON_HWLOC_MEMBER
  std::string error;  // why it is not there; "" once loaded
};

// The soname of hwloc 2 (Debian: the libhwloc15 package).
const HwlocLibrary& Hwloc() {
  static const HwlocLibrary lib = [] {
    HwlocLibrary l;
    void* handle = dlopen("libhwloc.so.15", RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      l.error = std::string("hwloc: cannot load libhwloc.so.15 (") +
                (why != nullptr ? why : "not found") +
                "): install it (Debian: apt-get install libhwloc15)";
      return l;
    }
    std::string missing;
#define BATON_HWLOC_RESOLVE(fn)                                \
  l.fn = reinterpret_cast<decltype(l.fn)>(dlsym(handle, #fn)); \
  if (l.fn == nullptr) missing += std::string(missing.empty() ? "" : ", ") + #fn;
    BATON_HWLOC_FUNCTIONS(BATON_HWLOC_RESOLVE)
#undef BATON_HWLOC_RESOLVE
    if (!missing.empty()) l.error = "hwloc: libhwloc.so.15 lacks " + missing;
    return l;
  }();
  return lib;
}

}  // namespace

// Called only once Hwloc() has loaded (LoadHostTopology checks first).
extern "C" {
int hwloc_topology_init(hwloc_topology_t* t) { return Hwloc().hwloc_topology_init(t); }
int hwloc_topology_set_xml(hwloc_topology_t t, const char* path) {
  return Hwloc().hwloc_topology_set_xml(t, path);
}
int hwloc_topology_set_io_types_filter(hwloc_topology_t t, enum hwloc_type_filter_e f) {
  return Hwloc().hwloc_topology_set_io_types_filter(t, f);
}
int hwloc_topology_load(hwloc_topology_t t) { return Hwloc().hwloc_topology_load(t); }
void hwloc_topology_destroy(hwloc_topology_t t) { Hwloc().hwloc_topology_destroy(t); }
int hwloc_distances_get_by_name(hwloc_topology_t t, const char* name, unsigned* nr,
                                struct hwloc_distances_s** d, unsigned long flags) {
  return Hwloc().hwloc_distances_get_by_name(t, name, nr, d, flags);
}
void hwloc_distances_release(hwloc_topology_t t, struct hwloc_distances_s* d) {
  Hwloc().hwloc_distances_release(t, d);
}
int hwloc_get_type_depth(hwloc_topology_t t, hwloc_obj_type_t type) {
  return Hwloc().hwloc_get_type_depth(t, type);
}
unsigned hwloc_get_nbobjs_by_depth(hwloc_topology_t t, int depth) {
  return Hwloc().hwloc_get_nbobjs_by_depth(t, depth);
}
hwloc_obj_t hwloc_get_obj_by_depth(hwloc_topology_t t, int depth, unsigned idx) {
  return Hwloc().hwloc_get_obj_by_depth(t, depth, idx);
}
int hwloc_bitmap_first(hwloc_const_bitmap_t b) { return Hwloc().hwloc_bitmap_first(b); }
int hwloc_bitmap_isincluded(hwloc_const_bitmap_t sub, hwloc_const_bitmap_t super) {
  return Hwloc().hwloc_bitmap_isincluded(sub, super);
}
int hwloc_bitmap_iszero(hwloc_const_bitmap_t b) { return Hwloc().hwloc_bitmap_iszero(b); }
}

namespace baton::agent {
namespace {

constexpr unsigned kNvidia = 0x10de;

// "0000:34:00.0" in lower case with a 4-digit domain, whatever form it came in.
std::string NormalBusId(std::string_view id) {
  std::string s(id);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  size_t colon = s.find(':');
  if (colon != std::string::npos && colon > 4) s = s.substr(colon - 4);
  return s;
}

std::string BusId(const hwloc_obj_t pci) {
  char buf[32];
  const auto& a = pci->attr->pcidev;
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%01x", a.domain, a.bus, a.dev, a.func);
  return buf;
}

bool IsNvidiaGpu(hwloc_obj_t o) {
  if (o->type != HWLOC_OBJ_PCI_DEVICE) return false;
  const auto& a = o->attr->pcidev;
  return a.vendor_id == kNvidia && (a.class_id >> 8) == 0x03;  // display or 3D controller
}

// The PCI device an object is or sits under (an OS device's parent), or null.
hwloc_obj_t PciOf(hwloc_obj_t o) {
  for (; o != nullptr; o = o->parent) {
    if (o->type == HWLOC_OBJ_PCI_DEVICE) return o;
  }
  return nullptr;
}

// RAII for the topology handle.
struct Topology {
  hwloc_topology_t t = nullptr;
  ~Topology() {
    if (t != nullptr) hwloc_topology_destroy(t);
  }
};

}  // namespace

const HostGpu* HostTopology::Gpu(std::string_view bus_id) const {
  std::string want = NormalBusId(bus_id);
  for (const auto& g : gpus) {
    if (g.bus_id == want) return &g;
  }
  return nullptr;
}

const HostTopology::Numa* HostTopology::NumaNode(int os_index) const {
  for (const auto& n : numa) {
    if (n.os_index == os_index) return &n;
  }
  return nullptr;
}

std::optional<std::string> HostTopology::CpuListOf(const std::set<int>& nodes) const {
  std::set<int> cpus;
  for (int id : nodes) {
    const Numa* n = NumaNode(id);
    if (n == nullptr || n->cpus.empty()) return std::nullopt;
    cpus.insert(n->cpus.begin(), n->cpus.end());
  }
  if (cpus.empty()) return std::nullopt;
  // Runs of consecutive CPUs as "first-last", the form the kernel's cpulists take.
  std::string out;
  for (auto it = cpus.begin(); it != cpus.end();) {
    int first = *it;
    int last = first;
    while (++it != cpus.end() && *it == last + 1) last = *it;
    if (!out.empty()) out += ',';
    out += std::to_string(first);
    if (last != first) out += '-' + std::to_string(last);
  }
  return out;
}

namespace {

// The steps of LoadHostTopology, over a loaded topology.

void ReadNumaNodes(hwloc_topology_t t, HostTopology* out) {
  for (hwloc_obj_t n = nullptr;
       (n = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, n)) != nullptr;) {
    HostTopology::Numa numa;
    numa.os_index = static_cast<int>(n->os_index);
    numa.memory_bytes = static_cast<int64_t>(n->attr->numanode.local_memory);
    for (hwloc_obj_t pu = nullptr; (pu = hwloc_get_next_obj_inside_cpuset_by_type(
                                        t, n->cpuset, HWLOC_OBJ_PU, pu)) != nullptr;) {
      numa.cpus.push_back(static_cast<int>(pu->os_index));
    }
    out->numa.push_back(std::move(numa));
  }
}

// One NVIDIA GPU's PCI device as a HostGpu; `switches` numbers the PCIe switches in the
// order first seen.
HostGpu ReadGpu(hwloc_topology_t t, hwloc_obj_t o, std::map<hwloc_obj_t, int>* switches) {
  HostGpu g;
  g.bus_id = BusId(o);
  for (hwloc_obj_t child = o->io_first_child; child != nullptr; child = child->next_sibling) {
    if (child->type != HWLOC_OBJ_OS_DEVICE) continue;
    if (const char* m = hwloc_obj_get_info_by_name(child, "GPUModel");
        m != nullptr && g.model.empty())
      g.model = m;
    if (const char* u = hwloc_obj_get_info_by_name(child, "NVIDIAUUID");
        u != nullptr && g.uuid.empty())
      g.uuid = u;
  }
  hwloc_obj_t cpu_side = hwloc_get_non_io_ancestor_obj(t, o);
  if (cpu_side != nullptr && cpu_side->nodeset != nullptr) {
    int first = hwloc_bitmap_first(cpu_side->nodeset);
    g.numa_node = first >= 0 ? first : 0;
  }
  // The switch: the bridge above the GPU's own port (GPU <- downstream port <- upstream
  // port); a GPU straight on a root port has the port itself.
  hwloc_obj_t port = o->parent;
  hwloc_obj_t sw = port;
  if (port != nullptr && port->type == HWLOC_OBJ_BRIDGE && port->parent != nullptr &&
      port->parent->type == HWLOC_OBJ_BRIDGE) {
    sw = port->parent;
  }
  auto [it, added] = switches->emplace(sw, static_cast<int>(switches->size()));
  g.pcie_switch = it->second;
  return g;
}

// Appends the NVIDIA GPUs to out->gpus; returns PCI device -> index in out->gpus.
std::map<hwloc_obj_t, size_t> ReadGpus(hwloc_topology_t t, HostTopology* out) {
  std::map<hwloc_obj_t, size_t> gpu_of;
  std::map<hwloc_obj_t, int> switches;
  for (hwloc_obj_t o = nullptr; (o = hwloc_get_next_pcidev(t, o)) != nullptr;) {
    if (!IsNvidiaGpu(o)) continue;
    HostGpu g = ReadGpu(t, o, &switches);
    gpu_of[o] = out->gpus.size();
    out->gpus.push_back(std::move(g));
  }
  return gpu_of;
}

// NVLink islands from a bandwidth matrix, when hwloc has one: GPUs with bandwidth between
// them, directly or through NVSwitches (NVIDIA PCI devices that are not GPUs), share an
// island. Links to CPUs (IBM POWER's NVLink to the processor) join nothing.
void SetNvlinkIslands(hwloc_topology_t t, const std::map<hwloc_obj_t, size_t>& gpu_of,
                      HostTopology* out) {
  unsigned nr = 1;
  hwloc_distances_s* dist = nullptr;
  if (hwloc_distances_get_by_name(t, "NVLinkBandwidth", &nr, &dist, 0) != 0 || nr != 1 ||
      dist == nullptr) {
    return;
  }
  const size_t n = dist->nbobjs;
  // Union-find over the GPUs, then one slot per matrix row for the switches.
  std::vector<int> parent(out->gpus.size() + n);
  std::iota(parent.begin(), parent.end(), 0);
  auto root = [&](int x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  std::vector<int> node(n, -1);  // matrix row -> union-find node; -1: not a GPU or switch
  for (size_t i = 0; i < n; ++i) {
    hwloc_obj_t pci = PciOf(dist->objs[i]);
    if (pci == nullptr) continue;
    if (auto it = gpu_of.find(pci); it != gpu_of.end()) {
      node[i] = static_cast<int>(it->second);
    } else if (pci->attr->pcidev.vendor_id == kNvidia) {
      node[i] = static_cast<int>(out->gpus.size() + i);  // an NVSwitch
    }
  }
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      if (i == j || node[i] < 0 || node[j] < 0 || dist->values[i * n + j] == 0) continue;
      parent[root(node[i])] = root(node[j]);
    }
  }
  std::map<int, int> islands;
  for (size_t g = 0; g < out->gpus.size(); ++g) {
    auto [it, added] = islands.emplace(root(static_cast<int>(g)), static_cast<int>(islands.size()));
    out->gpus[g].island = it->second;
  }
  hwloc_distances_release(t, dist);
}

}  // namespace

Result<HostTopology> LoadHostTopology(const std::string& xml) {
  const std::string what = xml.empty() ? std::string("this machine") : xml;
  if (const std::string& error = Hwloc().error; !error.empty()) return Err(Unavailable(error));
  Topology topo;
  if (hwloc_topology_init(&topo.t) != 0) return Err(Internal("hwloc: cannot start"));
  if (!xml.empty() && hwloc_topology_set_xml(topo.t, xml.c_str()) != 0) {
    return Err(InvalidArgument(xml + ": not an hwloc XML topology"));
  }
  // Keep the PCI tree: bridges say which switch a GPU is behind.
  hwloc_topology_set_io_types_filter(topo.t, HWLOC_TYPE_FILTER_KEEP_ALL);
  if (hwloc_topology_load(topo.t) != 0)
    return Err(InvalidArgument("hwloc: cannot load the topology of " + what));

  HostTopology out;
  out.cpus = hwloc_get_nbobjs_by_type(topo.t, HWLOC_OBJ_PU);
  ReadNumaNodes(topo.t, &out);
  std::map<hwloc_obj_t, size_t> gpu_of = ReadGpus(topo.t, &out);
  SetNvlinkIslands(topo.t, gpu_of, &out);
  return out;
}

}  // namespace baton::agent
