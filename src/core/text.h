// Small text helpers shared by the parsers of traces, node lists and command-line lists.
#pragma once

#include <string_view>
#include <vector>

namespace baton {

// `s` without leading and trailing spaces, tabs and carriage returns.
std::string_view Trim(std::string_view s);

// The fields of `s` between `sep`s, each trimmed; one (empty) field for an empty `s`.
std::vector<std::string_view> SplitTrimmed(std::string_view s, char sep);

}  // namespace baton
