// Enums that cross modules or the wire as text (states, reasons, roles) name their values from
// one table each: the name is the table's entry, and parsing searches it and names the valid
// values when the text is none of them.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "core/status.h"

namespace baton {

template <typename E, size_t N>
std::string_view EnumName(const std::array<std::string_view, N>& names, E value) {
  return names[static_cast<size_t>(value)];
}

// "FIELD: must be one of a, b, c (got \"x\")" when `text` is no name of `names`.
template <typename E, size_t N>
Result<E> ParseEnum(const std::array<std::string_view, N>& names, std::string_view field,
                    std::string_view text) {
  for (size_t i = 0; i < N; ++i) {
    if (text == names[i]) return static_cast<E>(i);
  }
  std::string valid;
  for (std::string_view n : names) {
    if (n.empty()) continue;
    valid += (valid.empty() ? "" : ", ") + std::string(n);
  }
  return Err(InvalidArgument(std::string(field) + ": must be one of " + valid + " (got \"" +
                             std::string(text.substr(0, 32)) + "\")"));
}

}  // namespace baton
