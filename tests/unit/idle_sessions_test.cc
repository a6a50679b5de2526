// The controller's IdleSessions: a session of a pool that reclaims idle ones is warned once
// before its pool's idle timeout and stopped at it, unless a client attaches or its GPUs are
// used, which start its clock again.
#include "control/idle_sessions.h"

#include <gtest/gtest.h>

namespace baton::control {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;
using Kind = IdleSessions::Verdict::Kind;

class IdleSessionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PoolPolicy dev;
    dev.interactive = true;
    dev.idle_timeout = minutes(10);
    dev.idle_warning = minutes(2);
    dev.idle_utilization_pct = 5;
    policy_.pools["dev"] = dev;
    NodeRecord& n1 = nodes_.Ensure("n1");
    n1.state = NodeRecord::State::kReady;
    session_.id = JobId{7};
    session_.state = JobState::kRunning;
    session_.spec.pool = "dev";
    session_.spec.interactive = Interactive::kTty;
    session_.allocation = {NodeAllocation{.node = "n1", .gpus = {0}, .milli_per_gpu = 1000}};
  }
  std::vector<IdleSessions::Verdict> At(Duration after) {
    return idle_.Review(policy_, {&session_}, nodes_, start_ + after);
  }
  void Utilization(int pct) {
    nodes_.Find("n1")->samples = {GpuSample{.index = 0, .utilization_pct = pct}};
  }

  Policy policy_;
  NodeTable nodes_;
  Job session_;
  IdleSessions idle_;
  const TimePoint start_ = FromMillis(1'790'000'000'000);
};

TEST_F(IdleSessionsTest, AnIdleSessionIsWarnedOnceThenStoppedAtItsPoolsTimeout) {
  EXPECT_TRUE(IdleSessions::AnyPoolReclaims(policy_));
  EXPECT_TRUE(At(Duration(0)).empty());  // first seen: its clock starts
  EXPECT_TRUE(At(minutes(7)).empty());
  auto warned = At(minutes(8) + seconds(1));
  ASSERT_EQ(warned.size(), 1u);
  EXPECT_EQ(warned[0].kind, Kind::kWarn);
  EXPECT_EQ(warned[0].job, &session_);
  EXPECT_EQ(warned[0].idle_for, minutes(8) + seconds(1));
  EXPECT_EQ(warned[0].left, minutes(1) + seconds(59));
  EXPECT_TRUE(At(minutes(9)).empty());  // once
  auto stopped = At(minutes(10));
  ASSERT_EQ(stopped.size(), 1u);
  EXPECT_EQ(stopped[0].kind, Kind::kStop);
  EXPECT_EQ(stopped[0].pool, policy_.Pool("dev"));
  EXPECT_EQ(idle_.size(), 0u);  // forgotten once stopped
}

TEST_F(IdleSessionsTest, AnAttachedClientOrBusyGpusStartTheClockAgain) {
  EXPECT_TRUE(At(Duration(0)).empty());
  nodes_.Find("n1")->attached = {session_.id};
  EXPECT_TRUE(At(minutes(9)).empty());
  nodes_.Find("n1")->attached.clear();
  Utilization(4);  // below the pool's 5 %: idle from here
  EXPECT_TRUE(At(minutes(12)).empty());
  Utilization(50);
  EXPECT_TRUE(At(minutes(19)).empty());  // busy at 19: its clock starts again
  Utilization(0);
  EXPECT_TRUE(At(minutes(26)).empty());
  auto warned = At(minutes(27));  // 2 minutes before 19 + 10
  ASSERT_EQ(warned.size(), 1u);
  EXPECT_EQ(warned[0].kind, Kind::kWarn);
}

TEST_F(IdleSessionsTest, SessionsBeingStoppedOrOfOtherPoolsAreLeftAloneAndEndedOnesForgotten) {
  EXPECT_TRUE(At(Duration(0)).empty());
  session_.stop_requested = true;
  EXPECT_TRUE(At(minutes(30)).empty());
  session_.stop_requested = false;
  session_.spec.pool = "batch";  // no policy: not reclaimed
  EXPECT_TRUE(At(minutes(40)).empty());
  EXPECT_EQ(idle_.size(), 1u);
  EXPECT_TRUE(idle_.Review(policy_, {}, nodes_, start_ + minutes(41)).empty());
  EXPECT_EQ(idle_.size(), 0u);  // it no longer runs
  policy_.pools["dev"].idle_timeout = Duration(0);
  EXPECT_FALSE(IdleSessions::AnyPoolReclaims(policy_));
}

}  // namespace
}  // namespace baton::control
