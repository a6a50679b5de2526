// What the CLI reads and writes on its own: --begin times as Slurm takes them, the labels of a
// multi-node job's log lines, and which commands a command line builds.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <ctime>

#include "cli/commands.h"
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

std::vector<std::string> Subcommands(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  return names;
}

// A command line builds only its command's group (a short command starts sooner): the names
// each group declares must be the commands it adds, or a command would go missing.
TEST(ClientCommands, EachNamedCommandIsBuiltAloneWithItsGroupAndAllOtherwise) {
  const std::vector<std::string> names = ClientCommandNames();
  CLI::App all;
  int code = 0;
  EXPECT_FALSE(AddClientCommands(all, &code));
  EXPECT_EQ(Subcommands(all), names);  // every command, in the order help lists them
  for (const std::string& name : names) {
    if (name == "help") continue;
    CLI::App one;
    EXPECT_TRUE(AddClientCommands(one, &code, std::nullopt, name)) << name;
    std::vector<std::string> built = Subcommands(one);
    EXPECT_NE(std::ranges::find(built, name), built.end()) << name;
    EXPECT_LT(built.size(), names.size()) << name;
  }
  // `baton help CMD` looks CMD up among all; an unknown word gets all, to be named as unknown.
  for (std::string word : {"help", "sumbit", ""}) {
    CLI::App app;
    EXPECT_FALSE(AddClientCommands(app, &code, std::nullopt, word)) << word;
    EXPECT_EQ(Subcommands(app).size(), names.size()) << word;
  }
}

}  // namespace
}  // namespace baton::cli
