// An interactive pool's limits on sessions at submit (control/session_limits.h); the
// controller's and the CLI's tests cover the same words through a submit.
#include "control/session_limits.h"

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

}  // namespace
}  // namespace baton::control
