// What commands that name jobs check (control/job_checks.h) and what `baton update` may change
// and makes (control/job_update.h), alone; the controller's update and submit tests cover the
// same words through the commands.
#include "control/job_checks.h"

#include <gtest/gtest.h>

#include "control/job_update.h"

namespace baton::control {
namespace {

using std::chrono::hours;

const TimePoint kT0 = FromMillis(1'790'000'000'000);

std::map<JobId, Job> Jobs() {
  std::map<JobId, Job> jobs;
  auto add = [&](int64_t id, const std::string& user, JobState state) -> Job& {
    Job& j = jobs[JobId{id}];
    j.id = JobId{id};
    j.user = user;
    j.state = state;
    j.spec.command = {"train.py"};
    j.spec.pool = "default";
    j.spec.time_limit = hours(1);
    return j;
  };
  add(1, "ann", JobState::kPending);
  add(2, "bob", JobState::kRunning);
  add(3, "ann", JobState::kSucceeded);
  // Array 5 of ann, tasks 5_0 (job 6) and 5_1 (job 7).
  add(5, "ann", JobState::kPending).array_id = JobId{5};
  for (int i = 0; i < 2; ++i) {
    Job& task = add(6 + i, "ann", JobState::kPending);
    task.array_id = JobId{5};
    task.array_index = i;
  }
  return jobs;
}

TEST(JobChecks, AJobIsFoundForItsOwnerOrAnAdminAndNamedAsTheCallerNamedIt) {
  std::map<JobId, Job> jobs = Jobs();
  Result<const Job*> own = FindOwned(jobs, JobId{1}, -1, Caller{.user = "ann"});
  ASSERT_TRUE(own.has_value());
  EXPECT_EQ((*own)->id, JobId{1});
  Result<const Job*> task = FindOwned(jobs, JobId{5}, 1, Caller{.user = "ann"});
  ASSERT_TRUE(task.has_value());
  EXPECT_EQ((*task)->id, JobId{7});
  EXPECT_EQ(FindOwned(jobs, JobId{2}, -1, Caller{.user = "ann"}).error().message(),
            "job 2 belongs to bob");
  EXPECT_EQ(FindOwned(jobs, JobId{5}, 9, Caller{.user = "ann"}).error().message(),
            "job 5_9 does not exist");
  EXPECT_EQ(FindOwned(jobs, JobId{5}, 9, Caller{.user = "ann"}).error().code(), Code::kNotFound);
  EXPECT_TRUE(FindOwned(jobs, JobId{2}, -1, Caller{.user = "root", .admin = true}).has_value());
}

TEST(JobChecks, AJobWaitsOnlyForJobsThatExistAndNeverForItselfOrItsArray) {
  std::map<JobId, Job> jobs = Jobs();
  JobSpec spec;
  spec.after = {JobId{1}};
  spec.after_notok = {JobId{3}};
  EXPECT_TRUE(CheckDependencies(jobs, spec).ok());
  spec.after_any = {JobId{99}};
  EXPECT_EQ(CheckDependencies(jobs, spec).message(), "after_any: job 99 does not exist");
  spec.after_any.clear();
  EXPECT_EQ(CheckDependencies(jobs, spec, &jobs.at(JobId{1})).message(),
            "after: a job cannot wait for itself");
  spec.after = {JobId{5}};  // task 5_0's own array
  EXPECT_EQ(CheckDependencies(jobs, spec, &jobs.at(JobId{6})).message(),
            "after: a job cannot wait for itself");
  EXPECT_TRUE(CheckDependencies(jobs, spec, &jobs.at(JobId{1})).ok());
}

TEST(JobUpdate, ARunningJobChangesOnlyItsTimeLimitAndNameAndAnEndedOneNothing) {
  std::map<JobId, Job> jobs = Jobs();
  Policy policy;
  BudgetBook budgets;
  EXPECT_TRUE(ChangesOnlyWhatRunsOn({"time_limit", "name"}));
  EXPECT_FALSE(ChangesOnlyWhatRunsOn({"time_limit", "priority"}));

  UpdateJob longer{.caller = {.user = "bob"}, .id = JobId{2}, .set = {"time_limit"}};
  longer.fields.time_limit = hours(3);
  Result<JobSpec> spec = Patched(jobs.at(JobId{2}), longer, policy, jobs, budgets, kT0);
  ASSERT_TRUE(spec.has_value()) << spec.error().message();
  EXPECT_EQ(spec->time_limit, hours(3));
  EXPECT_EQ(jobs.at(JobId{2}).spec.time_limit, hours(1));  // nothing changes

  UpdateJob priority{.caller = {.user = "bob"}, .id = JobId{2}, .set = {"priority"}};
  EXPECT_EQ(Patched(jobs.at(JobId{2}), priority, policy, jobs, budgets, kT0).error().message(),
            "job 2 is running: only its time limit and name change now; the rest while it waits");
  EXPECT_EQ(Patched(jobs.at(JobId{3}), longer, policy, jobs, budgets, kT0).error().message(),
            "job 3 is succeeded: an ended job does not change (`baton resubmit 3` runs it again, "
            "with flags changed)");
}

TEST(JobUpdate, ANewTimeLimitOrPoolIsHeldToThePoolsMaximum) {
  std::map<JobId, Job> jobs = Jobs();
  Policy policy;
  policy.pools["short"].max_time_limit = hours(2);
  BudgetBook budgets;
  UpdateJob move{.caller = {.user = "ann"}, .id = JobId{1}, .set = {"pool"}};
  move.fields.pool = "short";
  ASSERT_TRUE(Patched(jobs.at(JobId{1}), move, policy, jobs, budgets, kT0).has_value());
  move.set.insert("time_limit");
  move.fields.time_limit = hours(4);
  EXPECT_EQ(Patched(jobs.at(JobId{1}), move, policy, jobs, budgets, kT0).error().message(),
            "time_limit: pool short allows at most 2h");
  UpdateJob wait{.caller = {.user = "ann"}, .id = JobId{6}, .set = {"after"}};
  wait.fields.after = {JobId{5}};
  EXPECT_EQ(Patched(jobs.at(JobId{6}), wait, policy, jobs, budgets, kT0).error().message(),
            "after: a job cannot wait for itself");
}

}  // namespace
}  // namespace baton::control
