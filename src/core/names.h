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

// Whether names are read as written, or in any case ("BF16" for "bf16": what users type).
enum class NameCase { kExact, kAny };

inline bool SameName(std::string_view a, std::string_view b, NameCase c) {
  if (c == NameCase::kExact || a.size() != b.size()) return a == b;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// "FIELD: must be one of a, b, c (got \"x\")" when `text` is no name of `names`.
template <typename E, size_t N>
Result<E> ParseEnum(const std::array<std::string_view, N>& names, std::string_view field,
                    std::string_view text, NameCase name_case = NameCase::kExact) {
  for (size_t i = 0; i < N; ++i) {
    if (SameName(text, names[i], name_case)) return static_cast<E>(i);
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
