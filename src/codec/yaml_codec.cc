// YAML -> JSON, so job files in YAML go through the same spec decoder as API bodies.
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdlib>

#include "codec/internal/json_util.h"
#include "codec/json_codec.h"

namespace baton::codec {
namespace {

using namespace internal;

// Keys whose values are text (or lists and maps of text): there a plain scalar keeps its
// words, so `command: [python, x.py, --lr, 0.1]` and `env: {N: 4}` mean what they say.
bool IsTextKey(std::string_view key) {
  return key == "command" || key == "env" || key == "name" || key == "project" || key == "pool" ||
         key == "workdir" || key == "gpu_type";
}

// Nodes one file may expand to: aliases can repeat a subtree many times over ("billion laughs"),
// which the depth bound alone does not stop.
constexpr int kMaxYamlNodes = 100'000;

Result<json::value> Convert(const YAML::Node& node, int depth, std::string_view file, bool text, int& budget) {
  if (depth > kMaxJsonDepth) return Err(InvalidArgument(std::string(file) + ": nested too deeply"));
  if (--budget < 0) {
    return Err(InvalidArgument(std::string(file) + ": more than " + std::to_string(kMaxYamlNodes) +
                               " values (aliases expanded)"));
  }
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return json::value(nullptr);
    case YAML::NodeType::Scalar: {
      const std::string& s = node.Scalar();
      if (node.Tag() == "!" || text) return json::value(s);  // quoted, or where text is meant
      if (s == "null" || s == "~" || s.empty()) return json::value(nullptr);
      if (s == "true" || s == "True" || s == "TRUE" || s == "yes" || s == "Yes" || s == "on") return json::value(true);
      if (s == "false" || s == "False" || s == "FALSE" || s == "no" || s == "No" || s == "off") return json::value(false);
      char* end = nullptr;
      errno = 0;
      long long i = std::strtoll(s.c_str(), &end, 10);
      if (end != s.c_str() && *end == '\0' && errno == 0) return json::value(static_cast<int64_t>(i));
      double d = std::strtod(s.c_str(), &end);
      if (end != s.c_str() && *end == '\0' && std::isfinite(d)) return json::value(d);
      return json::value(s);
    }
    case YAML::NodeType::Sequence: {
      json::array a;
      for (const auto& item : node) {
        ASSIGN_OR_RETURN(json::value v, Convert(item, depth + 1, file, text, budget));
        a.push_back(std::move(v));
      }
      return json::value(std::move(a));
    }
    case YAML::NodeType::Map: {
      json::object o;
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) {
          return Err(InvalidArgument(std::string(file) + ": line " + std::to_string(kv.first.Mark().line + 1) +
                                     ": keys must be plain words"));
        }
        ASSIGN_OR_RETURN(json::value v, Convert(kv.second, depth + 1, file, text || IsTextKey(kv.first.Scalar()), budget));
        o[kv.first.Scalar()] = std::move(v);
      }
      return json::value(std::move(o));
    }
  }
  return json::value(nullptr);
}

}  // namespace

Result<std::string> YamlToJson(std::string_view yaml, std::string_view file) {
  try {
    YAML::Node root = YAML::Load(std::string(yaml));
    int budget = kMaxYamlNodes;
    ASSIGN_OR_RETURN(json::value v, Convert(root, 0, file, false, budget));
    return json::serialize(v);
  } catch (const YAML::Exception& e) {
    return Err(InvalidArgument(std::string(file) + ": line " + std::to_string(e.mark.line + 1) +
                               ": " + e.msg));
  }
}

Result<ServerConfig> DecodeServerConfig(std::string_view yaml, std::string_view file) {
  ASSIGN_OR_RETURN(std::string text, YamlToJson(yaml, file));
  ASSIGN_OR_RETURN(json::value v, Parse(text));
  ServerConfig cfg;
  if (v.is_null()) return cfg;
  if (!v.is_object()) return Err(InvalidArgument(std::string(file) + ": must be a mapping of keys"));
  for (const auto& kv : v.get_object()) {
    std::string key(kv.key());
    if (key == "listen" || key == "data") {
      auto s = GetString(kv.value(), std::string(file) + ": " + key, 4096);
      if (!s) return Err(s.error());
      (key == "listen" ? cfg.listen : cfg.data) = *s;
    } else {
      return Err(InvalidArgument(std::string(file) + ": unknown key \"" + key + "\""));
    }
  }
  return cfg;
}

}  // namespace baton::codec
