// What a spec must meet at submit (control/admission.h): its pool's limits, an interactive
// pool's limits on sessions, and the job it drafts; the
// controller's and the CLI's tests cover the same words through a submit.
#include "control/admission.h"

#include <gtest/gtest.h>

namespace baton::control {
namespace {

using std::chrono::hours;

PoolPolicy Dev() {
  PoolPolicy pool;
  pool.interactive = true;
  pool.session_time_limit = hours(8);
  pool.max_sessions_per_user = 2;
  return pool;
}

JobSpec Session(hours limit = hours(1)) {
  JobSpec spec;
  spec.pool = "dev";
  spec.interactive = Interactive::kTty;
  spec.time_limit = limit;
  return spec;
}

void Add(std::map<JobId, Job>& jobs, int64_t id, const std::string& user, JobState state) {
  Job& j = jobs[JobId{id}];
  j.id = JobId{id};
  j.user = user;
  j.state = state;
  j.spec = Session();
}

TEST(SessionLimits, AUsersOpenSessionsAreCountedAndTheLimitNamesThem) {
  std::map<JobId, Job> jobs;
  Add(jobs, 3, "ann", JobState::kRunning);
  Add(jobs, 4, "bob", JobState::kRunning);    // another user's
  Add(jobs, 5, "ann", JobState::kSucceeded);  // ended: not open
  EXPECT_TRUE(AdmitSession(jobs, Session(), Dev(), "ann").ok());
  Add(jobs, 6, "ann", JobState::kPending);  // waiting counts
  Status refused = AdmitSession(jobs, Session(), Dev(), "ann");
  EXPECT_EQ(refused.code(), Code::kConflict);
  EXPECT_EQ(refused.message(),
            "pool dev allows 2 session(s) per user; ann has 3, 6 (baton sessions lists them; "
            "baton cancel ends one)");
  EXPECT_TRUE(AdmitSession(jobs, Session(), Dev(), "bob").ok());
  // A batch job in the same pool is no session.
  JobSpec batch = Session();
  batch.interactive = Interactive::kNone;
  EXPECT_TRUE(AdmitSession(jobs, batch, Dev(), "ann").ok());
}

TEST(SessionLimits, ASessionMayNotAskForMoreTimeThanItsPoolGivesSessions) {
  Status refused = AdmitSession({}, Session(hours(9)), Dev(), "ann");
  EXPECT_EQ(refused.code(), Code::kInvalidArgument);
  EXPECT_EQ(refused.message(),
            "time_limit: sessions in pool dev run at most 8h (a batch job, baton submit, may run "
            "longer)");
  PoolPolicy batch_pool;  // not interactive: no session limits
  EXPECT_TRUE(AdmitSession({}, Session(hours(9)), batch_pool, "ann").ok());
}

TEST(Admission, APoolsLongestTimeLimitAndGpusPerJobAreItsOwnAndOutputTheClusters) {
  Policy policy;
  PoolPolicy& dev = policy.pools["dev"] = Dev();
  dev.max_time_limit = hours(12);
  dev.default_time_limit = hours(2);
  dev.max_milli_per_job = 2000;
  JobSpec batch = Session(hours(13));
  batch.interactive = Interactive::kNone;
  EXPECT_EQ(AdmitToPool(batch, policy).message(), "time_limit: pool dev allows at most 12h");
  batch.time_limit = Duration(0);  // the pool's default, within its longest
  EXPECT_TRUE(AdmitToPool(batch, policy).ok());
  batch.resources.milli_gpus = 3000;
  EXPECT_EQ(AdmitToPool(batch, policy).message(),
            "resources.gpus: pool dev allows at most 2 GPUs per job");
  batch.pool = "elsewhere";  // a pool the policy does not configure has no such limits
  EXPECT_TRUE(AdmitToPool(batch, policy).ok());
  batch.output_limit = policy.max_output_limit + 1;
  EXPECT_EQ(AdmitToPool(batch, policy).code(), Code::kInvalidArgument);
  EXPECT_EQ(AdmitToPool(batch, policy).message().rfind("output_limit: this cluster keeps", 0), 0u);
}

TEST(Admission, AJobThatIsNotPreemptibleMayNotAskForMoreThanItsProjectsGuarantee) {
  Policy policy;
  JobSpec batch;
  batch.project = "vision";
  batch.resources.milli_gpus = 8000;
  JobSpec session = Session();
  session.project = "vision";
  session.resources.milli_gpus = 1000;
  // No guarantees anywhere: nothing to run within.
  batch.preemptible = false;
  EXPECT_TRUE(AdmitNotPreemptible(batch, policy).ok());
  policy.projects["vision"].guaranteed_milli = 4000;
  EXPECT_EQ(AdmitNotPreemptible(batch, policy).message(),
            "preemptible: it is not preemptible, so it runs within project vision's guarantee, "
            "which is 4 GPUs, and it asks for 8 GPUs (--preemptible lets it use idle GPUs, and be "
            "preempted for them)");
  batch.preemptible.reset();  // a batch job's default: preemptible
  EXPECT_TRUE(AdmitNotPreemptible(batch, policy).ok());
  EXPECT_TRUE(AdmitNotPreemptible(session, policy).ok());  // within the guarantee
  session.project = "nlp";                                 // the default project: none
  EXPECT_EQ(AdmitNotPreemptible(session, policy).message(),
            "preemptible: it is not preemptible (a session's default), so it runs within project "
            "nlp's guarantee, which is none, and it asks for 1 GPU (--preemptible lets it use idle "
            "GPUs, and be preempted for them)");
  session.preemptible = true;
  EXPECT_TRUE(AdmitNotPreemptible(session, policy).ok());
}

TEST(Admission, ADraftedJobTakesItsPoolsDefaultTimeLimitASessionItsSessionLimit) {
  Policy policy;
  PoolPolicy& dev = policy.pools["dev"] = Dev();
  dev.default_time_limit = hours(2);
  const TimePoint now = FromMillis(1'794'312'000'000);
  Resources two;
  two.milli_gpus = 2000;
  Job session = DraftJob(Session(hours(0)), two, "ann", policy, now);
  EXPECT_EQ(session.spec.time_limit, hours(8));
  EXPECT_EQ(session.spec.resources.milli_gpus, 2000);
  EXPECT_EQ(session.user, "ann");
  EXPECT_EQ(session.submitted_at, now);
  EXPECT_EQ(session.id, JobId{});  // given by the controller as it keeps it
  JobSpec batch = Session(hours(0));
  batch.interactive = Interactive::kNone;
  EXPECT_EQ(DraftJob(batch, two, "ann", policy, now).spec.time_limit, hours(2));
  EXPECT_EQ(DraftJob(Session(hours(1)), two, "ann", policy, now).spec.time_limit, hours(1));
}

}  // namespace
}  // namespace baton::control
