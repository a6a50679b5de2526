// The node table alone: sessions, numbered orders in an outbox until acknowledged, parked
// polls and the deliveries that answer them.
#include "control/node_table.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace baton::control {
namespace {

const TimePoint kNow = FromMillis(1'790'000'000'000);
const Duration kTimeout = std::chrono::seconds(20);

Order Stop(int64_t job) {
  Order o;
  o.kind = Order::Kind::kStop;
  o.stop.job = JobId{job};
  return o;
}

TEST(NodeTable, ANodeIsAddedOnceAndFoundByName) {
  NodeTable t;
  bool added = false;
  NodeRecord& n = t.Ensure("n1", &added);
  EXPECT_TRUE(added);
  EXPECT_EQ(n.info.name, "n1");
  EXPECT_EQ(n.state, NodeRecord::State::kAwaiting);
  t.Ensure("n1", &added);
  EXPECT_FALSE(added);
  EXPECT_EQ(t.Find("n1"), &n);
  EXPECT_EQ(t.Find("n2"), nullptr);
}

TEST(NodeTable, OrdersAreNumberedAndStayUntilAcknowledged) {
  NodeTable t;
  NodeRecord& n = t.Ensure("n1");
  t.StartSession(n, kNow);
  t.Send(n, Stop(1));
  t.Send(n, Stop(2));
  auto orders = t.Poll(n, 0, 1, kNow, kTimeout);
  ASSERT_TRUE(orders.has_value());
  ASSERT_EQ(orders->size(), 2u);
  EXPECT_EQ((*orders)[0].seq, 1u);
  EXPECT_EQ((*orders)[1].seq, 2u);
  orders = t.Poll(n, 1, 2, kNow, kTimeout);  // the first acknowledged
  ASSERT_TRUE(orders.has_value());
  ASSERT_EQ(orders->size(), 1u);
  EXPECT_EQ((*orders)[0].stop.job, JobId{2});
  EXPECT_FALSE(t.Poll(n, 2, 3, kNow, kTimeout).has_value());  // nothing left: parked
  EXPECT_EQ(n.parked_poll, 3u);
}

TEST(NodeTable, AParkedPollIsAnsweredByTheNextOrdersAtTheBatchsEnd) {
  NodeTable t;
  NodeRecord& n = t.Ensure("n1");
  t.StartSession(n, kNow);
  ASSERT_FALSE(t.Poll(n, 0, 7, kNow, kTimeout).has_value());
  EXPECT_TRUE(t.TakeDeliveries().empty());
  t.Send(n, Stop(5));
  std::vector<Delivery> d = t.TakeDeliveries();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].poll_id, 7u);
  ASSERT_EQ(d[0].orders.size(), 1u);
  EXPECT_FALSE(n.parked_poll.has_value());
}

// Issue 20: the batch's end answers the nodes that were sent orders, not a walk of every node,
// and in the order of their names as before (the simulator's decisions depend on it).
TEST(NodeTable, DeliveriesGoToTheParkedNodesThatWereSentOrdersInTheOrderOfTheirNames) {
  NodeTable t;
  for (const char* name : {"n3", "n1", "n2"}) t.StartSession(t.Ensure(name), kNow);
  ASSERT_FALSE(t.Poll(*t.Find("n3"), 0, 3, kNow, kTimeout).has_value());
  ASSERT_FALSE(t.Poll(*t.Find("n1"), 0, 1, kNow, kTimeout).has_value());
  ASSERT_FALSE(t.Poll(*t.Find("n2"), 0, 2, kNow, kTimeout).has_value());
  t.Send(*t.Find("n3"), Stop(30));
  t.Send(*t.Find("n1"), Stop(10));
  t.Send(*t.Find("n3"), Stop(31));
  std::vector<Delivery> d = t.TakeDeliveries();
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].poll_id, 1u);
  EXPECT_EQ(d[0].orders.size(), 1u);
  EXPECT_EQ(d[1].poll_id, 3u);
  EXPECT_EQ(d[1].orders.size(), 2u);         // both of n3's, once
  EXPECT_EQ(t.Find("n2")->parked_poll, 2u);  // sent nothing: still waiting
  EXPECT_TRUE(t.TakeDeliveries().empty());
  // Sent to a node whose poll was not parked: its next poll takes it, no delivery.
  t.Send(*t.Find("n1"), Stop(11));
  EXPECT_TRUE(t.TakeDeliveries().empty());
  EXPECT_EQ(t.Poll(*t.Find("n1"), 1, 4, kNow, kTimeout)->size(), 1u);
}

TEST(NodeTable, ANewSessionOrALostNodeAnswersItsParkedPollEmptyAndDropsItsOrders) {
  NodeTable t;
  NodeRecord& n = t.Ensure("n1");
  uint64_t first = t.StartSession(n, kNow);
  ASSERT_FALSE(t.Poll(n, 0, 1, kNow, kTimeout).has_value());
  uint64_t second = t.StartSession(n, kNow);
  EXPECT_NE(first, second);
  t.Send(n, Stop(1));
  EXPECT_EQ(t.Poll(n, 0, 2, kNow, kTimeout)->at(0).seq, 1u);  // numbering starts over
  std::vector<Delivery> d = t.TakeDeliveries();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].poll_id, 1u);
  EXPECT_TRUE(d[0].orders.empty());
  ASSERT_FALSE(t.Poll(n, 1, 3, kNow, kTimeout).has_value());
  t.Send(n, Stop(2));
  t.Disconnect(n);
  EXPECT_TRUE(n.outbox.empty());
  d = t.TakeDeliveries();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_TRUE(d[0].orders.empty());
}

TEST(NodeTable, APollParkedTooLongIsAnsweredEmptyAfterItsOwnWait) {
  NodeTable t;
  NodeRecord& n = t.Ensure("n1");
  const uint64_t session = t.StartSession(n, kNow);
  ASSERT_FALSE(t.Poll(n, 0, 4, kNow, kTimeout).has_value());
  const Duration wait = NodeTable::PollWait(session, 4, kTimeout);
  EXPECT_GE(wait, kTimeout / 2);
  EXPECT_LE(wait, kTimeout);
  EXPECT_EQ(NodeTable::PollWait(session, 4, kTimeout), wait);  // the same each time
  t.ExpirePolls(kNow + wait - std::chrono::milliseconds(1));
  EXPECT_TRUE(t.TakeDeliveries().empty());
  t.ExpirePolls(kNow + wait);
  std::vector<Delivery> d = t.TakeDeliveries();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].poll_id, 4u);
  EXPECT_TRUE(d[0].orders.empty());
  // The simulator's polls never expire.
  EXPECT_EQ(NodeTable::PollWait(session, 5, kMaxDuration), kMaxDuration);
}

TEST(NodeTable, PollsParkedAtDifferentTimesAreEachAnsweredWhenTheirTimeComes) {
  // The soonest due is answered first, whenever it parked.
  NodeTable t;
  NodeRecord& a = t.Ensure("a");
  NodeRecord& b = t.Ensure("b");
  const uint64_t sa = t.StartSession(a, kNow);
  const uint64_t sb = t.StartSession(b, kNow);
  ASSERT_FALSE(t.Poll(a, 0, 1, kNow, kTimeout).has_value());
  ASSERT_FALSE(t.Poll(b, 0, 2, kNow + std::chrono::seconds(3), kTimeout).has_value());
  const TimePoint due_a = kNow + NodeTable::PollWait(sa, 1, kTimeout);
  const TimePoint due_b = kNow + std::chrono::seconds(3) + NodeTable::PollWait(sb, 2, kTimeout);
  ASSERT_NE(due_a, due_b);
  auto answered_at = [&](TimePoint at) {
    t.ExpirePolls(at);
    std::vector<uint64_t> polls;
    for (const Delivery& d : t.TakeDeliveries()) polls.push_back(d.poll_id);
    return polls;
  };
  const TimePoint first = std::min(due_a, due_b), second = std::max(due_a, due_b);
  const uint64_t first_poll = due_a < due_b ? 1 : 2, second_poll = 3 - first_poll;
  const auto ms = std::chrono::milliseconds(1);
  EXPECT_TRUE(answered_at(first - ms).empty());
  EXPECT_EQ(answered_at(first), std::vector<uint64_t>{first_poll});
  EXPECT_TRUE(answered_at(second - ms).empty());
  EXPECT_EQ(answered_at(second), std::vector<uint64_t>{second_poll});
  // A poll answered by orders is not answered again when its time would have come.
  ASSERT_FALSE(t.Poll(a, 0, 4, second, kTimeout).has_value());
  t.Send(a, Stop(1));
  ASSERT_EQ(t.TakeDeliveries().size(), 1u);
  EXPECT_TRUE(answered_at(second + kTimeout).empty());
}

// Issue 41: ten thousand agents that registered within a few seconds (a controller's start, a
// failover) had their polls answered empty together 20 s later, and again every 20 s after:
// waves of over a thousand answers a second, with as many new polls, that held the submits
// behind them (p99 16-36 ms to a launch order, 5 ms between the waves). Each poll now waits
// its own time, from half the timeout to all of it, so the waves spread out.
TEST(NodeTable, PollsParkedTogetherAreAnsweredSpreadOverHalfTheTimeoutAndSpreadFurtherAfter) {
  NodeTable t;
  constexpr int kNodes = 2000;
  std::vector<NodeRecord*> nodes;
  for (int i = 0; i < kNodes; ++i) {
    nodes.push_back(&t.Ensure("n" + std::to_string(i)));
    t.StartSession(*nodes.back(), kNow);
  }
  uint64_t next_poll = 1;
  std::map<uint64_t, std::pair<NodeRecord*, TimePoint>> parked;  // poll -> node, when it parked
  auto park = [&](NodeRecord& n, TimePoint at) {
    ASSERT_FALSE(t.Poll(n, 0, next_poll, at, kTimeout).has_value());
    parked[next_poll++] = {&n, at};
  };
  for (NodeRecord* n : nodes) park(*n, kNow);  // all at once
  // Every 10 ms for 60 s: each answered poll is polled again at once, as agents do.
  std::map<int64_t, int> per_second;  // second after kNow -> polls answered in it
  for (int ms = 10; ms <= 60'000; ms += 10) {
    const TimePoint now = kNow + std::chrono::milliseconds(ms);
    t.ExpirePolls(now);
    for (const Delivery& d : t.TakeDeliveries()) {
      auto it = parked.find(d.poll_id);
      ASSERT_NE(it, parked.end());
      const Duration waited = now - it->second.second;
      ASSERT_GE(waited, kTimeout / 2) << "poll " << d.poll_id;
      ASSERT_LT(waited, kTimeout + std::chrono::milliseconds(10)) << "poll " << d.poll_id;
      per_second[ms / 1000] += 1;
      NodeRecord* n = it->second.first;
      parked.erase(it);
      park(*n, now);
    }
  }
  // The first round: nothing before 10 s, then about kNodes / 10 a second (200), never three
  // times that; parked together, they would all have come in one second.
  int first_round = 0;
  for (int s = 0; s < 10; ++s) EXPECT_EQ(per_second[s], 0) << "second " << s;
  for (int s = 10; s < 20; ++s) {
    EXPECT_LE(per_second[s], 3 * kNodes / 10) << "second " << s;
    first_round += per_second[s];
  }
  EXPECT_GE(first_round, kNodes * 9 / 10);
  // By the third round (40-60 s) they are spread over the whole interval: every second has
  // some, none more than twice the even share (kNodes / 15 s mean wait = 133 a second).
  for (int s = 40; s < 60; ++s) {
    EXPECT_GE(per_second[s], kNodes / 15 / 3) << "second " << s;
    EXPECT_LE(per_second[s], 2 * kNodes / 15) << "second " << s;
  }
}

// A clock set back must not hold the polls parked before it for as long as it went back: they
// are answered (empty), and the agents poll again.
TEST(NodeTable, AClockSetBackAnswersTheParkedPollsRatherThanHoldingThem) {
  NodeTable t;
  NodeRecord& n = t.Ensure("n1");
  t.StartSession(n, kNow);
  ASSERT_FALSE(t.Poll(n, 0, 7, kNow, kTimeout).has_value());
  t.ExpirePolls(kNow - std::chrono::hours(1));
  std::vector<Delivery> d = t.TakeDeliveries();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].poll_id, 7u);
}

}  // namespace
}  // namespace baton::control
