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

TEST(AttemptUtilization, AReportsReadingsCountForTheNodesStartedJobsAsTheMeanOfTheirGpus) {
  NodeRecord node;
  node.info.name = "n1";
  std::map<JobId, Job> jobs;
  RunningJobs running;
  auto run = [&](int64_t id, std::vector<NodeAllocation> allocation) {
    Job& j = jobs[JobId{id}];
    j.id = JobId{id};
    j.allocation = std::move(allocation);
    running.emplace(j.id, &j, RunningJobs::Kept{});
    node.running.insert(j.id);
  };
  run(1, {NodeAllocation{.node = "n1", .gpus = {0, 1}, .started = true}});
  run(2, {NodeAllocation{.node = "n1", .gpus = {2}}});  // not started yet: no reading
  run(3, {NodeAllocation{.node = "n0", .gpus = {0}, .started = true},
          NodeAllocation{.node = "n1", .gpus = {3}, .started = true}});
  AttemptUtilization u;
  u.Observe(
      node,
      {GpuSample{.index = 0, .utilization_pct = 90}, GpuSample{.index = 1, .utilization_pct = 50},
       GpuSample{.index = 2, .utilization_pct = 100}},
      running);
  double sum = 0;
  int64_t samples = 0;
  u.AddTo(JobId{1}, &sum, &samples);
  EXPECT_DOUBLE_EQ(sum, 70);  // the mean of GPUs 0 and 1
  EXPECT_EQ(samples, 1);
  EXPECT_EQ(u.size(), 1u);       // job 2 not started, job 3's GPU 3 not read, n0 not this node
  u.Observe(node, {}, running);  // a report without readings adds none
  EXPECT_EQ(u.size(), 1u);
}

}  // namespace
}  // namespace baton::control
