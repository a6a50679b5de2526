#include "core/mig.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>

namespace baton {
namespace {

// The hardware's shapes: compute slices, memory slices, where they may start.
struct Shape {
  int compute;
  int size;
  std::vector<int> starts;
};
const std::vector<Shape>& Shapes() {
  static const std::vector<Shape> shapes = {{1, 1, {0, 1, 2, 3, 4, 5, 6}},
                                            {1, 2, {0, 2, 4, 6}},
                                            {2, 2, {0, 2, 4}},
                                            {3, 4, {0, 4}},
                                            {4, 4, {0}},
                                            {7, 8, {0}}};
  return shapes;
}

unsigned Run(int start, int size) { return ((1u << size) - 1u) << start; }

// Tries starts for geometries[order[k]..] beside `used` memory slices; fills `starts`.
bool Search(const std::vector<MigGeometry>& g, const std::vector<size_t>& order, size_t k,
            unsigned used, std::vector<int>& starts) {
  if (k == order.size()) return true;
  const MigGeometry& m = g[order[k]];
  for (int s : m.starts) {
    if ((Run(s, m.size) & used) != 0) continue;
    starts[order[k]] = s;
    if (Search(g, order, k + 1, used | Run(s, m.size), starts)) return true;
  }
  return false;
}

}  // namespace

std::optional<MigProfileName> ParseMigProfile(std::string_view p) {
  MigProfileName out;
  if (p.size() > 3 && p.substr(p.size() - 3) == "+me") {
    out.media = true;
    p.remove_suffix(3);
  }
  const size_t g = p.find("g.");
  if (g == std::string_view::npos || g == 0 || p.size() < g + 5 || p.substr(p.size() - 2) != "gb")
    return std::nullopt;
  auto number = [](std::string_view text, int* value) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
    return ec == std::errc() && end == text.data() + text.size() && *value > 0;
  };
  if (!number(p.substr(0, g), &out.compute) ||
      !number(p.substr(g + 2, p.size() - g - 4), &out.memory_gb))
    return std::nullopt;
  return out;
}

Result<MigGeometry> MigGeometryOf(std::string_view profile, int64_t memory_bytes) {
  const std::string name(profile.substr(0, 64));
  std::optional<MigProfileName> p = ParseMigProfile(profile);
  if (!p) {
    return Err(InvalidArgument("MIG profile '" + name +
                               "': not of the form <C>g.<M>gb (3g.40gb), with +me or not"));
  }
  if (memory_bytes <= 0)
    return Err(InvalidArgument("MIG profile " + name + ": the GPU's memory is not known"));
  const double gib = static_cast<double>(memory_bytes) / static_cast<double>(int64_t{1} << 30);
  const auto size = static_cast<int>(std::lround(p->memory_gb / gib * kMigMemorySlices));
  for (const Shape& s : Shapes()) {
    if (s.compute == p->compute && s.size == size &&
        (!p->media || s.compute == 1 || s.compute == 2))
      return MigGeometry{
          .compute = s.compute, .size = s.size, .starts = s.starts, .media = p->media};
  }
  return Err(InvalidArgument("MIG profile " + name + ": a GPU of " +
                             std::to_string(std::llround(gib)) + " GiB has no instance of " +
                             std::to_string(p->compute) + " compute slices and " +
                             std::to_string(size) + "/8 of its memory"));
}

Result<std::vector<int>> PlaceMig(const std::vector<std::string>& profiles, int64_t memory_bytes) {
  std::vector<MigGeometry> g;
  int compute = 0, media = 0;
  for (const std::string& p : profiles) {
    ASSIGN_OR_RETURN(MigGeometry m, MigGeometryOf(p, memory_bytes));
    compute += m.compute;
    media += m.media ? 1 : 0;
    g.push_back(std::move(m));
  }
  if (compute > kMigComputeSlices)
    return Err(InvalidArgument("MIG instances of " + std::to_string(compute) +
                               " compute slices in all: a GPU has 7"));
  if (media > 1) return Err(InvalidArgument("more than one +me MIG instance on a GPU"));
  // Largest first: the fewest starts to try, and the big ones where only they fit.
  std::vector<size_t> order(g.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return g[a].size != g[b].size ? g[a].size > g[b].size : g[a].starts.size() < g[b].starts.size();
  });
  std::vector<int> starts(g.size(), 0);
  if (!Search(g, order, 0, 0, starts))
    return Err(InvalidArgument("no placement of these MIG instances fits one GPU's memory slices"));
  return starts;
}

int MigCapacity(std::string_view profile, int64_t memory_bytes) {
  if (!MigGeometryOf(profile, memory_bytes)) return 0;
  std::vector<std::string> many;
  for (int n = 1; n <= kMigComputeSlices; ++n) {
    many.emplace_back(profile);
    if (!PlaceMig(many, memory_bytes)) return n - 1;
  }
  return kMigComputeSlices;
}

std::string MigProfileWanted(std::string_view gpu_type) {
  if (ParseMigProfile(gpu_type)) return std::string(gpu_type);
  for (size_t at = gpu_type.find("-MIG-"); at != std::string_view::npos;
       at = gpu_type.find("-MIG-", at + 1)) {
    std::string_view rest = gpu_type.substr(at + 5);
    if (ParseMigProfile(rest)) return std::string(rest);
  }
  return "";
}

}  // namespace baton
