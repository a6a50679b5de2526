// What the CLI reads and writes on its own: --begin times as Slurm takes them, and the labels
// of a multi-node job's log lines.
#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

#include "cli/logs.h"
#include "cli/submit.h"

namespace baton::cli {
namespace {

class BeginTime : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tz = std::getenv("TZ");
    old_tz_ = tz != nullptr ? tz : "";
    had_tz_ = tz != nullptr;
    setenv("TZ", "UTC", 1);
    tzset();
  }
  void TearDown() override {
    if (had_tz_)
      setenv("TZ", old_tz_.c_str(), 1);
    else
      unsetenv("TZ");
    tzset();
  }
  // 2026-11-25T10:30:00Z
  TimePoint now_ = *ParseRfc3339("2026-11-25T10:30:00Z");
  std::string old_tz_;
  bool had_tz_ = false;
};

TEST_F(BeginTime, ReadsWhatSlurmsBeginReads) {
  auto at = [&](const char* text) {
    auto t = ParseBeginTime(text, now_, "--begin");
    EXPECT_TRUE(t) << text << ": " << t.error().message();
    return t ? FormatRfc3339(*t) : "";
  };
  EXPECT_EQ(at("+2h"), "2026-11-25T12:30:00.000Z");
  EXPECT_EQ(at("now+30m"), "2026-11-25T11:00:00.000Z");
  EXPECT_EQ(at("now"), "2026-11-25T10:30:00.000Z");
  EXPECT_EQ(at("14:00"), "2026-11-25T14:00:00.000Z");
  EXPECT_EQ(at("09:15:30"), "2026-11-26T09:15:30.000Z");  // passed today: tomorrow
  EXPECT_EQ(at("2026-12-01"), "2026-12-01T00:00:00.000Z");
  EXPECT_EQ(at("2026-12-01T09:00"), "2026-12-01T09:00:00.000Z");
  EXPECT_EQ(at("2026-12-01T09:00:05"), "2026-12-01T09:00:05.000Z");
  EXPECT_EQ(at("2026-12-01T09:00:00Z"), "2026-12-01T09:00:00.000Z");
}

TEST_F(BeginTime, NamesWhatIsNotATime) {
  for (const char* text : {"tomorrow", "now-1h", "+", "+5x", "25:00", "2026-13-01", "14:00x"}) {
    auto t = ParseBeginTime(text, now_, "--begin");
    ASSERT_FALSE(t) << text;
    EXPECT_NE(t.error().message().find("--begin: \"" + std::string(text) + "\" is not a time"),
              std::string::npos)
        << t.error().message();
  }
}

TEST(LineLabeler, LabelsWholeLinesAndKeepsAnUnfinishedOneForTheRest) {
  LineLabeler l("[n1 rank 0] ");
  EXPECT_EQ(l.Add("step 1\nste"), "[n1 rank 0] step 1\n");
  EXPECT_EQ(l.Add("p 2\n\nlast"), "[n1 rank 0] step 2\n[n1 rank 0] \n");
  EXPECT_EQ(l.Flush(), "[n1 rank 0] last\n");
  EXPECT_EQ(l.Flush(), "");
  EXPECT_EQ(l.Add(""), "");
}

}  // namespace
}  // namespace baton::cli
