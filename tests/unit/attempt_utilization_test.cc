// The running attempts' GPU readings: counted per attempt, read out with the job's, and
// joined to the job's own when the attempt ends.
#include "control/attempt_utilization.h"

#include <gtest/gtest.h>

namespace baton::control {
namespace {

TEST(AttemptUtilization, ReadingsAddUpPerAttemptAndJoinTheJobsWhenItEnds) {
  AttemptUtilization u;
  u.Add(JobId{1}, 80);
  u.Add(JobId{1}, 60);
  u.Add(JobId{2}, 10);
  Job job;
  job.id = JobId{1};
  job.utilization_sum = 100;  // an earlier attempt's
  job.utilization_samples = 1;
  double sum = job.utilization_sum;
  int64_t samples = job.utilization_samples;
  u.AddTo(job.id, &sum, &samples);  // what GET .../metrics shows while it runs
  EXPECT_DOUBLE_EQ(sum, 240);
  EXPECT_EQ(samples, 3);
  EXPECT_EQ(job.utilization_samples, 1);  // a read-out changes nothing
  u.Close(job);
  EXPECT_DOUBLE_EQ(job.utilization_sum, 240);
  EXPECT_EQ(job.utilization_samples, 3);
  EXPECT_EQ(u.size(), 1u);  // job 2's attempt still runs
  u.Close(job);             // a second close adds nothing
  EXPECT_EQ(job.utilization_samples, 3);
  Job quiet;
  quiet.id = JobId{3};
  u.Close(quiet);  // an attempt with no readings
  EXPECT_EQ(quiet.utilization_samples, 0);
}

}  // namespace
}  // namespace baton::control
