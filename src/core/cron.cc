#include "core/cron.h"

#include <array>
#include <cctype>
#include <charconv>
#include <ctime>
#include <vector>

#include "core/text.h"

namespace baton {
namespace {

struct FieldRule {
  const char* name;
  int min;
  int max;
  const char* const* names;  // names[i] stands for min + i; null: numbers only
};

constexpr const char* kMonthNames[] = {"jan", "feb", "mar", "apr", "may", "jun",  "jul",
                                       "aug", "sep", "oct", "nov", "dec", nullptr};
constexpr const char* kDayNames[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat", nullptr};

// Day of week 7 is Sunday again; it is folded onto 0 after parsing.
constexpr FieldRule kRules[] = {{"minute", 0, 59, nullptr},
                                {"hour", 0, 23, nullptr},
                                {"day of month", 1, 31, nullptr},
                                {"month", 1, 12, kMonthNames},
                                {"day of week", 0, 7, kDayNames}};

struct Macro {
  std::string_view name;
  std::string_view fields;
};
constexpr Macro kMacros[] = {{"@yearly", "0 0 1 1 *"},  {"@annually", "0 0 1 1 *"},
                             {"@monthly", "0 0 1 * *"}, {"@weekly", "0 0 * * 0"},
                             {"@daily", "0 0 * * *"},   {"@midnight", "0 0 * * *"},
                             {"@hourly", "0 * * * *"}};

Status CronError(std::string_view field, std::string_view text, const std::string& why) {
  return InvalidArgument(std::string(field) + ": \"" + std::string(text) + "\": " + why);
}

std::optional<int> ValueOf(std::string_view word, const FieldRule& rule) {
  int v = 0;
  auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
  if (ec == std::errc() && end == word.data() + word.size() && !word.empty()) return v;
  if (rule.names == nullptr || word.size() != 3) return std::nullopt;
  std::string lower;
  for (char c : word) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (int i = 0; rule.names[i] != nullptr; ++i) {
    if (lower == rule.names[i]) return rule.min + i;
  }
  return std::nullopt;
}

// One comma-separated item of a field: `*`, N, A-B, with an optional /STEP.
Result<void> ParseItem(std::string_view item, const FieldRule& rule, std::vector<bool>* set) {
  auto bad = [&](const std::string& why) {
    return Err(
        InvalidArgument(std::string(rule.name) + " field \"" + std::string(item) + "\": " + why));
  };
  int step = 1;
  std::string_view range = item;
  if (size_t slash = item.find('/'); slash != std::string_view::npos) {
    range = item.substr(0, slash);
    std::string_view s = item.substr(slash + 1);
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), step);
    if (ec != std::errc() || end != s.data() + s.size() || s.empty() || step < 1 || step > rule.max)
      return bad("the step after / must be a number from 1 to " + std::to_string(rule.max));
  }
  int lo = rule.min;
  int hi = rule.max;
  if (range != "*") {
    size_t dash = range.find('-', 1);
    auto first = ValueOf(range.substr(0, dash), rule);
    if (!first) return bad("\"" + std::string(range.substr(0, dash)) + "\" is not a " + rule.name);
    lo = *first;
    if (dash != std::string_view::npos) {
      auto last = ValueOf(range.substr(dash + 1), rule);
      if (!last)
        return bad("\"" + std::string(range.substr(dash + 1)) + "\" is not a " + rule.name);
      hi = *last;
    } else {
      // "5/15" means from 5 to the end, every 15, as cronie reads it.
      hi = range.size() == item.size() ? lo : rule.max;
    }
  }
  if (lo < rule.min || hi > rule.max || lo > hi) {
    return bad("must be within " + std::to_string(rule.min) + "-" + std::to_string(rule.max) +
               (lo > hi ? ", low to high" : ""));
  }
  for (int v = lo; v <= hi; v += step) (*set)[static_cast<size_t>(v - rule.min)] = true;
  return {};
}

template <size_t N>
void CopyBits(const std::vector<bool>& from, int offset, std::bitset<N>* to) {
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i]) to->set(i + static_cast<size_t>(offset));
  }
}

bool DayMatches(const CronSchedule& s, const std::tm& t) {
  bool day = s.days.test(static_cast<size_t>(t.tm_mday));
  bool weekday = s.weekdays.test(static_cast<size_t>(t.tm_wday));
  if (s.any_day || s.any_weekday) return day && weekday;
  return day || weekday;  // both restricted: either, as Vixie cron
}

// Wall-clock seconds (the fields of a time read as if UTC) and back.
int64_t WallOf(TimePoint t, CronZone zone) {
  std::time_t s = static_cast<std::time_t>(ToMillis(t) / 1000);
  if (ToMillis(t) < 0 && ToMillis(t) % 1000 != 0) --s;
  std::tm tm{};
  if (zone == CronZone::kUtc) {
    gmtime_r(&s, &tm);
  } else {
    localtime_r(&s, &tm);
  }
  return static_cast<int64_t>(timegm(&tm));
}

TimePoint InstantOf(std::tm wall, CronZone zone) {
  if (zone == CronZone::kUtc) return FromMillis(static_cast<int64_t>(timegm(&wall)) * 1000);
  wall.tm_isdst = -1;
  return FromMillis(static_cast<int64_t>(std::mktime(&wall)) * 1000);
}

}  // namespace

Result<CronSchedule> ParseCron(std::string_view text, std::string_view field) {
  std::string_view body = Trim(text);
  if (body.empty()) return Err(CronError(field, text, "is empty"));
  if (body.front() == '@') {
    std::string lower;
    for (char c : body) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const Macro* macro = nullptr;
    for (const Macro& m : kMacros) {
      if (lower == m.name) macro = &m;
    }
    if (macro == nullptr) {
      return Err(CronError(field, text,
                           "unknown macro (valid: @hourly, @daily, @midnight, @weekly, "
                           "@monthly, @yearly, @annually)"));
    }
    body = macro->fields;
  }
  std::vector<std::string_view> fields;
  for (size_t pos = 0; pos < body.size();) {
    while (pos < body.size() && std::isspace(static_cast<unsigned char>(body[pos]))) ++pos;
    size_t end = pos;
    while (end < body.size() && !std::isspace(static_cast<unsigned char>(body[end]))) ++end;
    if (end > pos) fields.push_back(body.substr(pos, end - pos));
    pos = end;
  }
  if (fields.size() != 5) {
    return Err(CronError(field, text,
                         "needs 5 fields (minute hour day-of-month month day-of-week), has " +
                             std::to_string(fields.size())));
  }
  CronSchedule s;
  std::array<std::vector<bool>, 5> sets;
  for (size_t f = 0; f < 5; ++f) {
    const FieldRule& rule = kRules[f];
    sets[f].assign(static_cast<size_t>(rule.max - rule.min + 1), false);
    for (std::string_view item : SplitTrimmed(fields[f], ',')) {
      if (auto r = ParseItem(item, rule, &sets[f]); !r) {
        return Err(CronError(field, text, r.error().message()));
      }
    }
  }
  CopyBits(sets[0], 0, &s.minutes);
  CopyBits(sets[1], 0, &s.hours);
  CopyBits(sets[2], 1, &s.days);
  CopyBits(sets[3], 1, &s.months);
  for (size_t d = 0; d < sets[4].size(); ++d) {
    if (sets[4][d]) s.weekdays.set(d % 7);
  }
  s.any_day = fields[2].front() == '*';
  s.any_weekday = fields[4].front() == '*';
  // Every day named in every month named exists at least once in five years (February 29th
  // included), so a schedule that does not come from this fixed start never comes.
  if (!NextCronTime(s, FromMillis(946684800000), CronZone::kUtc)) {  // 2000-01-01
    return Err(CronError(field, text, "never comes (no such day in the months named)"));
  }
  return s;
}

std::optional<TimePoint> NextCronTime(const CronSchedule& s, TimePoint after, CronZone zone) {
  constexpr int64_t kMinute = 60;
  int64_t wall = WallOf(after, zone);
  wall = wall - ((wall % kMinute) + kMinute) % kMinute + kMinute;
  const int64_t limit = wall + int64_t{5} * 366 * 24 * 3600;
  while (wall < limit) {
    std::time_t w = static_cast<std::time_t>(wall);
    std::tm t{};
    gmtime_r(&w, &t);
    if (!s.months.test(static_cast<size_t>(t.tm_mon + 1))) {
      t.tm_mon += 1;
      t.tm_mday = 1;
      t.tm_hour = t.tm_min = t.tm_sec = 0;
    } else if (!DayMatches(s, t)) {
      t.tm_mday += 1;
      t.tm_hour = t.tm_min = t.tm_sec = 0;
    } else if (!s.hours.test(static_cast<size_t>(t.tm_hour))) {
      t.tm_hour += 1;
      t.tm_min = t.tm_sec = 0;
    } else if (!s.minutes.test(static_cast<size_t>(t.tm_min))) {
      wall += kMinute;
      continue;
    } else {
      TimePoint at = InstantOf(t, zone);
      if (at > after) return at;
      wall += kMinute;  // a wall time that came before `after` (a clock set back)
      continue;
    }
    wall = static_cast<int64_t>(timegm(&t));
  }
  return std::nullopt;
}

}  // namespace baton
