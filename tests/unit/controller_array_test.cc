// Job arrays (issue 16): one id for the array, a job per task, a throttle (%N) that keeps at
// most N tasks queued or running, and actions on the whole array or one task (12_7).
#include "controller_fixture.h"

namespace baton::control {
namespace {

class ArrayTest : public ControllerTest {
 protected:
  void SetUp() override {
    ControllerTest::SetUp();
    RegisterNode("n1", 8);
  }

  Answered<SubmitJobs> SubmitArray(const std::string& array, int64_t milli = 1000) {
    JobSpec s;
    s.name = "sweep";
    s.command = {"train"};
    s.resources.milli_gpus = milli;
    s.array = array;
    return Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}});
  }

  std::vector<const Job*> Tasks(JobId array) {
    std::vector<const Job*> out;
    for (const auto& [id, j] : c_->jobs()) {
      if (j.array_id == array) out.push_back(&j);
    }
    return out;
  }

  int Count(JobId array, JobState state) {
    int n = 0;
    for (const Job* j : Tasks(array)) n += j->state == state;
    return n;
  }

  void Finish(const Job& task) {
    ReportEvent("n1", {.job = task.id, .kind = JobEvent::Kind::kStarted});
    ReportEvent("n1", {.job = task.id, .kind = JobEvent::Kind::kExited});
  }
};

TEST_F(ArrayTest, AnArrayIsOneJobPerIndexUnderTheIdOfItsFirst) {
  auto r = SubmitArray("1,5,9");
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r->jobs.size(), 3u);
  JobId array = r->jobs[0].id;
  std::vector<int> indices;
  for (const Job& j : r->jobs) {
    EXPECT_EQ(j.array_id, array);
    indices.push_back(j.array_index);
  }
  EXPECT_EQ(indices, (std::vector<int>{1, 5, 9}));
  EXPECT_EQ(r->jobs[2].id.value, array.value + 2);
  EXPECT_EQ(Count(array, JobState::kRunning), 3);
  // The launch tells each task who it is.
  std::vector<Order> orders = Poll("n1");
  ASSERT_EQ(orders.size(), 3u);
  EXPECT_EQ(orders[1].launch.array_id, array);
  EXPECT_EQ(orders[1].launch.array_index, 5);
  // A task by its index; an index the array does not have.
  auto task = Run(GetJob{.caller = {"ada", false}, .id = array, .array_index = 9});
  ASSERT_TRUE(task.status.ok());
  EXPECT_EQ(task->job.array_index, 9);
  auto none = Run(GetJob{.caller = {"ada", false}, .id = array, .array_index = 2});
  EXPECT_EQ(none.status.message(), "job " + array.ToString() + "_2 does not exist");
}

TEST_F(ArrayTest, AThrottleKeepsAtMostNTasksGoingAndTheRestWaitInIndexOrder) {
  auto r = SubmitArray("0-9%3");
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  JobId array = r->jobs[0].id;
  EXPECT_EQ(Count(array, JobState::kRunning), 3);
  const Job& waiting = *c_->FindJob(JobId{array.value + 5});
  EXPECT_EQ(waiting.reason, WaitReason::kArrayLimit);
  EXPECT_EQ(waiting.reason_detail,
            "array " + array.ToString() + " runs at most 3 tasks at once (%3)");
  Poll("n1");
  for (int round = 0; round < 4; ++round) {
    std::vector<const Job*> running;
    for (const Job* t : Tasks(array)) {
      if (t->state == JobState::kRunning) running.push_back(t);
    }
    ASSERT_LE(running.size(), 3u);
    for (const Job* t : running) Finish(*t);
    Poll("n1");
  }
  EXPECT_EQ(Count(array, JobState::kSucceeded), 10);
}

// A waiting task that can never run (updated to wait for the success of a job that was
// cancelled) fails without giving up a place it never held: the throttle still lets one task
// go at a time.
TEST_F(ArrayTest, AWaitingTaskThatCanNeverRunFailsAndTheThrottleStillHolds) {
  JobSpec gone;
  gone.command = {"prepare"};
  gone.hold = true;
  auto g = Run(SubmitJobs{.caller = {"ada", false}, .specs = {gone}});
  ASSERT_TRUE(g.status.ok()) << g.status.message();
  const JobId cancelled = g->jobs[0].id;
  ASSERT_TRUE(
      Run(JobAction{.caller = {"ada", false}, .id = cancelled, .kind = JobAction::Kind::kCancel})
          .status.ok());
  JobId array = SubmitArray("0-2%1")->jobs[0].id;
  ASSERT_EQ(Count(array, JobState::kRunning), 1);
  UpdateJob u{.caller = {"ada", false}, .id = array, .array_index = 1, .set = {"after"}};
  u.fields.after = {cancelled};
  ASSERT_TRUE(Run(u).status.ok());
  const Job& task1 = *c_->FindJob(array, 1);
  EXPECT_EQ(task1.state, JobState::kFailed);
  EXPECT_EQ(task1.reason, WaitReason::kDependency);
  EXPECT_EQ(Count(array, JobState::kRunning), 1);  // task 0 alone, still
  const Job& task2 = *c_->FindJob(array, 2);
  EXPECT_EQ(task2.state, JobState::kPending);
  EXPECT_EQ(task2.reason, WaitReason::kArrayLimit);
  Poll("n1");
  Finish(*c_->FindJob(array, 0));  // its end lets task 2 go
  EXPECT_EQ(task2.state, JobState::kRunning);
}

TEST_F(ArrayTest, ACancelOfTheArraysIdCancelsEveryTaskAndOfOneTaskThatTaskAlone) {
  JobId array = SubmitArray("0-5%2")->jobs[0].id;
  auto one = Run(JobAction{
      .caller = {"ada", false}, .id = array, .kind = JobAction::Kind::kCancel, .array_index = 4});
  ASSERT_TRUE(one.status.ok()) << one.status.message();
  EXPECT_EQ(c_->FindJob(JobId{array.value + 4})->state, JobState::kCancelled);
  EXPECT_EQ(Count(array, JobState::kCancelled), 1);
  // Hold the array: the waiting tasks are held, the running ones go on.
  Run(JobAction{.caller = {"ada", false}, .id = array, .kind = JobAction::Kind::kHold});
  EXPECT_EQ(Count(array, JobState::kRunning), 2);
  EXPECT_EQ(Count(array, JobState::kHeld), 3);
  Run(JobAction{.caller = {"ada", false}, .id = array, .kind = JobAction::Kind::kRelease});
  EXPECT_EQ(Count(array, JobState::kHeld), 0);
  EXPECT_EQ(Count(array, JobState::kRunning), 2);  // the throttle still holds
  Run(JobAction{.caller = {"ada", false}, .id = array, .kind = JobAction::Kind::kCancel});
  EXPECT_EQ(Count(array, JobState::kPending), 0);
  EXPECT_EQ(Count(array, JobState::kCancelled), 4);  // the running two stop with their grace
  auto other = Run(JobAction{.caller = {"grace", false}, .id = array});
  EXPECT_EQ(other.status.code(), Code::kPermissionDenied);
}

TEST_F(ArrayTest, TheThrottleHoldsAcrossARestart) {
  JobId array = SubmitArray("0-5%2")->jobs[0].id;
  Poll("n1");
  ReportEvent("n1", {.job = array, .kind = JobEvent::Kind::kStarted});
  c_ = std::make_unique<Controller>();
  c_->Restore(*store_.Load(), now_);
  RegisterNode("n1", 8,
               {JobEvent{.job = array, .kind = JobEvent::Kind::kStarted},
                JobEvent{.job = JobId{array.value + 1}, .kind = JobEvent::Kind::kStarted}});
  Run(Tick{});
  EXPECT_EQ(Count(array, JobState::kRunning), 2);
  EXPECT_EQ(Count(array, JobState::kPending), 4);
}

TEST_F(ArrayTest, BadArraysAreRefusedNamingTheField) {
  for (const char* bad : {"", "5-1", "0-2000000", "a", "1,,2", "0-9%0", "0-20:0"}) {
    if (std::string(bad).empty()) continue;
    auto r = SubmitArray(bad);
    ASSERT_FALSE(r.status.ok()) << bad;
    EXPECT_EQ(r.status.message().rfind("array: \"", 0), 0u) << r.status.message();
  }
  auto big = SubmitArray("0-10000");
  EXPECT_EQ(big.status.code(), Code::kInvalidArgument) << big.status.message();
  EXPECT_TRUE(c_->jobs().empty());
}

TEST_F(ArrayTest, ASweepIsAnArrayWhoseTasksGetTheirParameters) {
  JobSpec s;
  s.name = "lr";
  s.command = {"python", "train.py", "--lr={lr}", "--bs", "{bs}"};
  s.resources.milli_gpus = 1000;
  s.sweep = {{{"lr", "0.1"}, {"bs", "32"}}, {{"lr", "0.01"}, {"bs", "64"}}};
  s.array = "%1";
  auto r = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r->jobs.size(), 2u);
  const Job& second = r->jobs[1];
  EXPECT_EQ(second.array_index, 1);
  EXPECT_EQ(second.spec.command,
            (std::vector<std::string>{"python", "train.py", "--lr=0.01", "--bs", "64"}));
  EXPECT_EQ(second.spec.env,
            (std::vector<std::pair<std::string, std::string>>{{"lr", "0.01"}, {"bs", "64"}}));
  EXPECT_EQ(second.spec.array, "0-1%1");
  EXPECT_TRUE(second.spec.sweep.empty());
  EXPECT_EQ(Count(r->jobs[0].id, JobState::kRunning), 1);  // the throttle
  // With a sweep, an array may only be a throttle.
  s.array = "0-5";
  auto bad = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}});
  EXPECT_NE(bad.status.message().find("array: with a sweep, only a throttle"), std::string::npos)
      << bad.status.message();
}

}  // namespace
}  // namespace baton::control
