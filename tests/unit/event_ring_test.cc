// The controller's event ring: numbering, paging, the capacity, a client of an earlier run.
#include "control/event_ring.h"

#include <gtest/gtest.h>

namespace baton::control {
namespace {

const TimePoint kNow = FromMillis(1'790'000'000'000);

ClusterEvent Event(EventKind kind) {
  return ClusterEvent{.kind = kind, .severity = Severity::kInfo, .message = "m"};
}

TEST(EventRing, NumbersEventsFromOneAndStampsThem) {
  EventRing ring;
  ring.Raise(Event(EventKind::kNodeJoined), kNow);
  ring.Raise(Event(EventKind::kGpuFailed), kNow + std::chrono::seconds(1));
  std::vector<ClusterEvent> all = ring.After(0, 100);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].seq, 1);
  EXPECT_EQ(all[0].at, kNow);
  EXPECT_EQ(all[1].seq, 2);
  EXPECT_EQ(all[1].kind, EventKind::kGpuFailed);
  EXPECT_EQ(ring.raised(), 2);
}

TEST(EventRing, PagesAfterANumberWithinALimit) {
  EventRing ring;
  for (int i = 0; i < 10; ++i) ring.Raise(Event(EventKind::kGpuXid), kNow);
  std::vector<ClusterEvent> page = ring.After(3, 4);
  ASSERT_EQ(page.size(), 4u);
  EXPECT_EQ(page.front().seq, 4);
  EXPECT_EQ(page.back().seq, 7);
  EXPECT_TRUE(ring.After(10, 100).empty());
}

TEST(EventRing, KeepsOnlyTheLatestCapacityEvents) {
  EventRing ring(3);
  for (int i = 0; i < 5; ++i) ring.Raise(Event(EventKind::kGpuXid), kNow);
  std::vector<ClusterEvent> kept = ring.After(0, 100);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept.front().seq, 3);
  EXPECT_EQ(ring.raised(), 5);
}

TEST(EventRing, ANumberFromAnotherStoreGetsEveryEventFromTheStart) {
  EventRing ring;
  ring.Raise(Event(EventKind::kNodeJoined), kNow);
  std::vector<ClusterEvent> all = ring.After(500, 100);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].seq, 1);
}

TEST(EventRing, HandsTheBatchsNewEventsOverOnce) {
  EventRing ring;
  ring.Raise(Event(EventKind::kNodeLost), kNow);
  EXPECT_EQ(ring.TakeNew().size(), 1u);
  EXPECT_TRUE(ring.TakeNew().empty());
  ring.Raise(Event(EventKind::kBudget), kNow);
  std::vector<ClusterEvent> batch = ring.TakeNew();
  ASSERT_EQ(batch.size(), 1u);
  EXPECT_EQ(batch[0].seq, 2);
  EXPECT_EQ(ring.After(0, 100).size(), 2u);  // still kept for GET /v1/events
}

// The events a store kept come back, and numbering goes on after them (issue 38): a client
// that followed them resumes after a restart; what the store restored is not new again.
TEST(EventRing, RestoredEventsAreKeptAndNumberingGoesOnAfterThem) {
  EventRing ring(3);
  std::vector<ClusterEvent> stored;
  for (int64_t seq : {7, 8, 9, 10}) {
    ClusterEvent e = Event(EventKind::kGpuXid);
    e.seq = seq;
    stored.push_back(e);
  }
  ring.Restore(stored);
  std::vector<ClusterEvent> kept = ring.After(0, 100);
  ASSERT_EQ(kept.size(), 3u);  // the ring's own bound still holds
  EXPECT_EQ(kept.front().seq, 8);
  EXPECT_TRUE(ring.TakeNew().empty());
  EXPECT_EQ(ring.raised(), 0);
  ring.Raise(Event(EventKind::kNodeLost), kNow);
  EXPECT_EQ(ring.After(9, 100).size(), 2u);
  EXPECT_EQ(ring.After(10, 100).at(0).seq, 11);
  EXPECT_EQ(ring.raised(), 1);
  EventRing empty;
  empty.Restore({});
  empty.Raise(Event(EventKind::kNodeJoined), kNow);
  EXPECT_EQ(empty.After(0, 10).at(0).seq, 1);
}

}  // namespace
}  // namespace baton::control
