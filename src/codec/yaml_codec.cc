// YAML -> JSON, so job files in YAML go through the same spec decoder as API bodies; and the
// checked load the configuration files share (codec/internal/yaml_load.h, config_codec.cc).
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <set>
#include <sstream>
#include <tuple>

#include "codec/internal/json_util.h"
#include "codec/internal/yaml_load.h"
#include "codec/json_codec.h"
#include "core/node.h"
#include "core/quantity.h"

namespace baton::codec {
namespace {

using namespace internal;

// Keys whose values are text (or lists and maps of text): there a plain scalar keeps its
// words, so `command: [python, x.py, --lr, 0.1]` and `env: {N: 4}` mean what they say.
bool IsTextKey(std::string_view key) {
  return key == "command" || key == "env" || key == "name" || key == "project" || key == "pool" ||
         key == "workdir" || key == "gpu_type" || key == "sweep" || key == "schedule" ||
         key == "nodelist" || key == "exclude";
}

// Nodes one file may expand to: aliases can repeat a subtree many times over ("billion laughs"),
// which the depth bound alone does not stop.
constexpr int kMaxYamlNodes = 100'000;

Result<json::value> Convert(const YAML::Node& node, int depth, std::string_view file, bool text,
                            int& budget) {
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
      if (s == "true" || s == "True" || s == "TRUE" || s == "yes" || s == "Yes" || s == "on")
        return json::value(true);
      if (s == "false" || s == "False" || s == "FALSE" || s == "no" || s == "No" || s == "off")
        return json::value(false);
      char* end = nullptr;
      errno = 0;
      long long i = std::strtoll(s.c_str(), &end, 10);
      if (end != s.c_str() && *end == '\0' && errno == 0)
        return json::value(static_cast<int64_t>(i));
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
          return Err(InvalidArgument(std::string(file) + ": line " +
                                     std::to_string(kv.first.Mark().line + 1) +
                                     ": keys must be plain words"));
        }
        ASSIGN_OR_RETURN(json::value v, Convert(kv.second, depth + 1, file,
                                                text || IsTextKey(kv.first.Scalar()), budget));
        o[kv.first.Scalar()] = std::move(v);
      }
      return json::value(std::move(o));
    }
  }
  return json::value(nullptr);
}

// The first line (1-based) whose indentation holds a tab, or 0.
int FirstTabIndentedLine(std::string_view yaml) {
  int line = 1;
  bool indent = true;  // still in the line's leading whitespace
  for (char c : yaml) {
    if (c == '\n') {
      ++line;
      indent = true;
    } else if (indent && c == '\t') {
      return line;
    } else if (c != ' ') {
      indent = false;
    }
  }
  return 0;
}

}  // namespace

namespace internal {

// Parses `yaml` and checks it as a job file is checked (depth, size, and the bound on expanded
// aliases); its JSON form goes to `as_json` when given. Throws YAML::Exception: callers catch
// it and answer YamlError.
Result<YAML::Node> LoadChecked(std::string_view yaml, std::string_view file, json::value* as_json) {
  YAML::Node root = YAML::Load(std::string(yaml));
  int budget = kMaxYamlNodes;
  ASSIGN_OR_RETURN(json::value v, Convert(root, 0, file, false, budget));
  if (as_json != nullptr) *as_json = std::move(v);
  return root;
}

// "FILE: line N: what" for a YAML exception. yaml-cpp's words for a tab in the indentation
// ("illegal map value", "illegal block entry") do not say what to fix: a file that fails with
// one is named as such.
Status YamlError(std::string_view file, std::string_view yaml, const YAML::Exception& e) {
  if (int tab = FirstTabIndentedLine(yaml); tab > 0 && tab <= e.mark.line + 1) {
    return InvalidArgument(std::string(file) + ": line " + std::to_string(tab) +
                           ": tabs are not allowed for indentation (YAML indents with spaces)");
  }
  return InvalidArgument(std::string(file) + ": line " + std::to_string(e.mark.line + 1) + ": " +
                         e.msg);
}

}  // namespace internal

Result<std::string> YamlToJson(std::string_view yaml, std::string_view file) {
  try {
    json::value v;
    if (auto loaded = LoadChecked(yaml, file, &v); !loaded) return Err(loaded.error());
    return json::serialize(v);
  } catch (const YAML::Exception& e) {
    return Err(YamlError(file, yaml, e));
  }
}

}  // namespace baton::codec
