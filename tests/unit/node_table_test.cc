// The node table alone: sessions, numbered orders in an outbox until acknowledged, parked
// polls and the deliveries that answer them.
#include "control/node_table.h"

#include <gtest/gtest.h>

namespace baton::control {
namespace {

const TimePoint kNow = FromMillis(1'790'000'000'000);

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
  auto orders = t.Poll(n, 0, 1, kNow);
  ASSERT_TRUE(orders.has_value());
  ASSERT_EQ(orders->size(), 2u);
  EXPECT_EQ((*orders)[0].seq, 1u);
  EXPECT_EQ((*orders)[1].seq, 2u);
  orders = t.Poll(n, 1, 2, kNow);  // the first acknowledged
  ASSERT_TRUE(orders.has_value());
  ASSERT_EQ(orders->size(), 1u);
  EXPECT_EQ((*orders)[0].stop.job, JobId{2});
  EXPECT_FALSE(t.Poll(n, 2, 3, kNow).has_value());  // nothing left: parked
  EXPECT_EQ(n.parked_poll, 3u);
}

TEST(NodeTable, AParkedPollIsAnsweredByTheNextOrdersAtTheBatchsEnd) {
  NodeTable t;
  NodeRecord& n = t.Ensure("n1");
  t.StartSession(n, kNow);
  ASSERT_FALSE(t.Poll(n, 0, 7, kNow).has_value());
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
  ASSERT_FALSE(t.Poll(*t.Find("n3"), 0, 3, kNow).has_value());
  ASSERT_FALSE(t.Poll(*t.Find("n1"), 0, 1, kNow).has_value());
  ASSERT_FALSE(t.Poll(*t.Find("n2"), 0, 2, kNow).has_value());
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
  EXPECT_EQ(t.Poll(*t.Find("n1"), 1, 4, kNow)->size(), 1u);
}

TEST(NodeTable, ANewSessionOrALostNodeAnswersItsParkedPollEmptyAndDropsItsOrders) {
  NodeTable t;
  NodeRecord& n = t.Ensure("n1");
  uint64_t first = t.StartSession(n, kNow);
  ASSERT_FALSE(t.Poll(n, 0, 1, kNow).has_value());
  uint64_t second = t.StartSession(n, kNow);
  EXPECT_NE(first, second);
  t.Send(n, Stop(1));
  EXPECT_EQ(t.Poll(n, 0, 2, kNow)->at(0).seq, 1u);  // numbering starts over
  std::vector<Delivery> d = t.TakeDeliveries();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].poll_id, 1u);
  EXPECT_TRUE(d[0].orders.empty());
  ASSERT_FALSE(t.Poll(n, 1, 3, kNow).has_value());
  t.Send(n, Stop(2));
  t.Disconnect(n);
  EXPECT_TRUE(n.outbox.empty());
  d = t.TakeDeliveries();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_TRUE(d[0].orders.empty());
}

TEST(NodeTable, APollParkedTooLongIsAnsweredEmpty) {
  NodeTable t;
  NodeRecord& n = t.Ensure("n1");
  t.StartSession(n, kNow);
  ASSERT_FALSE(t.Poll(n, 0, 4, kNow).has_value());
  t.ExpirePolls(kNow + std::chrono::seconds(19), std::chrono::seconds(20));
  EXPECT_TRUE(t.TakeDeliveries().empty());
  t.ExpirePolls(kNow + std::chrono::seconds(20), std::chrono::seconds(20));
  std::vector<Delivery> d = t.TakeDeliveries();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].poll_id, 4u);
}

TEST(NodeTable, PollsParkedAtDifferentTimesAreEachAnsweredWhenTheirTimeComes) {
  // A tick walks the nodes only when the oldest parked poll may be due: each is answered on
  // time all the same.
  NodeTable t;
  const auto timeout = std::chrono::seconds(20);
  NodeRecord& a = t.Ensure("a");
  NodeRecord& b = t.Ensure("b");
  t.StartSession(a, kNow);
  t.StartSession(b, kNow);
  ASSERT_FALSE(t.Poll(a, 0, 1, kNow).has_value());
  ASSERT_FALSE(t.Poll(b, 0, 2, kNow + std::chrono::seconds(10)).has_value());
  auto answered_at = [&](int seconds) {
    t.ExpirePolls(kNow + std::chrono::seconds(seconds), timeout);
    std::vector<uint64_t> polls;
    for (const Delivery& d : t.TakeDeliveries()) polls.push_back(d.poll_id);
    return polls;
  };
  EXPECT_TRUE(answered_at(19).empty());
  EXPECT_EQ(answered_at(20), std::vector<uint64_t>{1});
  ASSERT_FALSE(t.Poll(a, 0, 3, kNow + std::chrono::seconds(21)).has_value());
  EXPECT_TRUE(answered_at(29).empty());
  EXPECT_EQ(answered_at(30), std::vector<uint64_t>{2});
  EXPECT_TRUE(answered_at(40).empty());
  EXPECT_EQ(answered_at(41), std::vector<uint64_t>{3});
  EXPECT_TRUE(answered_at(100).empty());
}

// Issue 41: at ten thousand agents, polls expired by the second's tick came hundreds at once,
// and each burst held a submit's launch order up to 170 ms. The controller now expires them at
// every batch's end, each when its own time comes.
TEST(NodeTable, ManyParkedPollsExpireEachWhenItsTimeComesNotInBursts) {
  NodeTable t;
  const auto timeout = std::chrono::seconds(20);
  std::vector<NodeRecord*> nodes;
  for (int i = 0; i < 1000; ++i) {
    nodes.push_back(&t.Ensure("n" + std::to_string(i)));
    t.StartSession(*nodes.back(), kNow);
  }
  // One poll parks every 10 ms.
  for (int i = 0; i < 1000; ++i) {
    ASSERT_FALSE(t.Poll(*nodes[i], 0, i + 1, kNow + std::chrono::milliseconds(10 * i)).has_value());
  }
  (void)t.TakeDeliveries();
  size_t most = 0, answered = 0;
  for (int ms = 0; ms <= 30000; ms += 10) {
    t.ExpirePolls(kNow + std::chrono::milliseconds(ms), timeout);
    std::vector<Delivery> d = t.TakeDeliveries();
    for (const Delivery& x : d) {
      // Poll i parked at 10 i ms: answered at 20 s after that, not later.
      EXPECT_EQ(static_cast<int>(x.poll_id) - 1, (ms - 20000) / 10) << "at " << ms << " ms";
    }
    most = std::max(most, d.size());
    answered += d.size();
  }
  EXPECT_EQ(answered, 1000u);
  EXPECT_EQ(most, 1u);
}

// A clock set back must not hold the polls parked before it for as long as it went back: they
// are answered (empty), and the agents poll again.
TEST(NodeTable, AClockSetBackAnswersTheParkedPollsRatherThanHoldingThem) {
  NodeTable t;
  NodeRecord& n = t.Ensure("n1");
  t.StartSession(n, kNow);
  ASSERT_FALSE(t.Poll(n, 0, 7, kNow).has_value());
  t.ExpirePolls(kNow - std::chrono::hours(1), std::chrono::seconds(20));
  std::vector<Delivery> d = t.TakeDeliveries();
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].poll_id, 7u);
}

}  // namespace
}  // namespace baton::control
