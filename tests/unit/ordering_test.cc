// Queue order on its own (sched/ordering.h): the score's factors and the tie-break.
#include "sched/ordering.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "sched_harness.h"

namespace baton::sched {
namespace {

const TimePoint kNow = FromMillis(1'790'000'000'000);

struct Queue {
  std::vector<Resources> resources;
  std::vector<std::string> projects, users, pools;
  PassInput in;

  Queue() {
    // Stable addresses for the pointers the pass borrows.
    resources.reserve(4096);
    projects.reserve(4096);
    users.reserve(4096);
    pools.reserve(4096);
    in.view.nodes.push_back(testing::MakeNode("n0", 8, "H100-80GB", "nvswitch"));
    in.now = kNow;
  }
  void Add(int64_t id, Priority priority, const std::string& project, Duration waited,
           int64_t milli = 1000) {
    resources.push_back(testing::Gpus(milli));
    projects.push_back(project);
    users.push_back(project + "-user");
    pools.push_back("default");
    in.pending.push_back(PendingJob{.id = JobId{id},
                                    .resources = &resources.back(),
                                    .priority = priority,
                                    .project = &projects.back(),
                                    .user = &users.back(),
                                    .pool = &pools.back(),
                                    .submitted = kNow - waited});
  }
  std::vector<int64_t> Order(const Policy& policy) {
    std::vector<QueueEntry> entries;
    std::vector<uint32_t> order = OrderQueue(in, policy, entries);
    std::vector<int64_t> ids;
    for (size_t k = 0; k < order.size(); ++k) {
      EXPECT_EQ(entries[k].id, in.pending[order[k]].id);
      ids.push_back(entries[k].id.value);
    }
    return ids;
  }
};

TEST(Ordering, EqualScoresGoInSubmitOrder) {
  Queue q;
  q.Add(3, Priority::kNormal, "a", Duration(0));
  q.Add(1, Priority::kNormal, "a", Duration(0));
  q.Add(2, Priority::kNormal, "a", Duration(0));
  Policy fifo;
  fifo.weights = Weights{.priority = 0, .fairshare = 0, .age = 0, .size = 0};
  EXPECT_EQ(q.Order(fifo), (std::vector<int64_t>{1, 2, 3}));
}

TEST(Ordering, AHigherClassGoesFirstAndAnOlderJobBeforeAYoungerOne) {
  Queue q;
  q.Add(1, Priority::kLow, "a", std::chrono::hours(1));
  q.Add(2, Priority::kHigh, "a", Duration(0));
  q.Add(3, Priority::kLow, "a", std::chrono::hours(10));
  Policy p;
  p.weights = Weights{.priority = 10'000, .fairshare = 0, .age = 100, .size = 0};
  EXPECT_EQ(q.Order(p), (std::vector<int64_t>{2, 3, 1}));
}

TEST(Ordering, AProjectThatUsedLessOfItsShareGoesFirst) {
  Queue q;
  q.Add(1, Priority::kNormal, "heavy", Duration(0));
  q.Add(2, Priority::kNormal, "light", Duration(0));
  UsageLedger usage(std::chrono::hours(24 * 7));
  usage.AddPast("heavy", "heavy-user", 8000, kNow - std::chrono::hours(10), kNow);
  usage.AddPast("light", "light-user", 1000, kNow - std::chrono::hours(1), kNow);
  usage.Advance(kNow);
  q.in.usage = &usage;
  Policy p;
  p.weights = Weights{.priority = 0, .fairshare = 10'000, .age = 0, .size = 0};
  EXPECT_EQ(q.Order(p), (std::vector<int64_t>{2, 1}));
  std::vector<QueueEntry> entries;
  (void)OrderQueue(q.in, p, entries);
  EXPECT_GT(entries[0].factors.fairshare, entries[1].factors.fairshare);
}

TEST(Ordering, APartlyWalkedOrderIsTheHeadOfTheWholeOrder) {
  Queue q;
  // 3,000 jobs in a scrambled submit order, with many equal scores (ties go by id).
  for (int i = 0; i < 3000; ++i) {
    q.Add((i * 7919) % 3000 + 1, static_cast<Priority>(i % 4), "p" + std::to_string(i % 5),
          std::chrono::minutes(i % 97));
  }
  Policy p;
  p.weights = Weights{.priority = 10'000, .fairshare = 0, .age = 1'000, .size = 0};
  std::vector<QueueEntry> whole;
  std::vector<uint32_t> all = OrderQueue(q.in, p, whole);
  QueueOrder order(q.in, p);
  for (size_t i = 0; i < 700; ++i) ASSERT_EQ(order.at(i), all[i]) << i;
  std::vector<QueueEntry> entries;
  size_t sorted = 0;
  order.Entries(q.in, entries, &sorted);
  EXPECT_GE(sorted, 700u);
  EXPECT_LT(sorted, 3000u);  // the rest was never sorted
  ASSERT_EQ(entries.size(), whole.size());
  for (size_t i = 0; i < sorted; ++i) EXPECT_EQ(entries[i].id, whole[i].id);
  // ... and holds the same jobs as the whole order's rest.
  std::vector<int64_t> rest, whole_rest;
  for (size_t i = sorted; i < entries.size(); ++i) {
    rest.push_back(entries[i].id.value);
    whole_rest.push_back(whole[i].id.value);
  }
  std::sort(rest.begin(), rest.end());
  std::sort(whole_rest.begin(), whole_rest.end());
  EXPECT_EQ(rest, whole_rest);
}

TEST(Ordering, JobsPutInFrontKeepTheirOrderAmongThemselves) {
  Queue q;
  for (int64_t id = 1; id <= 6; ++id) q.Add(id, Priority::kNormal, "a", Duration(0));
  Policy fifo;
  fifo.weights = Weights{.priority = 0, .fairshare = 0, .age = 0, .size = 0};
  QueueOrder order(q.in, fifo);
  order.Front({JobId{6}, JobId{3}, JobId{9}});  // 9 does not wait
  std::vector<int64_t> ids;
  for (size_t i = 0; i < order.size(); ++i) ids.push_back(q.in.pending[order.at(i)].id.value);
  EXPECT_EQ(ids, (std::vector<int64_t>{3, 6, 1, 2, 4, 5}));
}

}  // namespace
}  // namespace baton::sched
