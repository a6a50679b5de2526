// Small text helpers shared by the parsers of traces, node lists and command-line lists.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace baton {

// `s` without leading and trailing spaces, tabs and carriage returns.
std::string_view Trim(std::string_view s);

// The line of `text` that starts at `*pos` (without its '\n'), moving `*pos` past it; nullopt
// once `*pos` is at the end.
std::optional<std::string_view> NextLine(std::string_view text, size_t* pos);

// The fields of `s` between `sep`s, each trimmed; one (empty) field for an empty `s`.
std::vector<std::string_view> SplitTrimmed(std::string_view s, char sep);

// `bytes` bytes from the kernel's random source (getrandom), as lower-case hex; "" where it
// fails (it does not, once the kernel's pool is ready).
std::string RandomHex(size_t bytes);

}  // namespace baton
