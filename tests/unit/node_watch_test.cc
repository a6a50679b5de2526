// Silent agents and their fences (control/node_watch.h); the controller's tests cover what it
// does with the verdicts (the node_lost alert, the requeue).
#include "control/node_watch.h"

#include <gtest/gtest.h>

namespace baton::control {
namespace {

using std::chrono::seconds;

const TimePoint kT0 = FromMillis(1'790'000'000'000);

std::vector<std::string> Names(const std::vector<NodeRecord*>& nodes) {
  std::vector<std::string> names;
  for (const NodeRecord* n : nodes) names.push_back(n->info.name);
  return names;
}

NodeRecord& Ready(NodeTable& nodes, const std::string& name, TimePoint last_seen) {
  NodeRecord& n = nodes.Ensure(name);
  n.info.name = name;
  n.state = NodeRecord::State::kReady;
  n.last_seen = last_seen;
  return n;
}

TEST(NodeWatch, TheFenceEndsAfterTheTimeoutTheGraceTheLeaseLookAndClockDrift) {
  NodeWatch watch(seconds(60), seconds(10));
  // 70 s of fence, 2 % of it for clocks (1.4 s), 2 s for the shims' look at their lease.
  EXPECT_EQ(watch.FenceEnds(kT0), kT0 + std::chrono::milliseconds(73'400));
}

TEST(NodeWatch, NodesSilentPastTheTimeoutAreFoundAndTheNextWalkWaitsForTheBound) {
  NodeWatch watch(seconds(60), seconds(10));
  NodeTable nodes;
  Ready(nodes, "a", kT0);
  Ready(nodes, "b", kT0 + seconds(30));
  EXPECT_TRUE(watch.Silent(nodes, kT0 + seconds(60)).empty());  // not past the timeout yet
  std::vector<NodeRecord*> silent = watch.Silent(nodes, kT0 + seconds(61));
  EXPECT_EQ(Names(silent), std::vector<std::string>{"a"});
  silent[0]->state = NodeRecord::State::kLost;  // as the controller marks it
  watch.Lost(*silent[0]);
  // b, seen at 30 s, is the bound: nothing is due before 90 s, even if b was seen since.
  nodes.Find("b")->last_seen = kT0 + seconds(20);  // (a walk would find it at 81 s)
  EXPECT_TRUE(watch.Silent(nodes, kT0 + seconds(85)).empty());
  silent = watch.Silent(nodes, kT0 + seconds(91));
  EXPECT_EQ(Names(silent), std::vector<std::string>{"b"});
  silent[0]->state = NodeRecord::State::kLost;
  // No node left to watch: no walk, until a node joins or comes back (Reset).
  Ready(nodes, "c", kT0);
  EXPECT_TRUE(watch.Silent(nodes, kT0 + seconds(92)).empty());
  watch.Reset();
  EXPECT_EQ(Names(watch.Silent(nodes, kT0 + seconds(92))), std::vector<std::string>{"c"});
}

TEST(NodeWatch, ALostNodesJobsAreDueOnlyOnceItsFenceHasPassed) {
  NodeWatch watch(seconds(60), seconds(10));
  NodeTable nodes;
  NodeRecord& a = Ready(nodes, "a", kT0);
  NodeRecord& b = Ready(nodes, "b", kT0 + seconds(100));
  EXPECT_TRUE(watch.Fenced(nodes, kT0 + std::chrono::hours(1)).empty());  // none lost
  a.state = b.state = NodeRecord::State::kLost;
  watch.Lost(a);
  watch.Lost(b);
  EXPECT_EQ(a.requeue_at, watch.FenceEnds(kT0));
  EXPECT_TRUE(watch.Fenced(nodes, a.requeue_at - seconds(1)).empty());
  EXPECT_EQ(Names(watch.Fenced(nodes, a.requeue_at)), std::vector<std::string>{"a"});
  // One back before its fence passed keeps its jobs (the controller clears requeue_at); one
  // whose fence passed is found again at the next walk (its jobs went back at the first).
  b.requeue_at = TimePoint::max();
  b.state = NodeRecord::State::kReady;
  EXPECT_EQ(Names(watch.Fenced(nodes, kT0 + std::chrono::hours(1))), std::vector<std::string>{"a"});
  EXPECT_TRUE(watch.Fenced(nodes, kT0 + std::chrono::hours(2)).empty());  // none due: no walk
}

}  // namespace
}  // namespace baton::control
