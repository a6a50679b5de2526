// Internal to codec/: a YAML document loaded with the bounds a job file has (depth, size,
// expanded aliases), and its errors in words that name the file and line. Only the .cc files
// that read YAML include it (it brings in yaml-cpp).
#pragma once

#include <yaml-cpp/yaml.h>

#include <boost/json.hpp>
#include <string_view>

#include "core/status.h"

namespace baton::codec::internal {

// Parses `yaml` and checks it as a job file is checked (depth, size, and the bound on expanded
// aliases); its JSON form goes to `as_json` when given. Throws YAML::Exception: callers catch
// it and answer YamlError.
Result<YAML::Node> LoadChecked(std::string_view yaml, std::string_view file,
                               boost::json::value* as_json = nullptr);

// "FILE: line N: what" for a YAML exception; a tab in the indentation is named as such.
Status YamlError(std::string_view file, std::string_view yaml, const YAML::Exception& e);

}  // namespace baton::codec::internal
