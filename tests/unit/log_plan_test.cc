// A job's output past its limit (agent/log_plan.h): what the node keeps and the controller
// gets, from the limit and the log's size alone. The agent's tests cover the same through its
// files (AgentTest.OutputPastItsLimitKeepsItsHeadAndItsTailOnBothSides).
#include "agent/log_plan.h"

#include <gtest/gtest.h>

namespace baton::agent {
namespace {

constexpr int64_t kMiB = 1 << 20;

TEST(LogPlan, ALogWithinItsLimitOrWithoutOneIsShippedWhole) {
  LogPlan none = PlanLog(5 * kMiB, 0, true, "n1");
  EXPECT_FALSE(none.over);
  EXPECT_EQ(none.head, 5 * kMiB);
  EXPECT_EQ(none.tail, 0);
  // The node's marker fits past the limit before the log counts as over.
  const int64_t limit = 4 * kMiB;
  const int64_t marker = static_cast<int64_t>(NodeMarker(limit).size());
  EXPECT_FALSE(PlanLog(limit + marker, limit, false, "n1").over);
  EXPECT_TRUE(PlanLog(limit + marker + 1, limit, false, "n1").over);
  EXPECT_TRUE(LogWaiting(none, LogShipped{.head = 5 * kMiB - 1}));
  EXPECT_FALSE(LogWaiting(none, LogShipped{.head = 5 * kMiB}));
}

TEST(LogPlan, PastItsLimitTheHeadGoesWhileItRunsAndTheMarkerAndTailOnceItHasEnded) {
  const int64_t limit = 4 * kMiB;
  LogPlan running = PlanLog(100 * kMiB, limit, false, "n1");
  ASSERT_TRUE(running.over);
  EXPECT_EQ(running.head, 2 * kMiB);
  EXPECT_EQ(running.tail_from, 98 * kMiB);
  EXPECT_EQ(running.tail, 0);  // nothing of the tail until it ends
  EXPECT_FALSE(LogWaiting(running, LogShipped{.head = 2 * kMiB}));

  LogPlan ended = PlanLog(100 * kMiB, limit, true, "n1");
  EXPECT_NE(ended.marker.find("of output dropped here"), std::string::npos) << ended.marker;
  EXPECT_NE(ended.marker.find("on node n1"), std::string::npos);
  EXPECT_EQ(ended.tail, static_cast<int64_t>(ended.marker.size()) + 2 * kMiB);
  EXPECT_GE(ended.marker.size(), NodeMarker(limit).size());  // covers what the node had there
  EXPECT_TRUE(LogWaiting(ended, LogShipped{.head = 2 * kMiB, .tail = ended.tail - 1}));
  EXPECT_FALSE(LogWaiting(ended, LogShipped{.head = 2 * kMiB, .tail = ended.tail}));
}

TEST(LogPlan, TheMiddleIsFreedAMibOrMoreAtATimeAndNeverTheHeadItsMarkerOrTheTail) {
  const int64_t limit = 4 * kMiB;
  const int64_t after_marker = 2 * kMiB + static_cast<int64_t>(NodeMarker(limit).size());
  // Just over: the middle is less than a MiB.
  EXPECT_EQ(PunchRange(PlanLog(5 * kMiB, limit, false, "n1"), limit, 0), std::nullopt);
  auto punch = PunchRange(PlanLog(10 * kMiB, limit, false, "n1"), limit, 0);
  ASSERT_TRUE(punch);
  EXPECT_EQ(punch->first, after_marker);
  EXPECT_EQ(punch->second, 8 * kMiB);
  // Freed up to 8 MiB already: 1.5 MiB more is due at 11.5 MiB, not at 9.
  EXPECT_EQ(PunchRange(PlanLog(9 * kMiB + 1, limit, false, "n1"), limit, 8 * kMiB), std::nullopt);
  punch = PunchRange(PlanLog(11 * kMiB, limit, false, "n1"), limit, 8 * kMiB);
  ASSERT_TRUE(punch);
  EXPECT_EQ(*punch, std::make_pair(8 * kMiB, 9 * kMiB));
  EXPECT_EQ(PunchRange(PlanLog(1 * kMiB, limit, false, "n1"), limit, 0), std::nullopt);  // under
}

TEST(LogPlan, TheControllerIsToldTheLimitAndWhatIsKept) {
  EXPECT_EQ(LimitMessage(4 * kMiB, "n1"),
            "its output on node n1 passed its limit of 4MiB: the log keeps its first 2MiB and "
            "its last 2MiB");
}

}  // namespace
}  // namespace baton::agent
