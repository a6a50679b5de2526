// What a job has used and costs: its attempts' GPU-seconds and money, and the price of the
// GPUs it is placed on.
#include "control/job_cost.h"

#include <gtest/gtest.h>

namespace baton::control {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

const TimePoint kStart = FromMillis(1'700'000'000'000);

Job RunningSince(TimePoint start, int64_t milli_gpus, int64_t per_hour_micros) {
  Job j;
  j.id = JobId{1};
  j.state = JobState::kRunning;
  j.started_at = start;
  j.spec.resources.milli_gpus = milli_gpus;
  j.cost_per_hour_micros = per_hour_micros;
  j.gpu_seconds = 100;        // its ended attempts
  j.cost_micros = 5'000'000;  // ... and what they cost
  return j;
}

TEST(JobCost, TheRunningAttemptCountsUntilNowAndEndedAttemptsAreAdded) {
  Job j = RunningSince(kStart, 2000, 3'600'000'000);  // 3600 an hour
  EXPECT_DOUBLE_EQ(AttemptService(j, kStart + seconds(30)), 60);
  EXPECT_DOUBLE_EQ(AllService(j, kStart + seconds(30)), 160);
  EXPECT_EQ(AttemptCost(j, kStart + seconds(30)), 30'000'000);
  EXPECT_EQ(AllCost(j, kStart + seconds(30)), 35'000'000);
  EXPECT_EQ(AttemptCost(j, kStart - seconds(1)), 0);  // a clock behind its start
  j.state = JobState::kSucceeded;                     // ended: only what it kept
  EXPECT_DOUBLE_EQ(AllService(j, kStart + hours(9)), 100);
  EXPECT_EQ(AllCost(j, kStart + hours(9)), 5'000'000);
}

TEST(JobCost, APlacedJobPaysTheCatalogPriceOfEachGpuByTheShareItHolds) {
  NodeTable nodes;
  NodeRecord& n1 = nodes.Ensure("n1");
  n1.info.name = "n1";
  n1.info.gpus = {Gpu{.index = 0, .model = "H100-80GB"}, Gpu{.index = 1, .model = "A100-40GB"}};
  Policy policy;
  policy.prices["H100"] = GpuPrice{.on_demand = 4, .spot = 1};
  policy.prices["A100"] = GpuPrice{.on_demand = 2, .spot = 0.5};
  Job j;
  j.allocation = {NodeAllocation{.node = "n1", .gpus = {0, 1}, .milli_per_gpu = 500},
                  NodeAllocation{.node = "gone", .gpus = {0}, .milli_per_gpu = 1000}};
  EXPECT_EQ(PricePerHour(j, nodes, policy), 3'000'000);  // half of 4 + half of 2; no "gone"
  j.spec.preemptible = true;  // whether it may be preempted does not change its price
  EXPECT_EQ(PricePerHour(j, nodes, policy), 3'000'000);
  n1.info.spot = true;  // a spot node's GPUs cost their spot prices
  EXPECT_EQ(PricePerHour(j, nodes, policy), 750'000);
}

}  // namespace
}  // namespace baton::control
