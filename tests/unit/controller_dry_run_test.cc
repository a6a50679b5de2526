// A submit's dry run (POST /v1/jobs?dry_run=true): everything a submit checks, the jobs it would
// make answered, nothing changed.
#include <gtest/gtest.h>

#include "controller_fixture.h"

namespace baton::control {
namespace {

class ControllerDryRunTest : public ControllerTest {
 protected:
  Answered<SubmitJobs> DryRun(std::vector<JobSpec> specs, const std::string& key = "") {
    BatchResult b =
        RunBatch(*c_,
                 std::span<const Command>(std::vector<Command>{SubmitJobs{.caller = {"ada", false},
                                                                          .specs = std::move(specs),
                                                                          .idempotency_key = key,
                                                                          .dry_run = true}}),
                 now_);
    // Nothing to keep: the store is not written, whatever the answer.
    EXPECT_TRUE(b.effects.store.empty());
    EXPECT_TRUE(b.effects.events.empty());
    return Answered<SubmitJobs>(std::move(b.replies[0]));
  }

  static JobSpec Spec(int64_t milli_gpus) {
    JobSpec s;
    s.name = "train";
    s.command = {"python3", "train.py"};
    s.resources.milli_gpus = milli_gpus;
    return s;
  }
};

TEST_F(ControllerDryRunTest, AnswersTheJobAsItWouldBeAndMakesNothing) {
  ControllerOptions options;
  options.policy.pools["default"] = PoolPolicy{.default_time_limit = std::chrono::hours(1)};
  c_ = std::make_unique<Controller>(options);
  c_->Restore(*store_.Load(), now_);
  RegisterNode("n1", 8);
  auto refused = DryRun({Spec(16000)});  // more GPUs than the cluster has
  EXPECT_EQ(refused.status.code(), Code::kInvalidArgument) << refused.status.message();
  auto r = DryRun({Spec(2000)});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_TRUE(r->dry_run);
  EXPECT_FALSE(r->created);
  ASSERT_EQ(r->jobs.size(), 1u);
  const Job& job = r->jobs[0];
  EXPECT_EQ(job.id, JobId{0});  // no id: none was given out
  EXPECT_EQ(job.state, JobState::kPending);
  EXPECT_EQ(job.user, "ada");
  EXPECT_EQ(job.submitted_at, now_);
  EXPECT_EQ(job.spec.resources.milli_gpus, 2000);
  EXPECT_EQ(job.spec.resources.nodes, 1);                 // the nodes chosen, as the submit does
  EXPECT_EQ(job.spec.time_limit, std::chrono::hours(1));  // the pool's default
  EXPECT_TRUE(c_->jobs().empty());
  EXPECT_EQ(c_->queue_length(), 0u);
  // The submit after it gets the first id, and the same job: the dry run used nothing up.
  auto real = Run(SubmitJobs{.caller = {"ada", false}, .specs = {Spec(2000)}});
  ASSERT_TRUE(real.status.ok());
  EXPECT_EQ(real->jobs[0].id, JobId{1});
  EXPECT_EQ(real->jobs[0].spec.resources.nodes, job.spec.resources.nodes);
  EXPECT_EQ(real->jobs[0].spec.time_limit, job.spec.time_limit);
  EXPECT_EQ(codec::EncodeJobSpec(real->jobs[0].spec), codec::EncodeJobSpec(job.spec));
}

TEST_F(ControllerDryRunTest, RefusesWhatTheSubmitRefusesInItsWords) {
  RegisterNode("n1", 8);
  JobSpec s = Spec(1000);
  s.after = {JobId{999}};
  auto dry = DryRun({s});
  auto real = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}});
  EXPECT_EQ(dry.status.code(), Code::kInvalidArgument);
  EXPECT_EQ(dry.status.message(), real.status.message());
  EXPECT_EQ(dry.status.message(), "after: job 999 does not exist");
  JobSpec big = Spec(9000);
  JobSpec fine = Spec(1000);
  auto batch = DryRun({fine, big});
  EXPECT_EQ(batch.status.code(), Code::kInvalidArgument);
  EXPECT_EQ(batch.status.message().rfind("jobs[1].resources.gpus: no set of nodes", 0), 0u)
      << batch.status.message();
  EXPECT_TRUE(c_->jobs().empty());
}

TEST_F(ControllerDryRunTest, AnArrayAnswersEachTaskAndAHeldJobIsHeld) {
  RegisterNode("n1", 8);
  JobSpec s = Spec(1000);
  s.array = "0-9:3";
  s.hold = true;
  auto r = DryRun({s});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r->jobs.size(), 4u);
  std::vector<int> indices;
  for (const Job& j : r->jobs) {
    indices.push_back(j.array_index);
    EXPECT_EQ(j.state, JobState::kHeld);
    EXPECT_EQ(j.reason, WaitReason::kHeld);
    EXPECT_EQ(j.reason_detail, "held at submit");  // no id yet to release
  }
  EXPECT_EQ(indices, (std::vector<int>{0, 3, 6, 9}));
  // Submitted for real, the detail names the id that releases it.
  auto real = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}});
  ASSERT_TRUE(real.status.ok());
  EXPECT_EQ(real->jobs[0].reason_detail, "held at submit; `baton release 1` lets it run");
  EXPECT_EQ(real->jobs[3].array_id, JobId{1});
}

TEST_F(ControllerDryRunTest, ARepeatedKeyAnswersTheJobsItMadeAndADryRunKeepsNoKey) {
  RegisterNode("n1", 8);
  auto dry = DryRun({Spec(1000)}, "k1");
  ASSERT_TRUE(dry.status.ok());
  EXPECT_EQ(dry->jobs[0].id, JobId{0});
  // The key was not kept: the submit with it makes a job.
  JobId made = Submit(1000, Priority::kNormal, "k1");
  EXPECT_EQ(made, JobId{1});
  auto again = DryRun({Spec(1000)}, "k1");
  ASSERT_TRUE(again.status.ok());
  EXPECT_TRUE(again->dry_run);
  ASSERT_EQ(again->jobs.size(), 1u);
  EXPECT_EQ(again->jobs[0].id, made);  // what the submit would answer: the job the key made
  EXPECT_EQ(c_->jobs().size(), 1u);
}

}  // namespace
}  // namespace baton::control
