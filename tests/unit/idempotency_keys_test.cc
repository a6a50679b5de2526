// The submits' Idempotency-Keys: per user, found again, and written once to the store.
#include "control/idempotency_keys.h"

#include <gtest/gtest.h>

namespace baton::control {
namespace {

store::IdempotencyEntry Entry(std::string user, std::string key, int64_t first, int count = 1) {
  return {.user = std::move(user), .key = std::move(key), .first = JobId{first}, .count = count};
}

TEST(IdempotencyKeys, AKeyIsItsUsersAndFindsTheJobsItMade) {
  IdempotencyKeys keys;
  keys.Record(Entry("ada", "exp-42", 7, 3));
  const store::IdempotencyEntry* found = keys.Find("ada", "exp-42");
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->first, JobId{7});
  EXPECT_EQ(found->count, 3);
  EXPECT_EQ(keys.Find("bob", "exp-42"), nullptr);  // another user's key is not this one
  EXPECT_EQ(keys.Find("ada", "exp-43"), nullptr);
  keys.Record(Entry("ada", "exp-42", 9));  // recorded again (cannot happen: a repeat makes none)
  EXPECT_EQ(keys.Find("ada", "exp-42")->first, JobId{9});
  EXPECT_EQ(keys.size(), 1u);
}

TEST(IdempotencyKeys, EachRecordGoesToTheNextStoreBatchOnceAndARestoreFindsThem) {
  IdempotencyKeys keys;
  keys.Record(Entry("ada", "k1", 1));
  keys.Record(Entry("ada", "k2", 2, 2));
  std::vector<store::IdempotencyEntry> batch = keys.TakeNew();
  EXPECT_EQ(batch, (std::vector<store::IdempotencyEntry>{Entry("ada", "k1", 1),
                                                         Entry("ada", "k2", 2, 2)}));
  EXPECT_TRUE(keys.TakeNew().empty());  // written once
  IdempotencyKeys restored;
  restored.Restore(batch);
  EXPECT_TRUE(restored.TakeNew().empty());  // what the store has is not written again
  ASSERT_NE(restored.Find("ada", "k2"), nullptr);
  EXPECT_EQ(restored.Find("ada", "k2")->count, 2);
  EXPECT_EQ(restored.size(), 2u);
}

}  // namespace
}  // namespace baton::control
