#include "core/quantity.h"

#include <cmath>
#include <cstdio>

namespace baton {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Parses "123" or "123.456" into an integer scaled by 10^`decimals`. Fails on more
// fractional digits than `decimals`, on overflow past `limit`, and on anything not a decimal.
bool ParseScaledDecimal(std::string_view s, int decimals, int64_t limit, int64_t* out,
                        size_t* consumed) {
  size_t i = 0;
  int64_t whole = 0;
  if (i >= s.size() || !IsDigit(s[i])) return false;
  while (i < s.size() && IsDigit(s[i])) {
    whole = whole * 10 + (s[i] - '0');
    if (whole > limit) return false;
    ++i;
  }
  int64_t frac = 0;
  int frac_digits = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (i >= s.size() || !IsDigit(s[i])) return false;
    while (i < s.size() && IsDigit(s[i])) {
      if (frac_digits == decimals) {
        if (s[i] != '0') return false;  // finer than the unit allows
      } else {
        frac = frac * 10 + (s[i] - '0');
        ++frac_digits;
      }
      ++i;
    }
  }
  for (int d = frac_digits; d < decimals; ++d) frac *= 10;
  int64_t scale = 1;
  for (int d = 0; d < decimals; ++d) scale *= 10;
  *out = whole * scale + frac;
  *consumed = i;
  return true;
}

}  // namespace

Result<int64_t> ParseSize(std::string_view text, std::string_view field) {
  auto bad = [&](std::string why) {
    return Err(InvalidArgument(std::string(field) + ": " + why + " (got \"" +
                               std::string(text.substr(0, 64)) +
                               "\"; use bytes or forms like 512MiB, 40GiB, 80GB)"));
  };
  if (text.empty()) return bad("empty size");
  if (text.size() > 32) return bad("size too long");
  int64_t scaled = 0;
  size_t used = 0;
  // Three decimals so "1.5GiB" works; the limit keeps scaled*unit inside int64 below.
  if (!ParseScaledDecimal(text, 3, int64_t{1} << 40, &scaled, &used)) return bad("not a size");
  std::string_view unit = text.substr(used);
  if (!unit.empty() && unit[0] == ' ') unit.remove_prefix(1);
  struct Unit {
    std::string_view name;
    int64_t bytes;
  };
  static constexpr Unit kUnits[] = {
      {"", 1},
      {"B", 1},
      {"K", 1LL << 10},
      {"KiB", 1LL << 10},
      {"KB", 1000},
      {"M", 1LL << 20},
      {"MiB", 1LL << 20},
      {"MB", 1000'000},
      {"G", 1LL << 30},
      {"GiB", 1LL << 30},
      {"GB", 1000'000'000},
      {"T", 1LL << 40},
      {"TiB", 1LL << 40},
      {"TB", 1000'000'000'000},
  };
  for (const Unit& u : kUnits) {
    if (unit == u.name) {
      // scaled is bytes*1000 of the unit; compare in long double to avoid overflow.
      long double bytes = static_cast<long double>(scaled) * u.bytes / 1000.0L;
      if (bytes > static_cast<long double>(kMaxBytes)) return bad("larger than 1 PiB");
      if (u.bytes == 1 && scaled % 1000 != 0) return bad("a fraction of a byte");
      return static_cast<int64_t>(bytes);
    }
  }
  return bad("unknown unit");
}

Result<int64_t> SizeFromNumber(double bytes, std::string_view field) {
  if (std::isnan(bytes) || bytes < 0 || bytes != std::floor(bytes)) {
    return Err(
        InvalidArgument(std::string(field) + ": must be a whole, non-negative number of bytes"));
  }
  if (bytes > static_cast<double>(kMaxBytes)) {
    return Err(InvalidArgument(std::string(field) + ": larger than 1 PiB"));
  }
  return static_cast<int64_t>(bytes);
}

std::string FormatSize(int64_t bytes) {
  static constexpr struct {
    int64_t size;
    const char* unit;
  } kUnits[] = {{1LL << 40, "TiB"}, {1LL << 30, "GiB"}, {1LL << 20, "MiB"}, {1LL << 10, "KiB"}};
  for (const auto& u : kUnits) {
    if (bytes >= u.size) {
      char buf[32];
      double v = static_cast<double>(bytes) / static_cast<double>(u.size);
      if (bytes % u.size == 0)
        std::snprintf(buf, sizeof buf, "%lld%s", static_cast<long long>(bytes / u.size), u.unit);
      else
        std::snprintf(buf, sizeof buf, "%.1f%s", v, u.unit);
      return buf;
    }
  }
  return std::to_string(bytes) + "B";
}

Result<int64_t> ParseMilli(std::string_view text, std::string_view field, int64_t max_milli) {
  int64_t milli = 0;
  size_t used = 0;
  if (text.size() > 24 || !ParseScaledDecimal(text, 3, max_milli / kMilli + 1, &milli, &used) ||
      used != text.size()) {
    return Err(InvalidArgument(std::string(field) +
                               ": not a number with at most 3 decimals (got \"" +
                               std::string(text.substr(0, 32)) + "\")"));
  }
  if (milli > max_milli) {
    return Err(InvalidArgument(std::string(field) + ": at most " + FormatMilli(max_milli)));
  }
  return milli;
}

Result<int64_t> MilliFromNumber(double value, std::string_view field, int64_t max_milli) {
  if (std::isnan(value) || std::isinf(value) || value < 0) {
    return Err(InvalidArgument(std::string(field) + ": must be a non-negative number"));
  }
  if (value > static_cast<double>(max_milli) / kMilli) {
    return Err(InvalidArgument(std::string(field) + ": at most " + FormatMilli(max_milli)));
  }
  double scaled = value * kMilli;
  double rounded = std::round(scaled);
  if (std::fabs(scaled - rounded) > 1e-6) {
    return Err(InvalidArgument(std::string(field) + ": at most 3 decimals"));
  }
  return static_cast<int64_t>(rounded);
}

std::string FormatMilli(int64_t milli) {
  std::string out = std::to_string(milli / kMilli);
  int64_t frac = milli % kMilli;
  if (frac != 0) {
    char buf[8];
    std::snprintf(buf, sizeof buf, ".%03lld", static_cast<long long>(frac));
    std::string f = buf;
    while (f.back() == '0') f.pop_back();
    out += f;
  }
  return out;
}

}  // namespace baton
