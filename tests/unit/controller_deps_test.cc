// Dependencies beyond after-ok, as Slurm users write them (issue 16): after-any, after-notok,
// singleton, and a begin time; each with its pending reason.
#include "controller_fixture.h"

namespace baton::control {
namespace {

class DepsTest : public ControllerTest {
 protected:
  void SetUp() override {
    ControllerTest::SetUp();
    RegisterNode("n1", 4);
  }

  JobId SubmitSpec(JobSpec s, const std::string& user = "ada") {
    if (s.command.empty()) s.command = {"true"};
    auto r = Run(SubmitJobs{.caller = {user, false}, .specs = {s}});
    EXPECT_TRUE(r.status.ok()) << r.status.message();
    return r->jobs.empty() ? JobId{0} : r->jobs[0].id;
  }

  // Starts and ends a running job as its agent would report it.
  void End(JobId id, int exit_code) {
    Poll("n1");
    ReportEvent("n1", {.job = id, .kind = JobEvent::Kind::kStarted});
    ReportEvent("n1", {.job = id, .kind = JobEvent::Kind::kExited, .exit_code = exit_code});
  }

  const Job& J(JobId id) { return *c_->FindJob(id); }
};

TEST_F(DepsTest, AfterAnyStartsOnceTheOtherEndsHowever) {
  JobId first = Submit(1000);
  JobSpec s;
  s.after_any = {first};
  JobId second = SubmitSpec(s);
  EXPECT_EQ(State(second), JobState::kPending);
  EXPECT_EQ(J(second).reason, WaitReason::kDependency);
  EXPECT_EQ(J(second).reason_detail, "waiting for job " + first.ToString() + " to end");
  End(first, 3);
  EXPECT_EQ(State(first), JobState::kFailed);
  EXPECT_EQ(State(second), JobState::kRunning);
}

TEST_F(DepsTest, AfterNotOkRunsOnlyWhenTheOtherFailed) {
  JobId ok = Submit(1000);
  JobId bad = Submit(1000);
  JobSpec s;
  s.after_notok = {ok};
  JobId cleanup_ok = SubmitSpec(s);
  s.after_notok = {bad};
  JobId cleanup_bad = SubmitSpec(s);
  EXPECT_EQ(J(cleanup_ok).reason_detail,
            "waiting for job " + ok.ToString() + " to end other than succeeded");
  End(ok, 0);
  EXPECT_EQ(State(cleanup_ok), JobState::kFailed);  // can never run now
  EXPECT_NE(J(cleanup_ok).reason_detail.find("(after-notok) ended succeeded"), std::string::npos)
      << J(cleanup_ok).reason_detail;
  End(bad, 1);
  EXPECT_EQ(State(cleanup_bad), JobState::kRunning);
  // Every job named must exist.
  s.after_notok = {JobId{777}};
  s.command = {"true"};
  auto r = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}});
  EXPECT_EQ(r.status.message(), "after_notok: job 777 does not exist");
}

TEST_F(DepsTest, SingletonsOfANameAndUserRunOneAtATimeInSubmitOrder) {
  JobSpec s;
  s.name = "nightly-eval";
  s.singleton = true;
  s.resources.milli_gpus = 1000;
  JobId a = SubmitSpec(s), b = SubmitSpec(s), c = SubmitSpec(s);
  JobId other_user = SubmitSpec(s, "grace");
  s.name = "other";
  JobId other_name = SubmitSpec(s);
  EXPECT_EQ(State(a), JobState::kRunning);
  EXPECT_EQ(State(b), JobState::kPending);
  EXPECT_EQ(J(b).reason, WaitReason::kDependency);
  EXPECT_EQ(J(b).reason_detail,
            "singleton: waiting for job " + a.ToString() + " of the same name and user to end");
  EXPECT_EQ(State(c), JobState::kPending);
  EXPECT_EQ(State(other_user), JobState::kRunning);
  EXPECT_EQ(State(other_name), JobState::kRunning);
  End(a, 1);  // however it ended
  EXPECT_EQ(State(b), JobState::kRunning);
  EXPECT_EQ(State(c), JobState::kPending);
  EXPECT_EQ(J(c).reason_detail,
            "singleton: waiting for job " + b.ToString() + " of the same name and user to end");
  Run(JobAction{.caller = {"ada", false}, .id = b, .kind = JobAction::Kind::kCancel});
  ReportEvent("n1", {.job = b, .kind = JobEvent::Kind::kExited, .signal = 15});
  EXPECT_EQ(State(b), JobState::kCancelled);
  EXPECT_EQ(State(c), JobState::kRunning);
}

TEST_F(DepsTest, ABeginTimeHoldsTheJobBackUntilThenAndSurvivesARestart) {
  JobSpec s;
  s.resources.milli_gpus = 1000;
  s.begin = now_ + seconds(60);
  JobId id = SubmitSpec(s);
  EXPECT_EQ(State(id), JobState::kPending);
  EXPECT_EQ(J(id).reason, WaitReason::kBeginTime);
  EXPECT_EQ(J(id).reason_detail, "starts no earlier than " + FormatRfc3339(now_ + seconds(60)));
  // A begin time in the past is no wait at all.
  s.begin = now_ - seconds(5);
  EXPECT_EQ(State(SubmitSpec(s)), JobState::kRunning);

  now_ += seconds(30);
  Run(Tick{});
  EXPECT_EQ(State(id), JobState::kPending);
  // A restart keeps it waiting until its time.
  c_ = std::make_unique<Controller>();
  c_->Restore(*store_.Load(), now_);
  RegisterNode("n1", 4);
  Run(Tick{});
  EXPECT_EQ(State(id), JobState::kPending);
  EXPECT_EQ(J(id).reason, WaitReason::kBeginTime);
  now_ += seconds(30);
  Run(Tick{});
  EXPECT_EQ(State(id), JobState::kRunning);
}

TEST_F(DepsTest, AHeldJobWithABeginTimeWaitsForBothAndAReleaseLooksAgain) {
  JobSpec s;
  s.resources.milli_gpus = 1000;
  s.begin = now_ + seconds(10);
  JobId id = SubmitSpec(s);
  Run(JobAction{.caller = {"ada", false}, .id = id, .kind = JobAction::Kind::kHold});
  EXPECT_EQ(State(id), JobState::kHeld);
  now_ += seconds(20);
  Run(Tick{});
  EXPECT_EQ(State(id), JobState::kHeld);  // held beats a begin time that passed
  Run(JobAction{.caller = {"ada", false}, .id = id, .kind = JobAction::Kind::kRelease});
  EXPECT_EQ(State(id), JobState::kRunning);
}

TEST_F(DepsTest, AnArraysIdInADependencyStandsForEveryTask) {
  JobSpec a;
  a.resources.milli_gpus = 1000;
  a.array = "0-2";
  JobId array = SubmitSpec(a);
  JobSpec ok, notok;
  ok.after = {array};
  notok.after_notok = {array};
  JobId report = SubmitSpec(ok), alert = SubmitSpec(notok);
  Poll("n1");
  for (int i = 0; i < 2; ++i) {
    JobId t{array.value + i};
    ReportEvent("n1", {.job = t, .kind = JobEvent::Kind::kStarted});
    ReportEvent("n1", {.job = t, .kind = JobEvent::Kind::kExited});
  }
  EXPECT_EQ(State(report), JobState::kPending);  // task 2 still runs
  JobId last{array.value + 2};
  ReportEvent("n1", {.job = last, .kind = JobEvent::Kind::kStarted});
  ReportEvent("n1", {.job = last, .kind = JobEvent::Kind::kExited, .exit_code = 4});
  EXPECT_EQ(State(report), JobState::kFailed);
  EXPECT_NE(J(report).reason_detail.find("ended failed (task " + array.ToString() + "_2)"),
            std::string::npos)
      << J(report).reason_detail;
  EXPECT_EQ(State(alert), JobState::kRunning);
}

}  // namespace
}  // namespace baton::control
