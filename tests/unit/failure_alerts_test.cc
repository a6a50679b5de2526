// The job_failed alerts: one per failed job, and for an array its first failure and then one
// line when it has ended.
#include "control/failure_alerts.h"

#include <gtest/gtest.h>

namespace baton::control {
namespace {

Job Task(int64_t id, int64_t array, int index) {
  Job j;
  j.id = JobId{id};
  j.array_id = JobId{array};
  j.array_index = index;
  j.user = "ada";
  j.spec.name = "sweep";
  j.reason_detail = "exited with code 1";
  return j;
}

TEST(FailureAlerts, AFailedJobIsOneAlertAndOneThatSucceededNone) {
  FailureAlerts alerts;
  Job j = Task(5, 0, -1);
  auto never = []() -> FailureAlerts::Tasks {
    ADD_FAILURE() << "a job of no array has no tasks to count";
    return {};
  };
  EXPECT_FALSE(alerts.Ended(j, JobState::kSucceeded, never));
  EXPECT_FALSE(alerts.Ended(j, JobState::kCancelled, never));
  std::optional<ClusterEvent> e = alerts.Ended(j, JobState::kFailed, never);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, EventKind::kJobFailed);
  EXPECT_EQ(e->severity, Severity::kAlert);
  EXPECT_EQ(e->job, 5);
  EXPECT_EQ(e->message, "job 5 (sweep) of ada failed: exited with code 1");
}

TEST(FailureAlerts, AnArrayIsItsFirstFailureThenHowManyFailedOnceItHasEnded) {
  FailureAlerts alerts;
  int asked = 0;
  auto four = [&asked] {
    ++asked;
    return FailureAlerts::Tasks{.total = 4, .ended = 2};  // task 0, and the one that failed
  };
  EXPECT_FALSE(alerts.Ended(Task(10, 10, 0), JobState::kSucceeded, four));  // before any failure
  std::optional<ClusterEvent> first = alerts.Ended(Task(11, 10, 1), JobState::kFailed, four);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->job, 11);
  EXPECT_EQ(first->message,
            "task 10_1 of array 10 (sweep) of ada failed: exited with code 1; the array's other "
            "failures are counted, and said when it has ended");
  EXPECT_EQ(alerts.open_arrays(), 1u);
  EXPECT_FALSE(alerts.Ended(Task(12, 10, 2), JobState::kFailed, four));  // counted
  std::optional<ClusterEvent> last = alerts.Ended(Task(13, 10, 3), JobState::kSucceeded, four);
  ASSERT_TRUE(last);
  EXPECT_EQ(last->job, 10);  // the array's
  EXPECT_EQ(last->message,
            "array 10 (sweep) of ada has ended: 2 of its 4 tasks failed (`baton jobs --state "
            "failed --expand` lists them)");
  EXPECT_EQ(asked, 1);  // the tasks counted once, at the first failure
  EXPECT_EQ(alerts.open_arrays(), 0u);
}

TEST(FailureAlerts, AnArrayWithOneFailureSaysNothingMoreAndItsLastTaskNothingAtAll) {
  FailureAlerts alerts;
  auto two = [] { return FailureAlerts::Tasks{.total = 2, .ended = 1}; };
  ASSERT_TRUE(alerts.Ended(Task(20, 20, 0), JobState::kFailed, two));
  EXPECT_FALSE(alerts.Ended(Task(21, 20, 1), JobState::kSucceeded, two));  // 1 of 2: said
  EXPECT_EQ(alerts.open_arrays(), 0u);
  // The failure of an array's last task: its alert alone, nothing kept to count.
  auto done = [] { return FailureAlerts::Tasks{.total = 3, .ended = 3}; };
  std::optional<ClusterEvent> e = alerts.Ended(Task(32, 30, 2), JobState::kFailed, done);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "task 30_2 of array 30 (sweep) of ada failed: exited with code 1");
  EXPECT_EQ(alerts.open_arrays(), 0u);
}

TEST(FailureAlerts, AnArraysTasksAreItsIndicesOrThoseMadeAndTheEndedAmongThem) {
  std::map<JobId, Job> jobs;
  for (int i = 0; i < 3; ++i) {
    Job t = Task(40 + i, 40, i);
    t.spec.array = "0-5";  // six indices, three made so far
    t.state = i == 0 ? JobState::kFailed : JobState::kPending;
    jobs[t.id] = t;
  }
  jobs[JobId{43}] = Task(43, 0, -1);  // the next job: not the array's
  FailureAlerts::Tasks t = FailureAlerts::ArrayTasks(jobs.at(JobId{40}), jobs);
  EXPECT_EQ(t.total, 6);
  EXPECT_EQ(t.ended, 1);
  jobs.at(JobId{41}).spec.array.clear();  // no indices to read: the tasks made count
  jobs.at(JobId{41}).state = JobState::kSucceeded;
  t = FailureAlerts::ArrayTasks(jobs.at(JobId{41}), jobs);
  EXPECT_EQ(t.total, 3);
  EXPECT_EQ(t.ended, 2);
}

}  // namespace
}  // namespace baton::control
