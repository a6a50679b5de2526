// The jobs' lease (agent/job_lease.h): the deadline the agent writes for the shims each time
// it reaches a controller, said once when it runs out, and how often the agent tries meanwhile.
#include "agent/job_lease.h"

#include <gtest/gtest.h>

namespace baton::agent {
namespace {

using std::chrono::seconds;

TEST(JobLease, WithoutAFenceThereIsNothingToRenewOrRunOut) {
  JobLease lease;
  EXPECT_EQ(lease.Renewal(5'000), std::nullopt);
  EXPECT_EQ(lease.ContactCap(), std::nullopt);
  EXPECT_FALSE(lease.RunOut(1'000'000));
}

TEST(JobLease, ARenewalIsTheSendTimePlusTheFenceWrittenAboutOnceASecond) {
  JobLease lease;
  lease.Set(60'000, 10'000);
  ASSERT_EQ(lease.Renewal(5'000), 65'000);
  EXPECT_FALSE(lease.Written(65'000));            // it had not run out
  EXPECT_EQ(lease.Renewal(5'500), std::nullopt);  // moves it by less than a second
  EXPECT_EQ(lease.Renewal(6'000), 66'000);
  EXPECT_EQ(lease.grace_ms(), 10'000);
}

TEST(JobLease, RunningOutIsSaidOnceAndARenewalSaysItIsOver) {
  JobLease lease;
  lease.Set(60'000, 10'000);
  EXPECT_FALSE(lease.RunOut(100'000));  // nothing written yet: no deadline to pass
  EXPECT_FALSE(lease.Written(*lease.Renewal(5'000)));
  EXPECT_FALSE(lease.RunOut(64'999));
  EXPECT_TRUE(lease.RunOut(65'000));
  EXPECT_FALSE(lease.RunOut(70'000));  // once
  std::optional<int64_t> again = lease.Renewal(71'000);
  ASSERT_EQ(again, 131'000);
  EXPECT_TRUE(lease.Written(*again));  // it had run out: the agent says it is renewed
  EXPECT_FALSE(lease.RunOut(130'000));
  EXPECT_TRUE(lease.RunOut(131'000));
}

TEST(JobLease, TheAgentTriesTenTimesWithinTheFenceBetweenOneAndThirtySeconds) {
  JobLease lease;
  lease.Set(60'000, 0);
  EXPECT_EQ(lease.ContactCap(), Duration(seconds(6)));
  lease.Set(5'000, 0);
  EXPECT_EQ(lease.ContactCap(), Duration(seconds(1)));
  lease.Set(3'600'000, 0);
  EXPECT_EQ(lease.ContactCap(), Duration(seconds(30)));
}

}  // namespace
}  // namespace baton::agent
