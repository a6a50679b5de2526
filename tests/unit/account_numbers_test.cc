// A pass's numbers: one per (project, user) pair in the order pairs first come, cached on the
// job; one copy of each pool's name.
#include "control/account_numbers.h"

#include <gtest/gtest.h>

namespace baton::control {
namespace {

Job JobOf(std::string project, std::string user, std::string pool = "default") {
  Job j;
  j.spec.project = std::move(project);
  j.user = std::move(user);
  j.spec.pool = std::move(pool);
  return j;
}

TEST(AccountNumbers, APairIsNumberedOnceAndTheNumberIsCachedOnTheJob) {
  AccountNumbers numbers;
  Job a = JobOf("vision", "ada"), b = JobOf("vision", "bob"), a2 = JobOf("vision", "ada");
  Job other = JobOf("nlp", "ada");
  EXPECT_EQ(numbers.AccountOf(a), 0);
  EXPECT_EQ(numbers.AccountOf(b), 1);
  EXPECT_EQ(numbers.AccountOf(a2), 0);     // the same pair, another job
  EXPECT_EQ(numbers.AccountOf(other), 2);  // the same user in another project
  EXPECT_EQ(a.account.id, 0);
  EXPECT_EQ(numbers.accounts(), 3u);
  a.spec.project = "renamed";  // the cache holds: a job's pair does not change once it waits
  EXPECT_EQ(numbers.AccountOf(a), 0);
}

TEST(AccountNumbers, EveryJobOfAPoolPointsAtOneCopyOfItsName) {
  AccountNumbers numbers;
  Job a = JobOf("p", "u", "dev"), b = JobOf("q", "v", "dev"), c = JobOf("p", "u", "prod");
  const std::string* dev = numbers.PoolOf(a);
  EXPECT_EQ(*dev, "dev");
  EXPECT_EQ(numbers.PoolOf(b), dev);  // by address, as a pass compares them first
  EXPECT_NE(numbers.PoolOf(c), dev);
  EXPECT_EQ(*numbers.PoolOf(c), "prod");
  for (int i = 0; i < 100; ++i) {
    Job more = JobOf("p", "u", "pool-" + std::to_string(i));
    numbers.PoolOf(more);
  }
  EXPECT_EQ(numbers.PoolOf(a), dev);  // the copies never move
}

}  // namespace
}  // namespace baton::control
