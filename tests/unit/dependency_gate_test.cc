// The controller's DependencyGate: why a pending job may not enter the queue yet (its
// dependencies, the singleton rule, its begin time), and the blocked jobs it keeps, found again
// when a job they name ends or their time comes.
#include "control/dependency_gate.h"

#include <gtest/gtest.h>

namespace baton::control {
namespace {

using std::chrono::hours;

class DependencyGateTest : public ::testing::Test {
 protected:
  Job& Add(int64_t id, JobState state, std::string user = "ada", std::string name = "j") {
    Job& job = jobs_[JobId{id}];
    job.id = JobId{id};
    job.state = state;
    job.user = std::move(user);
    job.spec.name = std::move(name);
    return job;
  }
  DependencyGate::Waiting Judge(const Job& job) { return DependencyGate::Judge(job, jobs_, now_); }

  DependencyGate::Jobs jobs_;
  DependencyGate gate_;
  const TimePoint now_ = FromMillis(1'790'000'000'000);
};

TEST_F(DependencyGateTest, DependenciesWaitAndOneThatCanNeverBeMetSaysSo) {
  Add(1, JobState::kRunning);
  Add(2, JobState::kFailed);
  Add(3, JobState::kSucceeded);
  Job& after = Add(10, JobState::kPending);
  after.spec.after = {JobId{1}};
  EXPECT_EQ(Judge(after).reason, WaitReason::kDependency);
  EXPECT_EQ(Judge(after).detail, "waiting for job 1 to succeed");
  after.spec.after = {JobId{2}};
  EXPECT_TRUE(Judge(after).never);
  EXPECT_EQ(Judge(after).detail, "job 2 it runs after (after-ok) ended failed; it can never run");
  after.spec.after.clear();
  after.spec.after_notok = {JobId{3}};
  EXPECT_TRUE(Judge(after).never);
  after.spec.after_notok = {JobId{2}};
  after.spec.after_any = {JobId{3}, JobId{99}};  // a job that is gone counts as met
  EXPECT_EQ(Judge(after).reason, WaitReason::kNone);
}

TEST_F(DependencyGateTest, AnArraysIdStandsForEveryTask) {
  for (int64_t id : {20, 21, 22}) {
    Job& task = Add(id, id == 22 ? JobState::kRunning : JobState::kSucceeded);
    task.array_id = JobId{20};
    task.array_index = static_cast<int>(id - 20);
  }
  Job& after = Add(30, JobState::kPending);
  after.spec.after = {JobId{20}};
  EXPECT_EQ(Judge(after).reason, WaitReason::kDependency);
  jobs_.at(JobId{22}).state = JobState::kFailed;
  EXPECT_EQ(Judge(after).detail,
            "job 20 it runs after (after-ok) ended failed (task 20_2); it can never run");
}

TEST_F(DependencyGateTest, ASingletonWaitsForTheEarlierOneThenTheBeginTime) {
  Add(1, JobState::kRunning, "ada", "nightly");
  Add(2, JobState::kRunning, "bob", "nightly");
  Job& second = Add(3, JobState::kPending, "ada", "nightly");
  second.spec.singleton = true;
  second.spec.begin = now_ + hours(1);
  EXPECT_EQ(Judge(second).detail, "singleton: waiting for job 1 of the same name and user to end");
  jobs_.at(JobId{1}).state = JobState::kSucceeded;
  EXPECT_EQ(Judge(second).reason, WaitReason::kBeginTime);
  second.spec.schedule = "@daily";
  EXPECT_EQ(Judge(second).reason, WaitReason::kSchedule);
}

TEST_F(DependencyGateTest, BlockedJobsAreFoundWhenWhatTheyNameEndsOrTheirTimeComes) {
  Job& first = Add(1, JobState::kRunning, "ada", "nightly");
  Job& after = Add(2, JobState::kPending);
  after.spec.after_any = {JobId{1}};
  Job& later = Add(3, JobState::kPending);
  later.spec.begin = now_ + hours(2);
  Job& single = Add(4, JobState::kPending, "ada", "nightly");
  single.spec.singleton = true;
  for (Job* j : {&after, &later, &single}) gate_.Block(*j, Judge(*j));
  EXPECT_EQ(gate_.blocked().size(), 3u);
  EXPECT_TRUE(gate_.WaitsForTime());
  EXPECT_EQ(gate_.AfterEnd(first, jobs_), (std::vector<JobId>{JobId{2}, JobId{4}}));
  EXPECT_TRUE(gate_.Due(now_ + hours(1)).empty());
  EXPECT_EQ(gate_.Due(now_ + hours(2)), std::vector<JobId>{JobId{3}});
  EXPECT_TRUE(gate_.Unblock(later));
  EXPECT_FALSE(gate_.Unblock(later));
  EXPECT_FALSE(gate_.WaitsForTime());
  EXPECT_TRUE(gate_.Unblock(single));
  EXPECT_EQ(gate_.AfterEnd(first, jobs_), std::vector<JobId>{JobId{2}});
}

TEST_F(DependencyGateTest, AnArraysThrottleIsItsGateUntilNoTaskHoldsOrWaits) {
  Job& task = Add(10, JobState::kPending);
  task.array_id = JobId{10};
  task.spec.array = "0-9%2";
  DependencyGate::ArrayGate* gate = gate_.GateOf(task);
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(gate->limit, 2);
  gate->active = 2;
  gate_.Block(task, DependencyGate::Waiting{});  // behind the throttle
  EXPECT_EQ(gate->waiting.count(JobId{10}), 1u);
  EXPECT_TRUE(gate_.Blocked(JobId{10}));
  gate->active = 0;
  gate_.DropGateIfIdle(JobId{10});
  EXPECT_EQ(gate_.GateOf(task), gate) << "a task waits: kept";
  EXPECT_TRUE(gate_.Unblock(task));
  EXPECT_TRUE(gate->waiting.empty());
  gate_.DropGateIfIdle(JobId{10});
  Job plain = task;
  plain.array_id = JobId{0};
  EXPECT_EQ(gate_.GateOf(plain), nullptr);
  task.spec.array = "0-9";
  task.array_id = JobId{11};
  EXPECT_EQ(gate_.GateOf(task), nullptr) << "no throttle";
}

}  // namespace
}  // namespace baton::control
