// Cron schedules (core/cron.h): what crontab(5) users write, read as cron reads it, and the
// next time each names, in UTC and across a daylight-saving change.
#include "core/cron.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

namespace baton {
namespace {

TimePoint Utc(const char* text) { return *ParseRfc3339(text); }

std::string Next(const char* schedule, const char* after) {
  auto s = ParseCron(schedule, "schedule");
  EXPECT_TRUE(s) << s.error().message();
  if (!s) return "";
  auto t = NextCronTime(*s, Utc(after), CronZone::kUtc);
  return t ? FormatRfc3339(*t) : "never";
}

TEST(CronSchedule, NamesTheNextMinuteOfEachField) {
  EXPECT_EQ(Next("0 3 * * *", "2026-11-25T13:40:00Z"), "2026-11-26T03:00:00.000Z");
  EXPECT_EQ(Next("0 3 * * *", "2026-11-25T02:59:59.999Z"), "2026-11-25T03:00:00.000Z");
  // Strictly after: a run at 03:00 asks for the next from 03:00 and gets tomorrow's.
  EXPECT_EQ(Next("0 3 * * *", "2026-11-25T03:00:00Z"), "2026-11-26T03:00:00.000Z");
  EXPECT_EQ(Next("*/15 * * * *", "2026-11-25T13:40:10Z"), "2026-11-25T13:45:00.000Z");
  EXPECT_EQ(Next("* * * * *", "2026-11-25T13:40:10Z"), "2026-11-25T13:41:00.000Z");
  EXPECT_EQ(Next("30 9-17/4 * * *", "2026-11-25T13:40:00Z"), "2026-11-25T17:30:00.000Z");
  EXPECT_EQ(Next("0 0 1,15 * *", "2026-11-25T13:40:00Z"), "2026-12-01T00:00:00.000Z");
  EXPECT_EQ(Next("0 12 * jan *", "2026-11-25T13:40:00Z"), "2027-01-01T12:00:00.000Z");
  // 2026-11-25 is a Wednesday.
  EXPECT_EQ(Next("0 8 * * mon-fri", "2026-11-27T09:00:00Z"), "2026-11-30T08:00:00.000Z");
  EXPECT_EQ(Next("0 8 * * 7", "2026-11-25T13:40:00Z"), "2026-11-29T08:00:00.000Z");  // Sunday
  EXPECT_EQ(Next("5/20 * * * *", "2026-11-25T13:40:00Z"), "2026-11-25T13:45:00.000Z");
  EXPECT_EQ(Next("0 0 29 2 *", "2026-11-25T13:40:00Z"), "2028-02-29T00:00:00.000Z");
  EXPECT_EQ(Next("59 23 31 12 *", "2026-12-31T23:59:00Z"), "2027-12-31T23:59:00.000Z");
}

TEST(CronSchedule, BothDayFieldsRestrictedMeansEitherAsVixieCron) {
  // The 1st of the month, or any Friday: from Wednesday 25th the Friday 27th comes first.
  EXPECT_EQ(Next("0 0 1 * fri", "2026-11-25T13:40:00Z"), "2026-11-27T00:00:00.000Z");
  EXPECT_EQ(Next("0 0 1 * fri", "2026-11-28T00:00:00Z"), "2026-12-01T00:00:00.000Z");
  // One restricted: both must hold (the 13th that is a Friday, with `*` weekday... and here
  // the weekday field is `*`, so only the day counts).
  EXPECT_EQ(Next("0 0 13 * *", "2026-11-25T13:40:00Z"), "2026-12-13T00:00:00.000Z");
}

TEST(CronSchedule, MacrosStandForTheirFields) {
  EXPECT_EQ(Next("@daily", "2026-11-25T13:40:00Z"), "2026-11-26T00:00:00.000Z");
  EXPECT_EQ(Next("@MIDNIGHT", "2026-11-25T13:40:00Z"), "2026-11-26T00:00:00.000Z");
  EXPECT_EQ(Next("@hourly", "2026-11-25T13:40:00Z"), "2026-11-25T14:00:00.000Z");
  EXPECT_EQ(Next("@weekly", "2026-11-25T13:40:00Z"), "2026-11-29T00:00:00.000Z");
  EXPECT_EQ(Next("@monthly", "2026-11-25T13:40:00Z"), "2026-12-01T00:00:00.000Z");
  EXPECT_EQ(Next("@yearly", "2026-11-25T13:40:00Z"), "2027-01-01T00:00:00.000Z");
}

TEST(CronSchedule, BadSchedulesSayWhatIsWrong) {
  auto why = [](const char* text) {
    auto s = ParseCron(text, "schedule");
    return s ? std::string("accepted") : s.error().message();
  };
  EXPECT_EQ(why("0 3 * *"),
            "schedule: \"0 3 * *\": needs 5 fields (minute hour day-of-month month day-of-week), "
            "has 4");
  EXPECT_EQ(why("60 * * * *"),
            "schedule: \"60 * * * *\": minute field \"60\": must be within 0-59");
  EXPECT_EQ(why("0 25 * * *"), "schedule: \"0 25 * * *\": hour field \"25\": must be within 0-23");
  EXPECT_EQ(why("0 0 0 * *"),
            "schedule: \"0 0 0 * *\": day of month field \"0\": must be within 1-31");
  EXPECT_EQ(why("0 0 * foo *"),
            "schedule: \"0 0 * foo *\": month field \"foo\": \"foo\" is not a month");
  EXPECT_EQ(
      why("0 0 * * 5-1"),
      "schedule: \"0 0 * * 5-1\": day of week field \"5-1\": must be within 0-7, low to high");
  EXPECT_EQ(why("*/0 * * * *"),
            "schedule: \"*/0 * * * *\": minute field \"*/0\": the step after / must be a number "
            "from 1 to 59");
  EXPECT_EQ(why("0 0 30 2 *"),
            "schedule: \"0 0 30 2 *\": never comes (no such day in the months named)");
  EXPECT_EQ(why("@reboot"),
            "schedule: \"@reboot\": unknown macro (valid: @hourly, @daily, @midnight, @weekly, "
            "@monthly, @yearly, @annually)");
  EXPECT_EQ(why(""), "schedule: \"\": is empty");
  EXPECT_EQ(why("0 3 * * * *"),
            "schedule: \"0 3 * * * *\": needs 5 fields (minute hour day-of-month month "
            "day-of-week), has 6");
  EXPECT_EQ(why("0,,5 3 * * *"),
            "schedule: \"0,,5 3 * * *\": minute field \"\": \"\" is not a minute");
  EXPECT_EQ(why("0 3 * * MON-fri"), "accepted");
}

// The controller reads schedules on its own clock (TZ): 02:30 every day in New York, across
// the spring change (02:00 -> 03:00 on 2027-03-14) and the autumn one (2026-11-01).
class CronLocalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tz = std::getenv("TZ");
    saved_ = tz ? std::optional<std::string>(tz) : std::nullopt;
    setenv("TZ", "America/New_York", 1);
    tzset();
  }
  void TearDown() override {
    if (saved_) {
      setenv("TZ", saved_->c_str(), 1);
    } else {
      unsetenv("TZ");
    }
    tzset();
  }
  std::optional<std::string> saved_;
};

TEST_F(CronLocalTest, LocalTimesFollowTheZoneAcrossDaylightSaving) {
  auto s = *ParseCron("30 2 * * *", "schedule");
  // Winter: 02:30 EST is 07:30 UTC.
  EXPECT_EQ(FormatRfc3339(*NextCronTime(s, Utc("2026-11-25T12:00:00Z"))),
            "2026-11-26T07:30:00.000Z");
  // Summer: 02:30 EDT is 06:30 UTC.
  EXPECT_EQ(FormatRfc3339(*NextCronTime(s, Utc("2027-06-01T12:00:00Z"))),
            "2027-06-02T06:30:00.000Z");
  // 2027-03-14 has no 02:30: the run comes at the moment it would have been (03:30 EDT), once.
  TimePoint skipped = *NextCronTime(s, Utc("2027-03-13T12:00:00Z"));
  EXPECT_EQ(FormatRfc3339(skipped), "2027-03-14T07:30:00.000Z");
  EXPECT_EQ(FormatRfc3339(*NextCronTime(s, skipped)), "2027-03-15T06:30:00.000Z");
  // A minute schedule never repeats an instant on the autumn night when 01:xx comes twice.
  auto every = *ParseCron("*/30 * * * *", "schedule");
  TimePoint t = Utc("2026-11-01T04:00:00Z");  // 00:00 EDT
  TimePoint before = t;
  for (int i = 0; i < 8; ++i) {
    TimePoint next = *NextCronTime(every, t);
    EXPECT_GT(next, before);
    before = t = next;
  }
}

}  // namespace
}  // namespace baton
