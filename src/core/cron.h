// Recurring schedules in cron's five fields, as crontab(5) and Slurm's scrontab read them:
// "MINUTE HOUR DAY-OF-MONTH MONTH DAY-OF-WEEK", each `*`, a number, a range `1-5`, a step
// `*/15` or `0-30/10`, or a list of these `1,15,30`; months and weekdays also by name (jan,
// mon); weekday 0 and 7 are Sunday; and the macros @hourly, @daily (@midnight), @weekly,
// @monthly, @yearly (@annually). As in Vixie cron, when both day fields are restricted a day
// matching either runs. Pure: the time a schedule next comes is computed from a given instant.
#pragma once

#include <bitset>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "core/time.h"

namespace baton {

struct CronSchedule {
  std::bitset<60> minutes;
  std::bitset<24> hours;
  std::bitset<32> days;     // 1..31
  std::bitset<13> months;   // 1..12
  std::bitset<7> weekdays;  // 0 (Sunday)..6
  bool any_day = true;      // the day-of-month field is `*` (or starts with it)
  bool any_weekday = true;  // the day-of-week field likewise
};

// `field` names the input in the error message ("schedule: ..."). A schedule that never comes
// (February 30th) is refused.
Result<CronSchedule> ParseCron(std::string_view text, std::string_view field);

// Whose wall clock the fields are read on: the controller's local time zone (TZ), as cron's.
enum class CronZone { kLocal, kUtc };

// The first minute strictly after `after` that the schedule names; none within five years.
// A local time that a daylight-saving change skips runs at the moment it would have been.
std::optional<TimePoint> NextCronTime(const CronSchedule& schedule, TimePoint after,
                                      CronZone zone = CronZone::kLocal);

}  // namespace baton
