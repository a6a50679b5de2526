// What a stretch of a job's metrics file tells the controller (agent/metrics_scan.h):
// checkpoints, and the tracked metric's lowest, highest and last value; whole lines only.
#include "agent/metrics_scan.h"

#include <gtest/gtest.h>

namespace baton::agent {
namespace {

const TimePoint kNow = FromMillis(1'800'000'000'000);

LaunchOrder Tracking(std::string metric) {
  LaunchOrder o;
  o.job = JobId{4};
  o.attempt = 1;
  o.best_metric = std::move(metric);
  return o;
}

TEST(MetricsScan, TheLowestHighestAndLastValueGoWithTheLatestCheckpointThenTheCheckpoint) {
  std::string checkpoint = "/ck/0";
  std::string data =
      "{\"step\": 1, \"loss\": 0.9}\n"
      "{\"checkpoint\": \"/ck/1\"}\n"
      "{\"step\": 2, \"loss\": 0.4}\n"
      "not json\n"
      "{\"step\": 3, \"loss\": 0.6}\n"
      "{\"step\": 4, \"lo";  // still being written: waits for the next scan
  MetricsScan scan = ScanMetricsLines(data, Tracking("loss"), &checkpoint, kNow);
  EXPECT_EQ(scan.consumed, static_cast<int64_t>(data.rfind('\n') + 1));
  ASSERT_EQ(scan.events.size(), 4u);
  EXPECT_EQ(scan.events[0].value, 0.4);  // the lowest
  EXPECT_EQ(scan.events[0].step, 2);
  EXPECT_EQ(scan.events[0].message, "/ck/1");
  EXPECT_EQ(scan.events[1].value, 0.9);  // the highest, before the checkpoint
  EXPECT_EQ(scan.events[1].message, "/ck/0");
  EXPECT_EQ(scan.events[2].value, 0.6);  // the last
  EXPECT_EQ(scan.events[3].kind, JobEvent::Kind::kCheckpoint);
  EXPECT_EQ(scan.events[3].message, "/ck/1");
  EXPECT_EQ(scan.events[3].attempt, 1);
  EXPECT_EQ(checkpoint, "/ck/1");
}

TEST(MetricsScan, WithoutATrackedMetricOnlyCheckpointsAreTold) {
  std::string checkpoint;
  MetricsScan scan =
      ScanMetricsLines("{\"step\": 1, \"loss\": 0.9}\n", Tracking(""), &checkpoint, kNow);
  EXPECT_EQ(scan.consumed, 25);
  EXPECT_TRUE(scan.events.empty());
}

TEST(MetricsScan, APartLineWaitsAndALineLongerThanAReadIsSkipped) {
  std::string checkpoint;
  MetricsScan part = ScanMetricsLines("{\"checkpoint\": \"/c", Tracking("loss"), &checkpoint, kNow);
  EXPECT_EQ(part.consumed, 0);
  EXPECT_TRUE(part.events.empty());
  std::string huge(kMetricsRead, 'x');
  MetricsScan skipped = ScanMetricsLines(huge, Tracking("loss"), &checkpoint, kNow);
  EXPECT_EQ(skipped.consumed, static_cast<int64_t>(kMetricsRead));
  EXPECT_TRUE(skipped.events.empty());
}

}  // namespace
}  // namespace baton::agent
