#include "sim/alibaba_nodes.h"

#include <charconv>
#include <map>
#include <optional>
#include <system_error>

#include "core/node.h"
#include "core/text.h"
#include "sim/openb_models.h"

namespace baton::sim {
namespace {

constexpr size_t kMaxLineBytes = 4096;  // real rows are ~40 bytes
constexpr size_t kMaxNodes = 100'000;   // the real list has 1,523
constexpr int kMaxGpusPerNode = 1024;   // ParseGpuSpec's bound

std::optional<int> GpuCount(std::string_view s) {
  int n = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || n < 0 ||
      n > kMaxGpusPerNode) {
    return std::nullopt;
  }
  return n;
}

}  // namespace

Result<std::vector<SimNode>> ParseAlibabaNodes(std::string_view text, std::string_view file) {
  auto fail = [&](int line, std::string_view column, const std::string& why) {
    return Err(InvalidArgument(std::string(file) + ": line " + std::to_string(line) + ": " +
                               (column.empty() ? "" : std::string(column) + ": ") + why));
  };
  auto quote = [](std::string_view s) { return "\"" + std::string(s.substr(0, 64)) + "\""; };
  std::map<std::string, size_t> column;
  size_t width = 0;
  std::map<std::string, int, std::less<>> seen;  // node name -> its line
  std::vector<SimNode> nodes;
  int line_no = 0;
  size_t pos = 0;
  while (std::optional<std::string_view> next = NextLine(text, &pos)) {
    std::string_view raw = *next;
    ++line_no;
    if (raw.size() > kMaxLineBytes)
      return fail(line_no, "", "longer than " + std::to_string(kMaxLineBytes) + " bytes");
    std::string_view line = Trim(raw);
    if (line.empty()) continue;
    std::vector<std::string_view> fields = SplitTrimmed(line, ',');
    if (width == 0) {
      width = fields.size();
      for (size_t i = 0; i < fields.size(); ++i) {
        if (!column.emplace(std::string(fields[i]), i).second)
          return fail(line_no, fields[i], "column named twice");
      }
      for (const char* required : {"sn", "gpu", "model"}) {
        if (!column.count(required)) {
          return fail(line_no, required,
                      "required column missing from the header (an openb node list has "
                      "sn,cpu_milli,memory_mib,gpu,model)");
        }
      }
      continue;
    }
    if (fields.size() != width) {
      return fail(
          line_no, "",
          std::to_string(fields.size()) + " fields where the header has " + std::to_string(width));
    }
    std::string_view sn = fields[column["sn"]];
    std::string_view gpu = fields[column["gpu"]];
    std::string_view model = fields[column["model"]];
    auto count = GpuCount(gpu);
    if (!count) return fail(line_no, "gpu", quote(gpu) + " is not a number of GPUs from 0 to 1024");
    if (*count == 0) continue;
    if (!IsValidNodeName(sn))
      return fail(line_no, "sn", quote(sn) + " is not a node name (1-64 of [A-Za-z0-9._-])");
    if (auto [it, fresh] = seen.emplace(std::string(sn), line_no); !fresh) {
      return fail(line_no, "sn", quote(sn) + " is on line " + std::to_string(it->second) + " too");
    }
    if (model.empty()) return fail(line_no, "model", "empty for a node with GPUs");
    SimNode node;
    node.name = std::string(sn);
    node.gpus = std::to_string(*count) + "x" + OpenbGpuModel(model);
    if (auto spec = ParseGpuSpec(node.gpus); !spec)
      return fail(line_no, "model", spec.error().message());
    if (nodes.size() >= kMaxNodes)
      return fail(line_no, "", "more than " + std::to_string(kMaxNodes) + " nodes");
    nodes.push_back(std::move(node));
  }
  if (width == 0)
    return Err(InvalidArgument(std::string(file) + ": empty (a header line is needed)"));
  if (nodes.empty()) return Err(InvalidArgument("no node with GPUs in " + std::string(file)));
  return nodes;
}

}  // namespace baton::sim
