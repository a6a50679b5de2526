// Recurring jobs (issue 16): a job with a cron schedule is a series of runs, each a job that
// waits (reason schedule) for its time; the next is queued when one ends; deleting the
// schedule or cancelling the waiting run ends the series; restarts lose no run and start a
// missed one once.
#include "controller_fixture.h"
#include "core/cron.h"

namespace baton::control {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

class ControllerCronTest : public ControllerTest {
 protected:
  // Runs come minutes to months apart: the node stays known however long the test waits.
  static ControllerOptions Patient() {
    return ControllerOptions{.node_timeout = hours(24 * 366 * 5)};
  }

  void SetUp() override {
    c_ = std::make_unique<Controller>(Patient());
    ControllerTest::SetUp();
    RegisterNode("n1", 4);
  }

  static JobSpec Nightly(const char* schedule = "*/10 * * * *") {
    JobSpec s;
    s.name = "nightly";
    s.command = {"python3", "eval.py"};
    s.resources.milli_gpus = 1000;
    s.schedule = schedule;
    return s;
  }

  JobId SubmitSpec(const JobSpec& s, const std::string& user = "ada") {
    auto r = Run(SubmitJobs{.caller = {user, false}, .specs = {s}});
    EXPECT_TRUE(r.status.ok()) << r.status.message();
    return r->jobs.empty() ? JobId{0} : r->jobs[0].id;
  }

  static TimePoint NextAfter(const char* schedule, TimePoint t) {
    return *NextCronTime(*ParseCron(schedule, "schedule"), t);
  }

  void RunUntilStarted(JobId id) {
    now_ = *J(id).spec.begin;
    Run(Tick{});
    ASSERT_EQ(State(id), JobState::kRunning);
    Poll("n1");
    ReportEvent("n1", {.job = id, .kind = JobEvent::Kind::kStarted});
  }

  void Exit(JobId id, int code) {
    ReportEvent("n1", {.job = id, .kind = JobEvent::Kind::kExited, .exit_code = code});
  }

  const Job& J(JobId id) { return *c_->FindJob(id); }

  std::vector<CronEntry> Crons(const std::string& user = "") {
    return Run(ListCrons{.user = user})->crons;
  }

  void Restart() {
    c_ = std::make_unique<Controller>(Patient());
    c_->Restore(*store_.Load(), now_);
    RegisterNode("n1", 4, {});
  }
};

TEST_F(ControllerCronTest, EachRunWaitsForItsTimeAndTheNextIsQueuedWhenItEnds) {
  JobId first = SubmitSpec(Nightly());
  TimePoint at = NextAfter("*/10 * * * *", now_);
  EXPECT_EQ(State(first), JobState::kPending);
  EXPECT_EQ(J(first).cron_id, first);
  EXPECT_EQ(J(first).spec.begin, at);
  EXPECT_EQ(J(first).reason, WaitReason::kSchedule);
  EXPECT_EQ(J(first).reason_detail, "recurring (*/10 * * * *): next run at " + FormatRfc3339(at));
  now_ = at - seconds(1);
  Run(Tick{});
  EXPECT_EQ(State(first), JobState::kPending);

  RunUntilStarted(first);
  now_ += seconds(30);
  Exit(first, 3);  // however it ends, the series goes on
  EXPECT_EQ(State(first), JobState::kFailed);
  JobId second{first.value + 1};
  ASSERT_NE(c_->FindJob(second), nullptr);
  EXPECT_EQ(J(second).cron_id, first);
  EXPECT_EQ(J(second).state, JobState::kPending);
  EXPECT_EQ(J(second).reason, WaitReason::kSchedule);
  EXPECT_EQ(J(second).spec.begin, NextAfter("*/10 * * * *", now_));
  EXPECT_EQ(J(second).spec.command, J(first).spec.command);
  EXPECT_EQ(J(second).user, "ada");

  std::vector<CronEntry> crons = Crons();
  ASSERT_EQ(crons.size(), 1u);
  EXPECT_EQ(crons[0].id, first);
  EXPECT_EQ(crons[0].runs, 2);
  EXPECT_EQ(crons[0].current.id, second);
  ASSERT_TRUE(crons[0].last);
  EXPECT_EQ(crons[0].last->id, first);
  EXPECT_EQ(crons[0].last->state, JobState::kFailed);
  EXPECT_TRUE(Crons("grace").empty());
}

TEST_F(ControllerCronTest, ARunThatOverlapsItsNextTimesSkipsThem) {
  JobId first = SubmitSpec(Nightly());
  RunUntilStarted(first);
  now_ += minutes(35);  // three more times came while it ran
  Exit(first, 0);
  JobId second{first.value + 1};
  EXPECT_EQ(J(second).spec.begin, NextAfter("*/10 * * * *", now_));
  EXPECT_GT(*J(second).spec.begin, now_);
  EXPECT_EQ(c_->jobs().size(), 2u);  // one run queued, not four
}

TEST_F(ControllerCronTest, CancellingTheWaitingRunEndsTheSeriesAndARunningOneOnlyItself) {
  JobId first = SubmitSpec(Nightly());
  RunUntilStarted(first);
  Run(JobAction{.caller = {"ada", false}, .id = first, .kind = JobAction::Kind::kCancel});
  ReportEvent("n1", {.job = first, .kind = JobEvent::Kind::kExited, .signal = 15});
  EXPECT_EQ(State(first), JobState::kCancelled);
  JobId second{first.value + 1};
  ASSERT_NE(c_->FindJob(second), nullptr);  // the schedule goes on
  EXPECT_EQ(State(second), JobState::kPending);

  auto r = Run(JobAction{.caller = {"ada", false}, .id = second, .kind = JobAction::Kind::kCancel});
  ASSERT_TRUE(r.status.ok());
  EXPECT_TRUE(r->job.cron_stopped);
  EXPECT_EQ(State(second), JobState::kCancelled);
  EXPECT_EQ(c_->FindJob(JobId{second.value + 1}), nullptr);
  EXPECT_TRUE(Crons().empty());
  Restart();  // and stays ended
  EXPECT_TRUE(Crons().empty());
  EXPECT_EQ(c_->jobs().size(), 2u);
}

TEST_F(ControllerCronTest, DeletingTheScheduleLetsARunningRunEndAndQueuesNoMore) {
  JobId waiting = SubmitSpec(Nightly("0 3 1 1 *"));
  JobId running = SubmitSpec(Nightly());
  RunUntilStarted(running);

  auto denied = Run(DeleteCron{.caller = {"grace", false}, .id = running});
  EXPECT_EQ(denied.status.code(), Code::kPermissionDenied);
  EXPECT_EQ(denied.status.message(), "recurring job " + running.ToString() + " belongs to ada");

  auto r = Run(DeleteCron{.caller = {"ada", false}, .id = running});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r->cron.current.state, JobState::kRunning);
  EXPECT_EQ(State(running), JobState::kRunning);
  Exit(running, 0);
  EXPECT_EQ(State(running), JobState::kSucceeded);
  EXPECT_EQ(c_->jobs().size(), 2u);

  // An admin deletes anyone's; the waiting run is cancelled, saying why.
  r = Run(DeleteCron{.caller = {"root", true}, .id = waiting});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(State(waiting), JobState::kCancelled);
  EXPECT_EQ(J(waiting).reason_detail, "its schedule was deleted by root");
  EXPECT_TRUE(Crons().empty());

  auto again = Run(DeleteCron{.caller = {"ada", false}, .id = waiting});
  EXPECT_EQ(again.status.code(), Code::kNotFound);
  EXPECT_EQ(again.status.message(), "no recurring job " + waiting.ToString() + " (deleted before)");
}

TEST_F(ControllerCronTest, ARestartKeepsTheSeriesAndStartsARunMissedWhileDownOnce) {
  JobId first = SubmitSpec(Nightly());
  TimePoint at = *J(first).spec.begin;
  Restart();
  EXPECT_EQ(J(first).reason, WaitReason::kSchedule);
  ASSERT_EQ(Crons().size(), 1u);
  // Down across three of its times: it runs once when the controller is back.
  now_ = at + minutes(25);
  Restart();
  Run(Tick{});
  EXPECT_EQ(State(first), JobState::kRunning);
  EXPECT_EQ(c_->jobs().size(), 1u);
}

TEST_F(ControllerCronTest, ARestoreQueuesTheNextRunOfASeriesWhoseLastRunEndedUnfollowed) {
  // As a store could hold it had a run ended in a batch that never queued its next.
  Job ended;
  ended.id = JobId{7};
  ended.spec = Nightly();
  ended.user = "ada";
  ended.state = JobState::kSucceeded;
  ended.cron_id = JobId{5};
  ended.submitted_at = now_ - minutes(20);
  ended.finished_at = now_ - minutes(1);
  store::MemoryStore store;
  ASSERT_TRUE(store.Commit(store::Batch{.jobs = {ended}, .next_job_id = 8}).ok());
  c_ = std::make_unique<Controller>(Patient());
  c_->Restore(*store.Load(), now_);
  Run(Tick{});
  const Job* next = c_->FindJob(JobId{8});
  ASSERT_NE(next, nullptr);
  EXPECT_EQ(next->cron_id, JobId{5});
  EXPECT_EQ(next->reason, WaitReason::kSchedule);
  ASSERT_EQ(Crons().size(), 1u);
  EXPECT_EQ(Crons()[0].runs, 2);
}

TEST_F(ControllerCronTest, ABeginTimeDelaysTheFirstRunAndDependenciesHoldOnlyIt) {
  JobId before = SubmitSpec([] {
    JobSpec s;
    s.command = {"true"};
    s.resources.milli_gpus = 1000;
    return s;
  }());
  JobSpec s = Nightly();
  s.begin = now_ + hours(2);
  s.after = {before};
  JobId first = SubmitSpec(s);
  EXPECT_EQ(J(first).spec.begin, NextAfter("*/10 * * * *", now_ + hours(2) - Duration(1)));
  EXPECT_EQ(J(first).reason, WaitReason::kDependency);
  Poll("n1");
  ReportEvent("n1", {.job = before, .kind = JobEvent::Kind::kStarted});
  Exit(before, 0);
  EXPECT_EQ(J(first).reason, WaitReason::kSchedule);
  RunUntilStarted(first);
  Exit(first, 0);
  const Job& second = J(JobId{first.value + 1});
  EXPECT_TRUE(second.spec.after.empty());
}

TEST_F(ControllerCronTest, SchedulesAreCheckedAtSubmit) {
  JobSpec s = Nightly("0 3 * *");
  auto r = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}});
  EXPECT_EQ(r.status.message(),
            "schedule: \"0 3 * *\": needs 5 fields (minute hour day-of-month month day-of-week), "
            "has 4");
  s = Nightly();
  s.array = "0-3";
  r = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}});
  EXPECT_EQ(r.status.message(), "schedule: a recurring job cannot be an array or a sweep");
  EXPECT_TRUE(c_->jobs().empty());
}

}  // namespace
}  // namespace baton::control
