// Internal to codec/: the configuration's YAML read key by key with errors that name the file,
// the line and the key's path (ConfigReader), shared by the files that read the server's
// configuration and the simulator's cluster file, and the parts of it read in a file of their
// own. Only codec's .cc files that read YAML include it (it brings in yaml-cpp).
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <initializer_list>
#include <sstream>
#include <string>
#include <string_view>

#include "core/node.h"
#include "core/policy.h"
#include "core/quantity.h"
#include "core/status.h"
#include "core/time.h"

namespace baton::codec::internal {

// Reads one YAML mapping of the configuration with errors that name file, line and key path.
class ConfigReader {
 public:
  explicit ConfigReader(std::string_view file) : file_(file) {}

  Status Error(const YAML::Node& at, const std::string& path, const std::string& why) const {
    return InvalidArgument(file_ + ": line " + std::to_string(at.Mark().line + 1) + ": " + path +
                           ": " + why);
  }

  // Checks `node` is a mapping whose keys are all in `allowed`.
  Status Keys(const YAML::Node& node, const std::string& path,
              std::initializer_list<std::string_view> allowed) const {
    if (!node.IsMap()) return Error(node, path, "must be a mapping of keys");
    for (const auto& kv : node) {
      const std::string& key = kv.first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        std::string list;
        for (auto k : allowed) list += (list.empty() ? "" : ", ") + std::string(k);
        return Error(kv.first, path.empty() ? key : path + "." + key,
                     "unknown key (known: " + list + ")");
      }
    }
    return Status::Ok();
  }

  Result<std::string> Text(const YAML::Node& n, const std::string& path, size_t max = 4096) const {
    if (!n.IsScalar()) return Err(Error(n, path, "must be text"));
    if (n.Scalar().size() > max)
      return Err(Error(n, path, "longer than " + std::to_string(max) + " bytes"));
    return n.Scalar();
  }

  Result<double> Number(const YAML::Node& n, const std::string& path, double lo, double hi) const {
    if (!n.IsScalar()) return Err(Error(n, path, "must be a number"));
    char* end = nullptr;
    const std::string& t = n.Scalar();
    double d = std::strtod(t.c_str(), &end);
    if (t.empty() || *end != '\0' || !std::isfinite(d) || d < lo || d > hi) {
      std::ostringstream range;
      range << lo << " to " << hi;
      return Err(Error(
          n, path, "must be a number from " + range.str() + " (got \"" + t.substr(0, 32) + "\")"));
    }
    return d;
  }

  Result<int64_t> Gpus(const YAML::Node& n, const std::string& path) const {
    ASSIGN_OR_RETURN(double d, Number(n, path, 0, 1'000'000));
    return static_cast<int64_t>(std::llround(d * 1000));
  }

  Result<bool> Bool(const YAML::Node& n, const std::string& path) const {
    if (n.IsScalar()) {
      const std::string& t = n.Scalar();
      if (t == "true" || t == "yes" || t == "on") return true;
      if (t == "false" || t == "no" || t == "off") return false;
    }
    return Err(Error(n, path, "must be true or false"));
  }

  Result<Duration> Time(const YAML::Node& n, const std::string& path) const {
    if (!n.IsScalar()) return Err(Error(n, path, "must be a duration such as 30s, 2h or 7d"));
    auto d = ParseDuration(n.Scalar(), path);
    if (!d) return Err(Error(n, path, d.error().message()));
    return *d;
  }

  // A size such as 256MiB or 1GiB (a plain number is bytes), at least 64 KiB.
  Result<int64_t> Size(const YAML::Node& n, const std::string& path) const {
    if (!n.IsScalar()) return Err(Error(n, path, "must be a size such as 256MiB or 1GiB"));
    auto s = ParseSize(n.Scalar(), path);
    if (!s) return Err(Error(n, path, s.error().message()));
    if (*s < (int64_t{64} << 10)) return Err(Error(n, path, "must be at least 64KiB"));
    return *s;
  }

  bool IsName(const std::string& s) const { return IsValidNodeName(s); }

 private:
  std::string file_;
};

// `autoscaling:` (autoscaling_config.cc): its provider, timeouts, rates and node templates.
// With `boot_delay` (a `baton sim` cluster file), the simulator is the provider: no
// `provider` or `provider_timeout`, and `boot_delay` (how long a resumed node takes to
// register, default 2m) instead.
Status ReadAutoscaling(const ConfigReader& r, const YAML::Node& n, AutoscalingPolicy* a,
                       Duration* boot_delay = nullptr);

}  // namespace baton::codec::internal
