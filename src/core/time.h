// Time as data: durations and instants in whole milliseconds. The core never reads a clock;
// `now` is always a parameter (core/clock.h provides the real and simulated clocks).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace baton {

using Duration = std::chrono::milliseconds;
using TimePoint = std::chrono::time_point<std::chrono::system_clock, Duration>;

inline constexpr Duration kMaxDuration = std::chrono::hours(24 * 366);

// Parses "90", "90s", "30m", "2h", "1d", "1h30m", "500ms", "1.5h", "0.5d" (a bare number is
// seconds; decimals are rounded to the millisecond), and Slurm's clock forms "MM:SS",
// "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS".
// Bounded to [0, kMaxDuration]; `field` names the input in the error message.
Result<Duration> ParseDuration(std::string_view text, std::string_view field);

// Seconds as a JSON number would give them; rejects NaN, negatives and values over the bound.
Result<Duration> DurationFromSeconds(double seconds, std::string_view field);

// "2h30m", "45s", "0s": the shortest exact form, for humans.
std::string FormatDuration(Duration d);

// RFC 3339 UTC with millisecond precision: 2026-11-22T20:56:19.123Z.
std::string FormatRfc3339(TimePoint t);
Result<TimePoint> ParseRfc3339(std::string_view text);

inline int64_t ToMillis(TimePoint t) { return t.time_since_epoch().count(); }
inline TimePoint FromMillis(int64_t ms) { return TimePoint(Duration(ms)); }

}  // namespace baton
