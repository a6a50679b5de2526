#include "core/time.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <vector>

namespace baton {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

namespace {

// Slurm's clock forms: "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS".
Result<Duration> ParseClockDuration(std::string_view text, std::string_view field) {
  auto bad = [&](std::string why) {
    return Err(InvalidArgument(
        std::string(field) + ": " + why + " (got \"" + std::string(text.substr(0, 64)) +
        "\"; Slurm's forms are MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS)"));
  };
  int64_t days = 0;
  bool with_days = false;
  if (size_t dash = text.find('-'); dash != std::string_view::npos) {
    std::string_view d = text.substr(0, dash);
    if (d.empty() || d.size() > 3 || !std::all_of(d.begin(), d.end(), IsDigit))
      return bad("expected days before '-'");
    for (char c : d) days = days * 10 + (c - '0');
    text.remove_prefix(dash + 1);
    with_days = true;
  }
  std::vector<int64_t> parts;
  for (;;) {
    size_t colon = text.find(':');
    std::string_view part = text.substr(0, colon);
    if (part.empty() || part.size() > 7 || !std::all_of(part.begin(), part.end(), IsDigit))
      return bad("expected whole numbers between the ':'");
    int64_t n = 0;
    for (char c : part) n = n * 10 + (c - '0');
    parts.push_back(n);
    if (colon == std::string_view::npos) break;
    text.remove_prefix(colon + 1);
  }
  if (parts.size() > 3) return bad("too many ':'");
  // With days: hours[:minutes[:seconds]]. Without: minutes:seconds or hours:minutes:seconds.
  static constexpr int64_t kHms[] = {3600, 60, 1};
  const int64_t* unit = with_days || parts.size() == 3 ? kHms : kHms + 1;
  int64_t seconds = days * 86400;
  for (size_t i = 0; i < parts.size(); ++i) seconds += parts[i] * unit[i];
  if (std::chrono::seconds(seconds) > kMaxDuration) return bad("longer than 366 days");
  return Duration(seconds * 1000);
}

}  // namespace

Result<Duration> ParseDuration(std::string_view text, std::string_view field) {
  auto bad = [&](std::string why) {
    return Err(InvalidArgument(std::string(field) + ": " + why + " (got \"" +
                               std::string(text.substr(0, 64)) +
                               "\"; use seconds or forms like 90s, 30m, 2h, 1h30m, 2:30:00)"));
  };
  if (text.empty()) return bad("empty duration");
  if (text.size() > 32) return bad("duration too long");
  if (text.find_first_of(":-") != std::string_view::npos) return ParseClockDuration(text, field);
  int64_t total_ms = 0;
  size_t i = 0;
  bool bare_number = true;
  while (i < text.size()) {
    if (!IsDigit(text[i])) return bad("expected a number");
    int64_t n = 0;
    while (i < text.size() && IsDigit(text[i])) {
      n = n * 10 + (text[i] - '0');
      if (n > 1'000'000'000) return bad("number too large");
      ++i;
    }
    // A decimal part ("1.5h", as Slurm users type): its digits over their power of ten.
    int64_t frac = 0, frac_scale = 1;
    if (i < text.size() && text[i] == '.') {
      ++i;
      if (i >= text.size() || !IsDigit(text[i])) return bad("expected digits after '.'");
      while (i < text.size() && IsDigit(text[i])) {
        if (frac_scale >= 1'000'000'000) return bad("too many decimals");
        frac = frac * 10 + (text[i] - '0');
        frac_scale *= 10;
        ++i;
      }
    }
    int64_t unit_ms = 1000;
    if (i < text.size()) {
      bare_number = false;
      std::string_view rest = text.substr(i);
      if (rest.starts_with("ms")) {
        unit_ms = 1;
        i += 2;
      } else if (rest[0] == 's') {
        unit_ms = 1000;
        ++i;
      } else if (rest[0] == 'm') {
        unit_ms = 60'000;
        ++i;
      } else if (rest[0] == 'h') {
        unit_ms = 3'600'000;
        ++i;
      } else if (rest[0] == 'd') {
        unit_ms = 86'400'000;
        ++i;
      } else
        return bad("unknown unit");
    } else if (!bare_number) {
      return bad("a number without a unit after another unit");
    }
    // Exact to the millisecond, rounded half up: 1.5h is 5,400,000 ms.
    total_ms += n * unit_ms + (frac * unit_ms + frac_scale / 2) / frac_scale;
    if (Duration(total_ms) > kMaxDuration) return bad("longer than 366 days");
  }
  return Duration(total_ms);
}

Result<Duration> DurationFromSeconds(double seconds, std::string_view field) {
  if (std::isnan(seconds) || seconds < 0) {
    return Err(InvalidArgument(std::string(field) + ": must be a non-negative number of seconds"));
  }
  if (seconds >
      static_cast<double>(std::chrono::duration_cast<std::chrono::seconds>(kMaxDuration).count())) {
    return Err(InvalidArgument(std::string(field) + ": longer than 366 days"));
  }
  return Duration(static_cast<int64_t>(std::llround(seconds * 1000.0)));
}

std::string FormatDuration(Duration d) {
  int64_t ms = d.count();
  if (ms == 0) return "0s";
  std::string out;
  if (ms < 0) {
    out = "-";
    ms = -ms;
  }
  const struct {
    int64_t ms;
    const char* unit;
  } units[] = {{86'400'000, "d"}, {3'600'000, "h"}, {60'000, "m"}, {1000, "s"}, {1, "ms"}};
  for (const auto& u : units) {
    if (ms >= u.ms) {
      out += std::to_string(ms / u.ms) + u.unit;
      ms %= u.ms;
    }
  }
  return out;
}

std::string FormatRfc3339(TimePoint t) {
  int64_t ms = ToMillis(t);
  std::time_t secs = static_cast<std::time_t>(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
  int frac = static_cast<int>(ms - static_cast<int64_t>(secs) * 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
  return buf;
}

Result<TimePoint> ParseRfc3339(std::string_view text) {
  int ms = 0;
  std::string s(text.substr(0, 40));
  int year, mon, day, hour, min, sec;
  char frac[8] = {0};
  int n = std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3[0-9]Z", &year, &mon, &day, &hour, &min,
                      &sec, frac);
  if (n < 6 || (text.back() != 'Z' && text.back() != 'z')) {
    return Err(
        InvalidArgument("not an RFC 3339 UTC time such as 2026-11-23T09:00:00Z: \"" + s + "\""));
  }
  // Days from the civil date by arithmetic (not timegm, which reads the time zone file first).
  const std::chrono::year_month_day date{std::chrono::year{year},
                                         std::chrono::month{static_cast<unsigned>(mon)},
                                         std::chrono::day{static_cast<unsigned>(day)}};
  if (!date.ok() || hour > 23 || min > 59 || sec > 60 || hour < 0 || min < 0 || sec < 0) {
    return Err(InvalidArgument("not a valid date and time: \"" + s + "\""));
  }
  if (n == 7) {
    ms = std::atoi(frac);
    for (size_t len = std::string_view(frac).size(); len < 3; ++len) ms *= 10;
  }
  const int64_t days = std::chrono::sys_days{date}.time_since_epoch().count();
  const int64_t secs = ((days * 24 + hour) * 60 + min) * 60 + sec;
  return FromMillis(secs * 1000 + ms);
}

}  // namespace baton
