#include "core/node.h"

#include <cctype>

namespace baton {

Result<GpuSpec> ParseGpuSpec(std::string_view text) {
  auto bad = [&](std::string why) {
    return Err(InvalidArgument("gpus: " + why + " (got \"" + std::string(text.substr(0, 64)) +
                               "\"; use COUNTxTYPE[:topo=nvswitch|pairs|cubemesh|pcie], e.g. 8xH100-80GB)"));
  };
  GpuSpec spec;
  std::string_view rest = text;
  size_t colon = rest.find(':');
  std::string_view options;
  if (colon != std::string_view::npos) {
    options = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
  }
  size_t x = rest.find('x');
  if (x == 0 || x == std::string_view::npos) return bad("missing COUNTx");
  int count = 0;
  for (char c : rest.substr(0, x)) {
    if (c < '0' || c > '9') return bad("COUNT is not a number");
    count = count * 10 + (c - '0');
    if (count > 1024) return bad("more than 1024 GPUs");
  }
  spec.count = count;
  spec.model = std::string(rest.substr(x + 1));
  if (spec.model.empty() || spec.model.size() > 64) return bad("missing TYPE");
  for (char c : spec.model) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return bad("TYPE has a character other than letters, digits, '-', '_', '.'");
    }
  }
  // Memory from a "-<N>GB" suffix; without one, a type-specific default.
  size_t dash = spec.model.rfind('-');
  if (dash != std::string::npos && spec.model.size() > dash + 3 &&
      spec.model.compare(spec.model.size() - 2, 2, "GB") == 0) {
    int64_t gb = 0;
    for (size_t i = dash + 1; i + 2 < spec.model.size(); ++i) {
      char c = spec.model[i];
      if (c < '0' || c > '9') return bad("memory suffix is not a number of GB");
      gb = gb * 10 + (c - '0');
      if (gb > 4096) return bad("more than 4096GB per GPU");
    }
    spec.memory_bytes = gb << 30;
  } else {
    spec.memory_bytes = int64_t{16} << 30;
  }
  bool sxm_class = spec.model.starts_with("H100") || spec.model.starts_with("H200") ||
                   spec.model.starts_with("A100") || spec.model.starts_with("B200") ||
                   spec.model.starts_with("V100");
  spec.topology = sxm_class && count >= 8 ? "nvswitch" : (sxm_class ? "pairs" : "pcie");
  if (spec.model.starts_with("V100") && count == 8) spec.topology = "cubemesh";  // DGX-1
  if (!options.empty()) {
    if (!options.starts_with("topo=")) return bad("unknown option");
    std::string_view topo = options.substr(5);
    if (topo != "nvswitch" && topo != "pairs" && topo != "pcie" && topo != "cubemesh") {
      return bad("unknown topology");
    }
    spec.topology = std::string(topo);
  }
  return spec;
}

bool IsValidNodeName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  if (!std::isalnum(static_cast<unsigned char>(name[0]))) return false;  // no ".", "..", "-x"
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

bool GpuTypeMatches(std::string_view model, std::string_view wanted) {
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

}  // namespace baton
