#include "core/node.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <utility>

#include "core/mig.h"
#include "core/names.h"

namespace baton {

namespace {
constexpr std::array<std::string_view, 3> kGpuHealthNames = {"ok", "reset", "drain"};
}  // namespace

std::string_view GpuHealthStateName(GpuHealthState s) { return EnumName(kGpuHealthNames, s); }

Result<GpuHealthState> ParseGpuHealthState(std::string_view text) {
  return ParseEnum<GpuHealthState>(kGpuHealthNames, "state", text);
}

namespace {

// The steps of ParseGpuSpec. Each fails with InvalidArgument(reason) carrying only the reason;
// ParseGpuSpec adds the text and the expected form.

// The COUNT of COUNTxTYPE.
Result<int> ParseGpuCount(std::string_view digits) {
  int count = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return Err(InvalidArgument("COUNT is not a number"));
    count = count * 10 + (c - '0');
    if (count > 1024) return Err(InvalidArgument("more than 1024 GPUs"));
  }
  return count;
}

// The TYPE of COUNTxTYPE, and the memory it implies: from a "-<N>GB" suffix; without one, a
// type-specific default.
Status ParseGpuModel(std::string_view model, GpuSpec* spec) {
  spec->model = std::string(model);
  if (spec->model.empty() || spec->model.size() > 64) return InvalidArgument("missing TYPE");
  for (char c : spec->model) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return InvalidArgument("TYPE has a character other than letters, digits, '-', '_', '.'");
    }
  }
  size_t dash = spec->model.rfind('-');
  if (dash != std::string::npos && spec->model.size() > dash + 3 &&
      spec->model.compare(spec->model.size() - 2, 2, "GB") == 0) {
    int64_t gb = 0;
    for (size_t i = dash + 1; i + 2 < spec->model.size(); ++i) {
      char c = spec->model[i];
      if (c < '0' || c > '9') return InvalidArgument("memory suffix is not a number of GB");
      gb = gb * 10 + (c - '0');
      if (gb > 4096) return InvalidArgument("more than 4096GB per GPU");
    }
    spec->memory_bytes = gb << 30;
  } else {
    spec->memory_bytes = int64_t{16} << 30;
  }
  return Status::Ok();
}

// The topology a type and count imply when no topo= option says otherwise.
GpuTopology DefaultGpuTopology(const std::string& model, int count) {
  bool sxm_class = model.starts_with("H100") || model.starts_with("H200") ||
                   model.starts_with("A100") || model.starts_with("B200") ||
                   model.starts_with("V100");
  if (model.starts_with("V100") && count == 8) return GpuTopology::kCubemesh;  // DGX-1
  if (!sxm_class) return GpuTopology::kPcie;
  return count >= 8 ? GpuTopology::kNvswitch : GpuTopology::kPairs;
}

// One item of a mig= layout, PROFILE[*N], appended N times to spec->mig; adds the compute
// slices and GB it uses to the totals.
Status ParseMigItem(std::string_view item, GpuSpec* spec, int* compute, int64_t* memory_gb) {
  int times = 1;
  if (size_t star = item.find('*'); star != std::string_view::npos) {
    std::string_view n = item.substr(star + 1);
    if (n.empty() || n.size() > 1 || n[0] < '1' || n[0] > '7')
      return InvalidArgument("MIG count after '*' must be 1-7");
    times = n[0] - '0';
    item = item.substr(0, star);
  }
  // <C>g.<M>gb with C in 1-7.
  size_t g = item.find("g.");
  if (g != 1 || item[0] < '1' || item[0] > '7' || item.size() < 5 || !item.ends_with("gb")) {
    return InvalidArgument("MIG profile \"" + std::string(item.substr(0, 16)) +
                           "\" is not <C>g.<M>gb, e.g. 1g.10gb");
  }
  int64_t gb = 0;
  for (char c : item.substr(3, item.size() - 5)) {
    if (c < '0' || c > '9' || gb > 4096)
      return InvalidArgument("MIG profile memory is not a number of GB");
    gb = gb * 10 + (c - '0');
  }
  if (gb == 0) return InvalidArgument("MIG profile memory is 0");
  *compute += (item[0] - '0') * times;
  *memory_gb += gb * times;
  for (int i = 0; i < times; ++i) spec->mig.emplace_back(item);
  return Status::Ok();
}

// The value of mig=: PROFILE+PROFILE+..., which must fit one GPU.
Status ParseMigLayout(std::string_view layout, GpuSpec* spec) {
  int compute = 0;
  int64_t memory_gb = 0;
  while (!layout.empty()) {
    size_t plus = layout.find('+');
    std::string_view item = layout.substr(0, plus);
    layout = plus == std::string_view::npos ? std::string_view() : layout.substr(plus + 1);
    RETURN_IF_ERROR(ParseMigItem(item, spec, &compute, &memory_gb));
  }
  if (spec->mig.empty()) return InvalidArgument("mig= names no profile");
  if (compute > 7)
    return InvalidArgument("MIG layout uses " + std::to_string(compute) +
                           " compute slices; a GPU has 7");
  if ((memory_gb << 30) > spec->memory_bytes) {
    return InvalidArgument("MIG layout uses " + std::to_string(memory_gb) + "GB; the GPU has " +
                           std::to_string(spec->memory_bytes >> 30) + "GB");
  }
  // Where the hardware's geometry knows every profile on this GPU, they must fit its memory
  // slices together too, as a real GPU's would (core/mig.h); each gets its place.
  for (const std::string& p : spec->mig) {
    if (!MigGeometryOf(p, spec->memory_bytes)) return Status::Ok();
  }
  auto starts = PlaceMig(spec->mig, spec->memory_bytes);
  if (!starts) return InvalidArgument("MIG layout: " + starts.error().message());
  spec->mig_starts = std::move(*starts);
  return Status::Ok();
}

// The options after the first ':', each at most once: topo=... and mig=....
Status ParseGpuOptions(std::string_view options, GpuSpec* spec) {
  bool seen_topo = false, seen_mig = false;
  while (!options.empty()) {
    size_t next = options.find(':');
    std::string_view opt = options.substr(0, next);
    options = next == std::string_view::npos ? std::string_view() : options.substr(next + 1);
    if ((opt.starts_with("topo=") && std::exchange(seen_topo, true)) ||
        (opt.starts_with("mig=") && std::exchange(seen_mig, true))) {
      return InvalidArgument("option given twice");
    }
    if (opt.starts_with("topo=")) {
      // nvlink is what NVML finds, not a layout a SPEC can simulate.
      auto topo = ParseEnum<GpuTopology>(kGpuTopologyNames, "topo", opt.substr(5));
      if (!topo || *topo == GpuTopology::kUnknown || *topo == GpuTopology::kNvlink) {
        return InvalidArgument("unknown topology");
      }
      spec->topology = *topo;
    } else if (opt.starts_with("mig=")) {
      RETURN_IF_ERROR(ParseMigLayout(opt.substr(4), spec));
    } else {
      return InvalidArgument("unknown option \"" + std::string(opt.substr(0, 16)) + "\"");
    }
  }
  return Status::Ok();
}

Result<GpuSpec> ParseGpuSpecParts(std::string_view text) {
  GpuSpec spec;
  std::string_view rest = text;
  size_t colon = rest.find(':');
  std::string_view options;
  if (colon != std::string_view::npos) {
    options = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
  }
  size_t x = rest.find('x');
  if (x == 0 || x == std::string_view::npos) return Err(InvalidArgument("missing COUNTx"));
  ASSIGN_OR_RETURN(spec.count, ParseGpuCount(rest.substr(0, x)));
  RETURN_IF_ERROR(ParseGpuModel(rest.substr(x + 1), &spec));
  spec.topology = DefaultGpuTopology(spec.model, spec.count);
  RETURN_IF_ERROR(ParseGpuOptions(options, &spec));
  return spec;
}

}  // namespace

Result<GpuSpec> ParseGpuSpec(std::string_view text) {
  Result<GpuSpec> spec = ParseGpuSpecParts(text);
  if (!spec) {
    return Err(InvalidArgument(
        "gpus: " + spec.error().message() + " (got \"" + std::string(text.substr(0, 64)) +
        "\"; use COUNTxTYPE[:topo=nvswitch|pairs|cubemesh|pcie][:mig=PROFILE+...], "
        "e.g. 8xH100-80GB)"));
  }
  return spec;
}

bool IsValidNodeName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  if (!std::isalnum(static_cast<unsigned char>(name[0]))) return false;  // no ".", "..", "-x"
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.')
      return false;
  }
  return true;
}

namespace {
uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}
}  // namespace

std::vector<Gpu> SimulatedGpus(const GpuSpec& spec_, std::string_view node_name_) {
  std::vector<Gpu> gpus;
  uint64_t seed = Fnv1a(std::string(node_name_) + "/" + spec_.model);
  auto uuid_of = [&](const char* prefix, uint64_t salt, int i) {
    char uuid[80];
    uint64_t a = seed ^ (salt * 0x9E3779B97F4A7C15ULL);
    std::snprintf(uuid, sizeof uuid, "%s-%08x-%04x-%04x-%04x-%012llx", prefix,
                  static_cast<unsigned>(a >> 32), static_cast<unsigned>(a >> 16) & 0xffff,
                  static_cast<unsigned>(a) & 0xffff, i,
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
    switch (spec_.topology) {
      case GpuTopology::kNvswitch:
        g.island = 0;
        break;
      case GpuTopology::kPairs:
        g.island = i / 2;
        break;
      case GpuTopology::kCubemesh:
        g.island = i / 4;
        break;
      default:
        g.island = i;
    }
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
      m.mig_start = k < spec_.mig_starts.size() ? spec_.mig_starts[k] : -1;
      m.model = MigModel(spec_.model, m.mig_profile);
      size_t dot = m.mig_profile.find('.');
      m.memory_bytes = std::stoll(m.mig_profile.substr(dot + 1, m.mig_profile.size() - dot - 3))
                       << 30;
      m.island = 1'000'000 - 1 - i;  // instances of one GPU stay together, apart from other GPUs
      gpus.push_back(std::move(m));
    }
  }
  return gpus;
}

std::string MigModel(std::string_view gpu_model, std::string_view profile) {
  return std::string(gpu_model) + "-MIG-" + std::string(profile);
}

std::vector<Gpu> MigPlaces(const std::vector<Gpu>& found, const std::vector<MigParent>& parents,
                           std::vector<int>* inner) {
  std::vector<Gpu> out;
  std::vector<int> from;
  auto parent_of = [&](int physical) -> const MigParent* {
    for (const MigParent& p : parents)
      if (p.physical == physical) return &p;
    return nullptr;
  };
  // The physical GPUs in order: those found and those in MIG mode (which may have no instance).
  std::vector<int> physicals;
  for (const Gpu& g : found) physicals.push_back(g.physical >= 0 ? g.physical : g.index);
  for (const MigParent& p : parents) physicals.push_back(p.physical);
  std::sort(physicals.begin(), physicals.end());
  physicals.erase(std::unique(physicals.begin(), physicals.end()), physicals.end());
  for (int physical : physicals) {
    const MigParent* parent = parent_of(physical);
    const int first = static_cast<int>(out.size());
    if (parent == nullptr) {
      for (size_t i = 0; i < found.size(); ++i) {
        const Gpu& g = found[i];
        if ((g.physical >= 0 ? g.physical : g.index) != physical) continue;
        out.push_back(g);
        out.back().index = static_cast<int>(out.size()) - 1;
        out.back().physical = physical;
        from.push_back(static_cast<int>(i));
      }
      continue;
    }
    out.resize(out.size() + kMigPlaces);
    from.resize(out.size(), -1);
    std::vector<size_t> unplaced;
    for (size_t i = 0; i < found.size(); ++i) {
      const Gpu& g = found[i];
      if (g.physical != physical || g.mig_profile.empty()) continue;
      if (g.mig_start < 0 || g.mig_start >= kMigPlaces || from[first + g.mig_start] >= 0) {
        unplaced.push_back(i);
        continue;
      }
      out[first + g.mig_start] = g;
      from[first + g.mig_start] = static_cast<int>(i);
    }
    for (size_t i : unplaced) {
      for (int k = 0; k < kMigPlaces; ++k) {
        if (from[first + k] >= 0) continue;
        out[first + k] = found[i];
        from[first + k] = static_cast<int>(i);
        break;
      }
    }
    for (int k = 0; k < kMigPlaces; ++k) {
      Gpu& g = out[first + k];
      g.index = first + k;
      if (from[first + k] >= 0) continue;
      g = Gpu{.index = first + k,
              .model = parent->model,
              .physical = physical,
              .mig_start = k,
              .vacant = true};
    }
  }
  if (inner != nullptr) *inner = std::move(from);
  return out;
}

bool EqualNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

bool GpuTypeMatchesNamed(std::string_view model, std::string_view mig_profile,
                         std::string_view wanted) {
  if (!mig_profile.empty()) {
    return !wanted.empty() && (EqualNoCase(wanted, mig_profile) || EqualNoCase(wanted, model));
  }
  if (wanted.empty()) return true;
  if (wanted.size() > model.size()) return false;
  for (size_t i = 0; i < wanted.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(model[i])) !=
        std::tolower(static_cast<unsigned char>(wanted[i]))) {
      return false;
    }
  }
  return wanted.size() == model.size() || model[wanted.size()] == '-';
}

std::map<std::string, GpuModelCount> CountGpuModels(const std::vector<const NodeInfo*>& nodes,
                                                    std::string_view gpu_type) {
  std::map<std::string, GpuModelCount> kinds;
  for (const NodeInfo* n : nodes) {
    std::map<std::string, int> here;
    for (const Gpu& g : n->gpus) {
      if (g.vacant || (!gpu_type.empty() && !GpuTypeMatches(g, gpu_type))) continue;
      GpuModelCount& k = kinds[g.model];
      k.memory = std::max(k.memory, g.memory_bytes);
      k.total += 1;
      here[g.model] += 1;
    }
    for (const auto& [model, count] : here) {
      kinds[model].per_node = std::max(kinds[model].per_node, count);
      kinds[model].nodes += 1;
    }
  }
  return kinds;
}

}  // namespace baton
