#include "core/text.h"

#include <sys/random.h>

#include <algorithm>

namespace baton {

std::string_view Trim(std::string_view s) {
  size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string_view::npos) return {};
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

std::optional<std::string_view> NextLine(std::string_view text, size_t* pos) {
  if (*pos >= text.size()) return std::nullopt;
  size_t nl = text.find('\n', *pos);
  std::string_view line =
      text.substr(*pos, nl == std::string_view::npos ? std::string_view::npos : nl - *pos);
  *pos = nl == std::string_view::npos ? text.size() : nl + 1;
  return line;
}

std::vector<std::string_view> SplitTrimmed(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (size_t start = 0;;) {
    size_t at = s.find(sep, start);
    out.push_back(
        Trim(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start)));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

std::string RandomHex(size_t bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(bytes * 2);
  unsigned char chunk[64];
  while (bytes > 0) {
    size_t want = std::min(bytes, sizeof chunk);
    ssize_t n = getrandom(chunk, want, 0);
    if (n <= 0) return "";
    for (ssize_t i = 0; i < n; ++i) {
      hex += kHex[chunk[i] >> 4];
      hex += kHex[chunk[i] & 15];
    }
    bytes -= static_cast<size_t>(n);
  }
  return hex;
}

}  // namespace baton
