// The job queue's pass planning (sched/job_queue.h): which jobs each kind of pass looks at.
#include "sched/job_queue.h"

#include <gtest/gtest.h>

#include <map>

namespace baton::sched {
namespace {

const TimePoint kNow = FromMillis(1'790'000'000'000);

class JobQueueTest : public ::testing::Test {
 protected:
  Job& Make(int64_t id, Priority p = Priority::kNormal) {
    Job& j = jobs_[id];
    j.id = JobId{id};
    j.spec.priority = p;
    j.state = JobState::kPending;
    return j;
  }
  void Arrive(int64_t id, Priority p = Priority::kNormal) { q_.Add(Make(id, p)); }
  void Leave(int64_t id) {
    jobs_.at(id).state = JobState::kRunning;
    q_.Remove(jobs_.at(id));
  }
  std::vector<int64_t> Ids(const JobQueue::Plan& plan) {
    std::vector<int64_t> ids;
    for (const Job* j : plan.jobs) ids.push_back(j->id.value);
    return ids;
  }
  JobQueue::Plan Next(TimePoint now = kNow, bool strict = false, size_t limit = 0,
                      bool quiet = false, bool stuck = false) {
    return q_.Next(
        now, strict,
        [&](JobId id) -> const Job* {
          auto it = jobs_.find(id.value);
          return it != jobs_.end() && it->second.state == JobState::kPending ? &it->second
                                                                             : nullptr;
        },
        limit, quiet, stuck);
  }
  // Strict order by class alone, without preemption (JobQueue's quiet strict passes).
  JobQueue::Plan Quiet(bool stuck = false, TimePoint now = kNow) {
    return Next(now, /*strict=*/true, /*limit=*/0, /*quiet=*/true, stuck);
  }
  // Jobs 1, 2, 3 wait; a full pass starts 1 and leaves 2 waiting for resources.
  void BlockedAtTwo() {
    for (int64_t id = 1; id <= 3; ++id) Arrive(id);
    ASSERT_EQ(Quiet().kind, JobQueue::Kind::kFull);
    Leave(1);
    q_.Blocked(&jobs_.at(2));
  }
  void OrderAs(std::vector<int64_t> ids) {
    std::vector<QueueEntry> order;
    for (int64_t id : ids) order.push_back(QueueEntry{JobId{id}, QueueFactors{}});
    size_t sorted = order.size();
    q_.Ordered(std::move(order), sorted, false);
  }

  std::map<int64_t, Job> jobs_;
  JobQueue q_;
};

TEST_F(JobQueueTest, NothingChangedMeansNoPass) {
  EXPECT_EQ(Next().kind, JobQueue::Kind::kNone);
  Arrive(1);
  (void)Next();
  EXPECT_EQ(Next().kind, JobQueue::Kind::kNone);
}

TEST_F(JobQueueTest, ArrivalsAloneGetAnIncrementalPass) {
  Arrive(2);
  Arrive(1);
  JobQueue::Plan plan = Next();
  EXPECT_EQ(plan.kind, JobQueue::Kind::kIncremental);
  EXPECT_EQ(Ids(plan), (std::vector<int64_t>{1, 2}));  // by id, once each
}

TEST_F(JobQueueTest, AFullPassLooksAtTheWholeQueueByClassThenSubmitOrder) {
  Arrive(1, Priority::kLow);
  Arrive(2, Priority::kHigh);
  Arrive(3, Priority::kNormal);
  (void)Next();
  q_.RequestFull();
  JobQueue::Plan plan = Next();
  EXPECT_EQ(plan.kind, JobQueue::Kind::kFull);
  EXPECT_EQ(Ids(plan), (std::vector<int64_t>{2, 3, 1}));
}

TEST_F(JobQueueTest, FreedGpusWithoutAnOrderMeanAFullPass) {
  Arrive(1);
  (void)Next();
  q_.Freed();
  EXPECT_EQ(Next().kind, JobQueue::Kind::kFull);
}

TEST_F(JobQueueTest, FreedGpusAfterAFullPassLookAtTheHeadOfItsOrderAndTheArrivalsSince) {
  for (int64_t id = 1; id <= 3; ++id) Arrive(id);
  q_.RequestFull();
  (void)Next();
  OrderAs({3, 1, 2});
  Leave(1);  // started
  Arrive(4);
  (void)Next();  // the arrival's incremental pass
  Arrive(5);
  q_.Freed();
  JobQueue::Plan plan = Next();
  EXPECT_EQ(plan.kind, JobQueue::Kind::kHead);
  EXPECT_EQ(Ids(plan), (std::vector<int64_t>{3, 2, 4, 5}));
}

TEST_F(JobQueueTest, StrictOrderAlwaysLooksAtTheWholeQueue) {
  Arrive(1);
  Arrive(2);
  JobQueue::Plan plan = Next(kNow, /*strict=*/true);
  EXPECT_EQ(plan.kind, JobQueue::Kind::kFull);
  EXPECT_EQ(plan.jobs.size(), 2u);
}

TEST_F(JobQueueTest, AFullPassIsDueEveryIntervalWhileJobsWait) {
  q_.Tick(kNow, std::chrono::seconds(2));
  EXPECT_EQ(Next().kind, JobQueue::Kind::kNone);  // nothing waits
  Arrive(1);
  q_.RequestFull();
  (void)Next(kNow);
  q_.Tick(kNow + std::chrono::seconds(1), std::chrono::seconds(2));
  EXPECT_EQ(Next(kNow + std::chrono::seconds(1)).kind, JobQueue::Kind::kNone);
  q_.Tick(kNow + std::chrono::seconds(2), std::chrono::seconds(2));
  EXPECT_EQ(Next(kNow + std::chrono::seconds(2)).kind, JobQueue::Kind::kFull);
}

TEST_F(JobQueueTest, AnArrivalThatCouldPreemptGetsAFullPassSoonButNotTwiceIn200Ms) {
  Arrive(1);
  q_.RequestFull();
  (void)Next(kNow);
  EXPECT_FALSE(q_.WantsRepass(JobQueue::Kind::kFull, true, kNow));
  EXPECT_FALSE(q_.WantsRepass(JobQueue::Kind::kIncremental, false, kNow));
  EXPECT_FALSE(q_.WantsRepass(JobQueue::Kind::kIncremental, true, kNow + JobQueue::kRepassGap / 2));
  // Not at once, but the next pass is full.
  EXPECT_EQ(Next(kNow).kind, JobQueue::Kind::kFull);
  EXPECT_TRUE(q_.WantsRepass(JobQueue::Kind::kIncremental, true, kNow + JobQueue::kRepassGap));
}

TEST_F(JobQueueTest, APositionIsTheJobsPlaceInTheLastFullOrder) {
  Arrive(1);
  Arrive(2);
  OrderAs({2, 1});
  auto first = q_.Position(JobId{2});
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->first, 1);
  EXPECT_EQ(q_.Position(JobId{1})->first, 2);
  EXPECT_FALSE(q_.Position(JobId{7}).has_value());
  OrderAs({1});
  EXPECT_FALSE(q_.Position(JobId{2}).has_value());
}

TEST_F(JobQueueTest, AFullPassMayBeGivenOnlyTheHeadOfTheQueueAndAskForMore) {
  for (int64_t id = 1; id <= 5; ++id) Arrive(id, id == 4 ? Priority::kHigh : Priority::kNormal);
  JobQueue::Plan plan = Next(kNow, /*strict=*/true, /*limit=*/3);
  EXPECT_EQ(plan.kind, JobQueue::Kind::kFull);
  EXPECT_TRUE(plan.partial);
  EXPECT_EQ(Ids(plan), (std::vector<int64_t>{4, 1, 2}));  // class, then submit order
  auto [more, partial] = q_.First(12);
  EXPECT_FALSE(partial);
  EXPECT_EQ(more.size(), 5u);
  // A limit the queue does not reach gives all of it.
  q_.RequestFull();
  EXPECT_FALSE(Next(kNow, true, 5).partial);
}

TEST_F(JobQueueTest, OneClassSaysWhetherQueueOrderIsSubmitOrder) {
  EXPECT_TRUE(q_.OneClass());
  Arrive(1);
  Arrive(2);
  EXPECT_TRUE(q_.OneClass());
  Arrive(3, Priority::kHigh);
  EXPECT_FALSE(q_.OneClass());
  Leave(3);
  EXPECT_TRUE(q_.OneClass());
}

TEST_F(JobQueueTest, AfterAHeadOnlyOrderAJobPastItIsPlacedByQueueOrder) {
  for (int64_t id = 1; id <= 6; ++id) Arrive(id);
  std::vector<QueueEntry> head;
  for (int64_t id : {1, 2}) head.push_back(QueueEntry{JobId{id}, QueueFactors{}});
  q_.Ordered(std::move(head), 2, /*partial=*/true);
  EXPECT_EQ(q_.Position(JobId{2})->first, 2);
  EXPECT_EQ(q_.Position(JobId{3})->first, 3);
  EXPECT_EQ(q_.Position(JobId{6})->first, 6);
  EXPECT_FALSE(q_.Position(JobId{9}).has_value());
}

TEST_F(JobQueueTest, TheUnorderedRestOfAnOrderIsOrderedWhenAsked) {
  for (int64_t id = 1; id <= 4; ++id) Arrive(id);
  auto entry = [](int64_t id, double score) {
    QueueFactors f;
    f.score = score;
    return QueueEntry{JobId{id}, f};
  };
  // The pass walked one job; the three after it are in no order.
  q_.Ordered({entry(2, 9), entry(4, 1), entry(1, 5), entry(3, 5)}, 1, false);
  std::vector<int64_t> ids;
  for (const QueueEntry& e : q_.order()) ids.push_back(e.id.value);
  EXPECT_EQ(ids, (std::vector<int64_t>{2, 1, 3, 4}));  // score, then submit order
  EXPECT_EQ(q_.Position(JobId{4})->first, 4);
}

TEST_F(JobQueueTest, QuietStrictArrivalsBehindAWaitingBlockerGetAPassOfTheirOwn) {
  BlockedAtTwo();
  Arrive(5);
  Arrive(4);
  JobQueue::Plan plan = Quiet();
  EXPECT_EQ(plan.kind, JobQueue::Kind::kIncremental);
  EXPECT_EQ(Ids(plan), (std::vector<int64_t>{4, 5}));  // in queue order
  ASSERT_TRUE(plan.blocker.has_value());
  EXPECT_EQ(plan.blocker->value, 2);
  EXPECT_EQ(plan.ahead, 2);  // 2 and 3 wait ahead of 4
  EXPECT_EQ(Quiet().kind, JobQueue::Kind::kNone);
  // A lower class goes behind them all: still at the tail.
  Arrive(6, Priority::kLow);
  plan = Quiet();
  EXPECT_EQ(plan.kind, JobQueue::Kind::kIncremental);
  EXPECT_EQ(plan.ahead, 4);
}

TEST_F(JobQueueTest, QuietStrictRunsAFullPassWhenSomethingCouldStart) {
  // A higher class goes ahead of the blocker.
  BlockedAtTwo();
  Arrive(4, Priority::kHigh);
  EXPECT_EQ(Quiet().kind, JobQueue::Kind::kFull);
  // A job back in the queue (requeued) with an older id than a waiting one.
  q_.Blocked(&jobs_.at(2));
  Leave(3);
  Arrive(5);
  (void)Quiet();
  jobs_.at(3).state = JobState::kPending;
  q_.Add(jobs_.at(3));
  EXPECT_EQ(Quiet().kind, JobQueue::Kind::kFull);
  // GPUs freed that might hold the blocker; freed ones that cannot need no pass.
  q_.Blocked(&jobs_.at(2));
  q_.Freed();
  EXPECT_EQ(Quiet(/*stuck=*/true).kind, JobQueue::Kind::kNone);
  q_.Freed();
  EXPECT_EQ(Quiet(/*stuck=*/false).kind, JobQueue::Kind::kFull);
  // The blocker left the queue (started, cancelled).
  q_.Blocked(&jobs_.at(2));
  Leave(2);
  Arrive(7);
  EXPECT_EQ(Quiet().kind, JobQueue::Kind::kFull);
  // No blocker: the last full pass left nothing waiting for resources.
  q_.Blocked(nullptr);
  Arrive(8);
  EXPECT_EQ(Quiet().kind, JobQueue::Kind::kFull);
  // Asked for (a node, policy or drain change).
  q_.Blocked(&jobs_.at(3));
  Arrive(9);
  q_.RequestFull();
  EXPECT_EQ(Quiet().kind, JobQueue::Kind::kFull);
}

TEST_F(JobQueueTest, QuietStrictOrderHasNoTimedFullPass) {
  BlockedAtTwo();
  q_.Tick(kNow + std::chrono::seconds(5), std::chrono::seconds(2));
  EXPECT_EQ(Quiet(false, kNow + std::chrono::seconds(5)).kind, JobQueue::Kind::kNone);
  // Strict order by a score that time changes (age, usage) keeps its timed pass.
  EXPECT_EQ(Next(kNow + std::chrono::seconds(5), /*strict=*/true).kind, JobQueue::Kind::kFull);
}

TEST_F(JobQueueTest, TheQueueStaysInClassThenSubmitOrderAsJobsComeAndGo) {
  // Many leave (the runs close up), some come back with old ids, and a class changes hands.
  for (int64_t id = 1; id <= 200; ++id)
    Arrive(id, id % 3 == 0 ? Priority::kHigh : Priority::kNormal);
  for (int64_t id = 1; id <= 200; id += 2) Leave(id);
  for (int64_t id = 1; id <= 50; id += 2) {
    jobs_.at(id).state = JobState::kPending;
    q_.Add(jobs_.at(id));
  }
  q_.Add(jobs_.at(2));  // twice: once in the queue
  std::vector<int64_t> expected;
  for (Priority p : {Priority::kHigh, Priority::kNormal}) {
    for (int64_t id = 1; id <= 200; ++id) {
      bool waiting = id % 2 == 0 || id < 50;
      if (waiting && (id % 3 == 0) == (p == Priority::kHigh)) expected.push_back(id);
    }
  }
  std::vector<int64_t> ids;
  q_.ForEach([&](const Job& j) { ids.push_back(j.id.value); });
  EXPECT_EQ(ids, expected);
  EXPECT_EQ(q_.size(), expected.size());
  auto [first, more] = q_.First(10);
  EXPECT_TRUE(more);
  ASSERT_EQ(first.size(), 10u);
  EXPECT_EQ(first[0]->id.value, expected[0]);
  EXPECT_EQ(first[9]->id.value, expected[9]);
}

}  // namespace
}  // namespace baton::sched
