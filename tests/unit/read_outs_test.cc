// What users read of the controller's state, answered from its parts alone (control/read_outs.h):
// the controller's tests read the same through its commands.
#include "control/read_outs.h"

#include <gtest/gtest.h>

namespace baton::control {
namespace {

using std::chrono::seconds;

const TimePoint kNow = FromMillis(1'700'000'000'000);

// The parts a ReadOuts reads, owned here.
struct Parts {
  Policy policy;
  std::map<JobId, Job> jobs;
  sched::JobQueue queue;
  DependencyGate gate;
  RunningJobs running;
  NodeTable nodes;
  sched::ClusterView view;
  sched::UsageLedger usage;
  EventRing events;
  TokenBook tokens;
  Counters counters;
  JobTally tally;  // counted from `jobs` by Read(), as the controller keeps it
  CronBook crons;
  BudgetBook budgets;
  AttemptUtilization utilization;
  AccountNumbers numbers;

  ReadOuts Read() {
    tally = JobTally::Of(jobs);
    return ReadOuts{.policy = policy,
                    .jobs = jobs,
                    .queue = queue,
                    .gate = gate,
                    .running = running,
                    .nodes = nodes,
                    .view = view,
                    .usage = usage,
                    .events = events,
                    .tokens = tokens,
                    .counters = counters,
                    .tally = tally,
                    .crons = crons,
                    .budgets = budgets,
                    .utilization = utilization,
                    .numbers = numbers};
  }
  Job& Add(int64_t id, std::string user, JobState state) {
    Job& j = jobs[JobId{id}];
    j.id = JobId{id};
    j.user = std::move(user);
    j.spec.project = "p";
    j.state = state;
    j.submitted_at = kNow - seconds(100);
    return j;
  }
  // Job `id` running on GPUs `gpus` of node `node` since 30 s ago, at 3600 an hour.
  Job& Run(int64_t id, const std::string& node, std::vector<int> gpus) {
    Job& j = Add(id, "ada", JobState::kRunning);
    j.spec.resources.milli_gpus = static_cast<int64_t>(gpus.size()) * 1000;
    j.allocation = {NodeAllocation{.node = node, .gpus = std::move(gpus)}};
    j.started_at = kNow - seconds(30);
    j.cost_per_hour_micros = 3'600'000'000;
    running.emplace(j.id, &j, RunningJobs::Kept{});
    nodes.Ensure(node).running.insert(j.id);
    return j;
  }
};

TEST(ReadOuts, FindsAJobByIdAndATaskByItsArrayAndIndex) {
  Parts s;
  s.Add(10, "ada", JobState::kPending).array_id = JobId{10};
  Job& task = s.Add(11, "ada", JobState::kPending);
  task.array_id = JobId{10};
  task.array_index = 1;
  EXPECT_EQ(FindJob(s.jobs, JobId{11}), &task);
  EXPECT_EQ(FindJob(s.jobs, JobId{10}, 1), &task);
  EXPECT_EQ(FindJob(s.jobs, JobId{10}, 7), nullptr);  // no such index
  EXPECT_EQ(FindJob(s.jobs, JobId{11}, 1), nullptr);  // 11 is a task, not an array
  EXPECT_EQ(FindJob(s.jobs, JobId{99}), nullptr);
  auto missing = s.Read().Get(GetJob{.id = JobId{10}, .array_index = 7}, kNow);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), Code::kNotFound);
}

TEST(ReadOuts, PagesOfJobsAreFilteredAndShowTheRunningAttemptsCost) {
  Parts s;
  s.Add(1, "ada", JobState::kSucceeded);
  s.Add(2, "bob", JobState::kPending);
  s.Run(3, "n1", {0});
  s.Add(4, "ada", JobState::kPending);
  JobPage first = s.Read().List(ListJobs{.limit = 2}, kNow);
  ASSERT_EQ(first.jobs.size(), 2u);
  EXPECT_EQ(first.next, 2);
  JobPage ada = s.Read().List(ListJobs{.user = "ada", .after = *first.next}, kNow);
  ASSERT_EQ(ada.jobs.size(), 2u);
  EXPECT_EQ(ada.jobs[0].id, JobId{3});
  EXPECT_EQ(ada.jobs[0].cost_micros, 30'000'000);  // 30 s at 3600 an hour
  EXPECT_EQ(ada.next, std::nullopt);
  JobPage pending = s.Read().List(ListJobs{.states = {JobState::kPending}}, kNow);
  ASSERT_EQ(pending.jobs.size(), 2u);
  EXPECT_EQ(pending.jobs[1].id, JobId{4});
}

TEST(ReadOuts, NodesListEachGpusJobsAndUsageCountsRunningJobsToNow) {
  Parts s;
  NodeRecord& n1 = s.nodes.Ensure("n1");
  n1.info.name = "n1";
  n1.info.gpus = {Gpu{.index = 0}, Gpu{.index = 1}};
  n1.gpu_drains[0] = "fan";
  s.Run(7, "n1", {1});
  NodeList nodes = s.Read().Nodes();
  ASSERT_EQ(nodes.nodes.size(), 1u);
  EXPECT_EQ(nodes.nodes[0].gpu_jobs, (std::vector<std::vector<int64_t>>{{}, {7}}));
  EXPECT_EQ(nodes.nodes[0].gpu_drain_reasons, (std::vector<std::string>{"fan", ""}));

  s.Add(8, "bob", JobState::kSucceeded).finished_at = kNow - seconds(90);
  UsageReport all = s.Read().Usage(GetUsage{}, kNow);
  ASSERT_EQ(all.projects.size(), 1u);
  EXPECT_EQ(all.projects[0].jobs, 2);
  EXPECT_EQ(all.projects[0].running, 1);
  EXPECT_DOUBLE_EQ(all.projects[0].gpu_seconds, 30);
  EXPECT_EQ(all.users.size(), 2u);
  // Jobs that ended before `since` are left out.
  UsageReport recent = s.Read().Usage(GetUsage{.since = kNow - seconds(60)}, kNow);
  ASSERT_EQ(recent.projects.size(), 1u);
  EXPECT_EQ(recent.projects[0].jobs, 1);
}

}  // namespace
}  // namespace baton::control
