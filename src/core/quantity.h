// Resource quantities as integers: bytes, and "milli" units (1000 milli-GPUs = one GPU), so
// that allocation arithmetic is exact and can never oversubscribe through rounding.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace baton {

inline constexpr int64_t kMilli = 1000;
inline constexpr int64_t kGiB = int64_t{1} << 30;
inline constexpr int64_t kMaxBytes = int64_t{1} << 50;  // 1 PiB: bound for any size field

// Parses "40GiB", "512MiB", "80GB", "1.5TiB", "1024" (bytes). Bounded to [0, kMaxBytes].
Result<int64_t> ParseSize(std::string_view text, std::string_view field);
// A JSON number of bytes; rejects NaN, fractions, negatives and values over the bound.
Result<int64_t> SizeFromNumber(double bytes, std::string_view field);
// "40GiB", "1.5GiB", "512B": for humans.
std::string FormatSize(int64_t bytes);

// Parses a decimal with at most three fractional digits ("0.25", "2", "1.5") into milli
// units; rejects anything else. Bounded to [0, max_milli].
Result<int64_t> ParseMilli(std::string_view text, std::string_view field, int64_t max_milli);
// The same for a JSON number: 0.25 -> 250. Rejects NaN and finer fractions than 0.001.
Result<int64_t> MilliFromNumber(double value, std::string_view field, int64_t max_milli);
// 250 -> "0.25", 2000 -> "2".
std::string FormatMilli(int64_t milli);

}  // namespace baton
