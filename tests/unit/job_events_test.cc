// What an agent's job events record on the job: its tracked metric's last and best values,
// and its latest checkpoint, neither dated after the controller's now.
#include "control/job_events.h"

#include <gtest/gtest.h>

namespace baton::control {
namespace {

const TimePoint kNow = FromMillis(1'794'312'000'000);

JobEvent Metric(double value, int64_t step, TimePoint at) {
  JobEvent e;
  e.kind = JobEvent::Kind::kMetric;
  e.value = value;
  e.step = step;
  e.message = "ckpt-" + std::to_string(step);
  e.at = at;
  return e;
}

TEST(JobEvents, AMetricKeepsItsLastValueAndItsBestWhicheverWayIsBetter) {
  Job job;
  EXPECT_FALSE(NoteMetric(job, Metric(1.0, 1, kNow), kNow));  // it tracks none
  EXPECT_FALSE(job.metric_last);
  job.spec.best_metric = "loss";  // lower is better
  EXPECT_TRUE(NoteMetric(job, Metric(0.9, 1, kNow), kNow));
  EXPECT_TRUE(NoteMetric(job, Metric(0.5, 2, kNow), kNow));
  EXPECT_TRUE(NoteMetric(job, Metric(0.7, 3, kNow + std::chrono::hours(1)), kNow));
  ASSERT_TRUE(job.metric_best);
  EXPECT_EQ(job.metric_best->value, 0.5);
  EXPECT_EQ(job.metric_best->checkpoint, "ckpt-2");
  EXPECT_EQ(job.metric_last->value, 0.7);
  EXPECT_EQ(job.metric_last->step, 3);
  EXPECT_EQ(job.metric_last->at, kNow);  // not in the future
  Job accuracy;
  accuracy.spec.best_metric = "accuracy";
  accuracy.spec.best_max = true;
  NoteMetric(accuracy, Metric(0.6, 1, kNow), kNow);
  NoteMetric(accuracy, Metric(0.8, 2, kNow), kNow);
  NoteMetric(accuracy, Metric(0.7, 3, kNow), kNow);
  EXPECT_EQ(accuracy.metric_best->value, 0.8);
}

TEST(JobEvents, TheLatestCheckpointCountsAndNeverOneFromTheFuture) {
  Job job;
  JobEvent e;
  e.kind = JobEvent::Kind::kCheckpoint;
  e.at = kNow - std::chrono::minutes(5);
  NoteCheckpoint(job, e, kNow);
  EXPECT_EQ(job.last_checkpoint, kNow - std::chrono::minutes(5));
  e.at = kNow - std::chrono::minutes(10);  // an older one, reported late
  NoteCheckpoint(job, e, kNow);
  EXPECT_EQ(job.last_checkpoint, kNow - std::chrono::minutes(5));
  e.at = kNow + std::chrono::hours(1);  // a clock ahead of the controller's
  NoteCheckpoint(job, e, kNow);
  EXPECT_EQ(job.last_checkpoint, kNow);
}

}  // namespace
}  // namespace baton::control
