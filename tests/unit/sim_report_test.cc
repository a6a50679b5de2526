// The pictures of `baton sim --report`: well-formed SVG, values drawn where they belong, small
// files for long runs, and "no data" rather than a crash on empty input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/report.h"

namespace baton::sim {
namespace {

using Entry = std::tuple<double, double, int64_t>;
using Points = std::vector<std::pair<double, double>>;

SimResult WithTimeline(std::vector<Entry> timeline) {
  SimResult r;
  r.timeline = std::move(timeline);
  return r;
}

// Jobs submitted at 0 that finish after `jcts` seconds; a negative entry never finishes.
SimResult WithJcts(const std::vector<double>& jcts) {
  SimResult r;
  for (double jct : jcts) {
    JobOutcome o;
    o.submit = 100;
    o.start = jct < 0 ? -1 : 100;
    o.end = jct < 0 ? -1 : 100 + jct;
    r.jobs.push_back(o);
  }
  return r;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Every opened element is closed in order, and no stray '<' or '&' stands in text: enough XML
// for a browser to draw it.
::testing::AssertionResult WellFormed(const std::string& svg) {
  if (svg.rfind("<svg", 0) != 0) return ::testing::AssertionFailure() << "does not start <svg";
  if (svg.size() < 7 || svg.substr(svg.size() - 7) != "</svg>\n") {
    return ::testing::AssertionFailure() << "does not end </svg>\\n";
  }
  std::vector<std::string> open;
  for (size_t at = svg.find('<'); at != std::string::npos; at = svg.find('<', at + 1)) {
    size_t end = svg.find('>', at);
    if (end == std::string::npos) return ::testing::AssertionFailure() << "unclosed tag";
    std::string tag = svg.substr(at + 1, end - at - 1);
    if (tag.find('<') != std::string::npos)
      return ::testing::AssertionFailure() << "raw < in " << tag;
    bool closing = tag[0] == '/', self_closed = tag.back() == '/';
    std::string name = tag.substr(closing ? 1 : 0, tag.find_first_of(" />", 1) - (closing ? 1 : 0));
    if (closing) {
      if (open.empty() || open.back() != name) {
        return ::testing::AssertionFailure() << "</" << name << "> closes nothing open";
      }
      open.pop_back();
    } else if (!self_closed) {
      open.push_back(name);
    }
  }
  if (!open.empty()) return ::testing::AssertionFailure() << "<" << open.back() << "> left open";
  for (size_t at = svg.find('&'); at != std::string::npos; at = svg.find('&', at + 1)) {
    if (svg.find(';', at) > at + 6) return ::testing::AssertionFailure() << "raw & at " << at;
  }
  return ::testing::AssertionSuccess();
}

// The points of each <polyline>, in pixels.
std::vector<Points> Polylines(const std::string& svg) {
  std::vector<Points> lines;
  for (size_t at = svg.find("<polyline"); at != std::string::npos;
       at = svg.find("<polyline", at + 1)) {
    size_t from = svg.find("points=\"", at) + 8, to = svg.find('"', from);
    Points& points = lines.emplace_back();
    const char* p = svg.c_str() + from;
    while (p < svg.c_str() + to) {
      char* next;
      double x = std::strtod(p, &next);
      double y = std::strtod(next + 1, &next);  // skips the comma
      points.emplace_back(x, y);
      p = next;
    }
  }
  return lines;
}

double YFor(double share) { return kPlotBottom - share * (kPlotBottom - kPlotTop); }

TEST(SimReport, EveryChartIsWellFormedWithOneLinePerRunAndALegend) {
  SimResult a = WithTimeline({{0, 2, 3}, {1800, 6, 1}, {3600, 0, 0}});
  a.jobs = WithJcts({30, 600, 5000}).jobs;
  SimResult b = WithTimeline({{0, 8, 0}, {3600, 8, 0}});
  b.jobs = WithJcts({60}).jobs;
  std::vector<ReportRun> runs = {{"fifo", &a, 8}, {"fairshare", &b, 8}};
  for (const std::string& svg : {UtilisationSvg(runs), QueueSvg(runs), JctCdfSvg(runs)}) {
    EXPECT_TRUE(WellFormed(svg)) << svg;
    EXPECT_EQ(Count(svg, "<polyline"), 2u);
    EXPECT_EQ(Count(svg, "<g"), Count(svg, "</g>"));
    EXPECT_NE(svg.find(">fifo</text>"), std::string::npos);
    EXPECT_NE(svg.find(">fairshare</text>"), std::string::npos);
    EXPECT_EQ(svg.find("no data"), std::string::npos);
    // Distinct colours: the runs' strokes differ.
    EXPECT_NE(svg.find("stroke=\"#1f77b4\" points"), std::string::npos);
    EXPECT_NE(svg.find("stroke=\"#d62728\" points"), std::string::npos);
  }
}

TEST(SimReport, TheSameInputDrawsTheSameBytes) {
  SimResult a = WithTimeline({{0, 2, 3}, {1800, 6, 1}, {3600, 0, 0}});
  a.jobs = WithJcts({30, 600, 5000}).jobs;
  std::vector<ReportRun> runs = {{"fifo", &a, 8}};
  EXPECT_EQ(UtilisationSvg(runs), UtilisationSvg(runs));
  EXPECT_EQ(QueueSvg(runs), QueueSvg(runs));
  EXPECT_EQ(JctCdfSvg(runs), JctCdfSvg(runs));
}

TEST(SimReport, LabelsAreEscapedForXml) {
  SimResult a = WithTimeline({{0, 2, 3}, {3600, 0, 0}});
  a.jobs = WithJcts({30}).jobs;
  std::vector<ReportRun> runs = {{"a<b&c \"q\"", &a, 8}};
  for (const std::string& svg : {UtilisationSvg(runs), QueueSvg(runs), JctCdfSvg(runs)}) {
    EXPECT_TRUE(WellFormed(svg)) << svg;
    EXPECT_NE(svg.find("a&lt;b&amp;c &quot;q&quot;"), std::string::npos);
    EXPECT_EQ(svg.find("a<b"), std::string::npos);
  }
}

TEST(SimReport, AHalfBusyClusterIsDrawnAtHalfHeightAcrossThePlot) {
  SimResult a = WithTimeline({{0, 4, 0}, {7200, 4, 0}});
  std::string svg = UtilisationSvg({{"fifo", &a, 8}});
  auto lines = Polylines(svg);
  ASSERT_EQ(lines.size(), 1u);
  ASSERT_EQ(lines[0].size(), static_cast<size_t>(kMaxTimeColumns));
  for (const auto& [x, y] : lines[0]) EXPECT_NEAR(y, YFor(0.5), 0.051);
  // Points sit at the middle of each interval.
  double column = (kPlotRight - kPlotLeft) / kMaxTimeColumns;
  EXPECT_NEAR(lines[0].front().first, kPlotLeft + column / 2, 0.051);
  EXPECT_NEAR(lines[0].back().first, kPlotRight - column / 2, 0.051);
  EXPECT_NE(svg.find("time (hours)"), std::string::npos);
  EXPECT_NE(svg.find(">100%</text>"), std::string::npos);
}

TEST(SimReport, UtilisationIsTheTimeWeightedMeanOfEachInterval) {
  // 800 s over 800 intervals: the first second is idle for half of it, so it averages 50 %;
  // sampling at interval starts would say 0 %.
  SimResult a = WithTimeline({{0, 0, 0}, {0.5, 8, 0}, {800, 8, 0}});
  auto lines = Polylines(UtilisationSvg({{"fifo", &a, 8}}));
  ASSERT_EQ(lines.size(), 1u);
  ASSERT_EQ(lines[0].size(), static_cast<size_t>(kMaxTimeColumns));
  EXPECT_NEAR(lines[0][0].second, YFor(0.5), 0.051);
  for (size_t i = 1; i < lines[0].size(); ++i) EXPECT_NEAR(lines[0][i].second, YFor(1), 0.051);
}

TEST(SimReport, QueueDrawsTheMeanPendingJobsFromTheBottomUp) {
  SimResult a = WithTimeline({{0, 0, 0}, {3600, 0, 4}, {7200, 0, 4}});
  std::string svg = QueueSvg({{"fifo", &a, 8}});
  EXPECT_NE(svg.find("mean per interval"), std::string::npos);
  auto lines = Polylines(svg);
  ASSERT_EQ(lines.size(), 1u);
  ASSERT_EQ(lines[0].size(), static_cast<size_t>(kMaxTimeColumns));
  double high = lines[0].back().second;
  EXPECT_GE(high, kPlotTop - 0.051);
  EXPECT_LT(high, kPlotBottom - 1);
  for (size_t i = 0; i < lines[0].size(); ++i) {
    EXPECT_NEAR(lines[0][i].second, i < lines[0].size() / 2 ? kPlotBottom : high, 0.051) << i;
  }
}

TEST(SimReport, A200000EventRunStaysSmall) {
  std::vector<Entry> timeline;
  for (int i = 0; i < 200'000; ++i) timeline.emplace_back(i * 13.0, i % 9, i % 1000);
  SimResult a = WithTimeline(timeline);
  SimResult b = WithTimeline(std::move(timeline));
  std::vector<ReportRun> runs = {{"fifo", &a, 8}, {"backfill", &b, 8}};
  for (const std::string& svg : {UtilisationSvg(runs), QueueSvg(runs)}) {
    EXPECT_TRUE(WellFormed(svg));
    EXPECT_LT(svg.size(), 200'000u);
    auto lines = Polylines(svg);
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_LE(lines[0].size(), static_cast<size_t>(kMaxTimeColumns));
    EXPECT_NE(svg.find("time (days)"), std::string::npos);  // 30 days
  }
}

TEST(SimReport, TheCdfReachesTheTopAtTheSlowestFinishedJob) {
  SimResult a = WithJcts({600, 10, -1, 3600, 100});  // one never finishes
  std::string svg = JctCdfSvg({{"fifo", &a, 8}});
  EXPECT_TRUE(WellFormed(svg)) << svg;
  auto lines = Polylines(svg);
  ASSERT_EQ(lines.size(), 1u);
  // The axis runs from the tick at the fastest job (10s) to the tick at the slowest (1h).
  EXPECT_NEAR(lines[0].front().first, kPlotLeft, 0.051);
  EXPECT_NEAR(lines[0].front().second, kPlotBottom, 0.051);
  EXPECT_NEAR(lines[0].back().first, kPlotRight, 0.051);
  EXPECT_NEAR(lines[0].back().second, kPlotTop, 0.051);
  // Four finished jobs: the line climbs a quarter at each, never down, never left.
  for (size_t i = 1; i < lines[0].size(); ++i) {
    EXPECT_GE(lines[0][i].first, lines[0][i - 1].first);
    EXPECT_LE(lines[0][i].second, lines[0][i - 1].second);
  }
  EXPECT_NEAR(lines[0][1].second, YFor(0.25), 0.051);
  for (const char* tick : {">10s<", ">1m<", ">10m<", ">1h<"}) {
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  }
  EXPECT_EQ(svg.find(">1s<"), std::string::npos);
  EXPECT_EQ(svg.find(">10h<"), std::string::npos);
}

TEST(SimReport, TheCdfKeepsAtMostItsQuantilesAndEndsAtTheSlowestJob) {
  std::vector<double> jcts;
  for (int i = 1; i <= 50'000; ++i) jcts.push_back(i);
  SimResult a = WithJcts(jcts);
  std::string svg = JctCdfSvg({{"fifo", &a, 8}});
  EXPECT_LT(svg.size(), 200'000u);
  auto lines = Polylines(svg);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_LE(lines[0].size(), 2u * kMaxCdfPoints + 1);
  // From 1s to 1d, log scale.
  double x = kPlotLeft + std::log10(50'000.0) / std::log10(86'400.0) * (kPlotRight - kPlotLeft);
  EXPECT_NEAR(lines[0].back().first, x, 0.051);
  EXPECT_NEAR(lines[0].back().second, kPlotTop, 0.051);
  EXPECT_NE(svg.find(">1d<"), std::string::npos);
}

TEST(SimReport, LongJobsGetDayTicks) {
  SimResult a = WithJcts({5, 30 * 86400.0});
  std::string svg = JctCdfSvg({{"fifo", &a, 8}});
  for (const char* tick : {">1s<", ">1h<", ">1d<", ">10d<", ">100d<"}) {
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  }
  EXPECT_EQ(svg.find(">1000d<"), std::string::npos);
}

TEST(SimReport, EmptyInputsSayNoData) {
  SimResult empty;
  SimResult one = WithTimeline({{5, 3, 2}});
  SimResult instant = WithTimeline({{5, 3, 2}, {5, 4, 1}});
  SimResult unfinished = WithJcts({-1, -1});
  std::vector<std::vector<ReportRun>> cases = {
      {},
      {{"null", nullptr, 8}},
      {{"empty", &empty, 8}},
      {{"one", &one, 8}},
      {{"instant", &instant, 8}},
      {{"unfinished", &unfinished, 8}},
  };
  for (const auto& runs : cases) {
    for (const std::string& svg : {UtilisationSvg(runs), QueueSvg(runs), JctCdfSvg(runs)}) {
      EXPECT_TRUE(WellFormed(svg)) << svg;
      EXPECT_NE(svg.find(">no data</text>"), std::string::npos) << svg;
      EXPECT_EQ(svg.find("<polyline"), std::string::npos);
      EXPECT_EQ(svg.find("nan"), std::string::npos);
      EXPECT_EQ(svg.find("inf"), std::string::npos);
    }
  }
  SimResult busy = WithTimeline({{0, 4, 0}, {3600, 4, 0}});
  EXPECT_NE(UtilisationSvg({{"no gpus", &busy, 0}}).find(">no data</text>"), std::string::npos);
}

TEST(SimReport, ARunWithoutDataIsMarkedInTheLegend) {
  SimResult a = WithTimeline({{0, 4, 1}, {3600, 4, 1}});
  std::string svg = UtilisationSvg({{"fifo", &a, 8}, {"broken", nullptr, 8}});
  EXPECT_TRUE(WellFormed(svg)) << svg;
  EXPECT_EQ(Count(svg, "<polyline"), 1u);
  EXPECT_NE(svg.find(">broken (no data)</text>"), std::string::npos);
}

}  // namespace
}  // namespace baton::sim
