// Launch failures counted against their nodes once the job proves itself elsewhere
// (control/launch_blame.h); the controller's tests cover the drains it acts on.
#include "control/launch_blame.h"

#include <gtest/gtest.h>

namespace baton::control {
namespace {

using std::chrono::seconds;

const TimePoint kNow = FromMillis(1'790'000'000'000);

// A job that could not start on `failed_on` and now runs on `runs_on`, started at `started`.
Job MovedJob(int64_t id, std::vector<std::string> failed_on, std::string runs_on,
             TimePoint started) {
  Job j;
  j.id = JobId{id};
  j.state = JobState::kRunning;
  j.launch_failed_on = std::move(failed_on);
  j.allocation = {NodeAllocation{.node = std::move(runs_on), .started = true}};
  j.launched = true;
  j.started_at = started;
  return j;
}

TEST(LaunchBlame, AJobIsWatchedUntilItsProgramHasRunLongEnough) {
  LaunchBlame blame;
  std::map<JobId, Job> jobs;
  jobs[JobId{1}] = MovedJob(1, {"bad"}, "good", kNow);
  jobs[JobId{2}] = MovedJob(2, {}, "good", kNow);  // never failed: nothing to prove
  jobs[JobId{3}] = MovedJob(3, {"bad"}, "good", kNow);
  jobs[JobId{3}].launch_blamed = 1;  // counted before (a restore)
  for (const auto& [id, j] : jobs) blame.Watch(j);
  EXPECT_TRUE(blame.Watched(JobId{1}));
  EXPECT_FALSE(blame.Watched(JobId{2}));
  EXPECT_FALSE(blame.Watched(JobId{3}));
  EXPECT_TRUE(blame.Proven(jobs, kNow + seconds(2)).empty());
  EXPECT_EQ(blame.Proven(jobs, kNow + kProvenAfter), std::vector<JobId>{JobId{1}});
  // One that failed where it went too, or is not launched everywhere, has proven nothing.
  jobs[JobId{1}].allocation[0].launch_failed = true;
  EXPECT_TRUE(blame.Proven(jobs, kNow + seconds(10)).empty());
  // One no longer running is forgotten: counted, if at all, when it next starts.
  jobs[JobId{1}].state = JobState::kPending;
  EXPECT_TRUE(blame.Proven(jobs, kNow + seconds(10)).empty());
  EXPECT_FALSE(blame.Watched(JobId{1}));
}

TEST(LaunchBlame, EachFailedNodeCountsOnceAndOneAtTheLimitIsToBeDrained) {
  LaunchBlame blame;
  NodeTable nodes;
  nodes.Ensure("bad").launch_failures = 2;
  nodes.Ensure("flaky");
  nodes.Ensure("drained").drain_reason = "by ada";
  nodes.Ensure("drained").launch_failures = 5;
  nodes.Ensure("good");
  // It failed on "good" too, earlier, and runs there now: "good" is not counted against.
  Job job = MovedJob(7, {"bad", "flaky", "drained", "good", "gone"}, "good", kNow);
  blame.Watch(job);
  bool changed = false;
  std::vector<LaunchBlame::Drain> drains = blame.Blame(job, nodes, /*limit=*/3, &changed);
  ASSERT_EQ(drains.size(), 1u);
  EXPECT_EQ(drains[0].node, "bad");
  EXPECT_EQ(drains[0].reason,
            "launch failures: 3 jobs in a row could not start here and started on other nodes "
            "(last: job 7)");
  EXPECT_EQ(nodes.Find("flaky")->launch_failures, 1);
  EXPECT_EQ(nodes.Find("drained")->launch_failures, 6);  // counted; drained already
  EXPECT_EQ(nodes.Find("good")->launch_failures, 0);
  EXPECT_TRUE(changed);
  EXPECT_EQ(job.launch_blamed, 5);
  EXPECT_FALSE(blame.Watched(JobId{7}));
  // Counted once: blaming again counts nothing.
  EXPECT_TRUE(blame.Blame(job, nodes, 3, &changed).empty());
  EXPECT_FALSE(changed);
  EXPECT_EQ(nodes.Find("flaky")->launch_failures, 1);
  // A limit of 0 counts and never drains.
  Job other = MovedJob(8, {"bad"}, "good", kNow);
  EXPECT_TRUE(blame.Blame(other, nodes, 0, &changed).empty());
  EXPECT_EQ(nodes.Find("bad")->launch_failures, 4);
}

NodeInfo Node(const std::string& name, int gpus) {
  NodeInfo info;
  info.name = name;
  info.pool = "default";
  info.cpus = 16;
  info.memory_bytes = int64_t{64} << 30;
  for (int g = 0; g < gpus; ++g) info.gpus.push_back(Gpu{.index = g, .model = "A100-80GB"});
  return info;
}

TEST(LaunchBlame, AJobThatCouldNotStartMayTryANodeItHasNotFailedOnThatCanHoldIt) {
  const NodeInfo a = Node("a", 4), b = Node("b", 4), small = Node("small", 1);
  const std::vector<sched::KnownNode> known = {{.info = &a}, {.info = &b}, {.info = &small}};
  Job job;
  job.id = JobId{9};
  job.spec.pool = "default";
  job.spec.resources.milli_gpus = 2000;
  job.spec.resources.nodes = 1;
  job.allocation = {NodeAllocation{.node = "a", .launch_failed = true}};
  EXPECT_TRUE(MayStartElsewhere(job, known, /*tried_limit=*/3));
  EXPECT_EQ(job.launch_failed_on, std::vector<std::string>{"a"});
  // Once "b" failed it too, only "small" is left, which cannot hold 2 GPUs.
  job.allocation = {NodeAllocation{.node = "b", .launch_failed = true}};
  EXPECT_FALSE(MayStartElsewhere(job, known, 3));
  EXPECT_EQ(job.launch_failed_on, (std::vector<std::string>{"a", "b"}));
  // A node is recorded once; at the limit of nodes tried it may not try another.
  job.spec.resources.milli_gpus = 1000;
  EXPECT_TRUE(MayStartElsewhere(job, known, 3));
  EXPECT_EQ(job.launch_failed_on.size(), 2u);
  EXPECT_FALSE(MayStartElsewhere(job, known, 2));
}

}  // namespace
}  // namespace baton::control
