// A running job's clock on the agent (agent/stop_clock.h), driven with `now` as the agent's
// main loop drives it: what it returns is what the agent signals.
#include "agent/stop_clock.h"

#include <gtest/gtest.h>

#include <csignal>

namespace baton::agent {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;
using Signals = StopClock::Signals;

const TimePoint kStart = FromMillis(1'790'000'000'000);

LaunchOrder Order(Duration limit, Duration grace = seconds(30)) {
  LaunchOrder o;
  o.time_limit = limit;
  o.grace_period = grace;
  return o;
}

TEST(StopClock, ATimeLimitIsSigtermThenSigkillAfterTheGrace) {
  StopClock clock;
  LaunchOrder o = Order(minutes(10));
  EXPECT_EQ(clock.Tick(o, kStart, kStart + minutes(9)), Signals{});
  EXPECT_FALSE(clock.stopping());
  EXPECT_EQ(clock.Tick(o, kStart, kStart + minutes(10)), Signals{SIGTERM});
  EXPECT_TRUE(clock.stopping());
  EXPECT_TRUE(clock.timed_out());
  EXPECT_EQ(clock.Tick(o, kStart, kStart + minutes(10) + seconds(29)), Signals{});
  EXPECT_EQ(clock.Tick(o, kStart, kStart + minutes(10) + seconds(30)), Signals{SIGKILL});
  EXPECT_EQ(clock.Tick(o, kStart, kStart + minutes(20)), Signals{});  // once
}

TEST(StopClock, WithoutATimeLimitTimeAloneNeverStopsIt) {
  StopClock clock;
  LaunchOrder o = Order(Duration(0));
  o.signal = SIGUSR1;
  o.signal_before = minutes(5);
  EXPECT_EQ(clock.Tick(o, kStart, kStart + std::chrono::hours(24 * 365)), Signals{});
  EXPECT_FALSE(clock.stopping());
}

TEST(StopClock, TheNoticeComesOnceThatLongBeforeTheLimit) {
  StopClock clock;
  LaunchOrder o = Order(minutes(10));
  o.signal = SIGUSR1;
  o.signal_before = minutes(2);
  EXPECT_EQ(clock.Tick(o, kStart, kStart + minutes(7)), Signals{});
  EXPECT_EQ(clock.Tick(o, kStart, kStart + minutes(8)), Signals{SIGUSR1});
  EXPECT_EQ(clock.Tick(o, kStart, kStart + minutes(9)), Signals{});
  // A later limit earns the notice again; an earlier one, past its notice time, does not.
  o.time_limit = minutes(20);
  clock.LimitChanged(o, kStart, kStart + minutes(9));
  EXPECT_EQ(clock.Tick(o, kStart, kStart + minutes(18)), Signals{SIGUSR1});
  EXPECT_EQ(clock.Tick(o, kStart, kStart + minutes(20)), Signals{SIGTERM});
  EXPECT_TRUE(clock.timed_out());
}

TEST(StopClock, AStopOrderUsesItsGraceAndAStopUnderWayGoesOnUnlessItAsksForLess) {
  StopClock clock;
  LaunchOrder o = Order(minutes(10));
  EXPECT_EQ(clock.Stop(o, seconds(5), kStart + minutes(1)), Signals{SIGTERM});
  EXPECT_FALSE(clock.timed_out());  // cancelled, not timed out
  // A second stop with a longer grace changes nothing: the first one's SIGKILL comes on time.
  EXPECT_EQ(clock.Stop(o, seconds(60), kStart + minutes(1) + seconds(1)), Signals{});
  // Nor does the time limit, reached meanwhile.
  EXPECT_EQ(clock.Tick(o, kStart, kStart + minutes(1) + seconds(4)), Signals{});
  EXPECT_EQ(clock.Tick(o, kStart, kStart + minutes(1) + seconds(5)), Signals{SIGKILL});

  StopClock now;
  EXPECT_EQ(now.Stop(o, seconds(30), kStart), Signals{SIGTERM});
  EXPECT_EQ(now.Stop(o, Duration(0), kStart + seconds(1)), Signals{SIGKILL});  // kill now
}

TEST(StopClock, AStopThatGivesLessTimeBringsTheKillForwardAndSaysWhen) {
  // A job being preempted with 30 s when its spot node's reclaim notice leaves 10 s: SIGKILL
  // comes at the notice's deadline, not the preemption's, and kill_at says so (the time the
  // agent writes to $BATON_PREEMPT_DEADLINE).
  StopClock clock;
  LaunchOrder o = Order(minutes(10));
  EXPECT_EQ(clock.Stop(o, seconds(30), kStart), Signals{SIGTERM});
  EXPECT_EQ(clock.kill_at(), kStart + seconds(30));
  EXPECT_FALSE(clock.TakeKillMoved());
  EXPECT_EQ(clock.Stop(o, seconds(10), kStart + seconds(2)), Signals{});
  EXPECT_EQ(clock.kill_at(), kStart + seconds(12));
  EXPECT_TRUE(clock.TakeKillMoved());  // the deadline file is written again
  EXPECT_FALSE(clock.TakeKillMoved());
  EXPECT_EQ(clock.Stop(o, seconds(60), kStart + seconds(3)), Signals{});  // later: no change
  EXPECT_FALSE(clock.TakeKillMoved());
  EXPECT_EQ(clock.Tick(o, kStart, kStart + seconds(11)), Signals{});
  EXPECT_EQ(clock.Tick(o, kStart, kStart + seconds(12)), Signals{SIGKILL});
  // Once killed, a stop with a grace sends nothing more.
  EXPECT_EQ(clock.Stop(o, seconds(5), kStart + seconds(13)), Signals{});
}

TEST(StopClock, ATerminalsJobIsHungUpFirstAndNoGraceKillsAtOnce) {
  StopClock tty;
  LaunchOrder o = Order(minutes(10));
  o.interactive = Interactive::kTty;
  EXPECT_EQ(tty.Stop(o, seconds(10), kStart), (Signals{SIGHUP, SIGTERM}));

  StopClock at_once;
  LaunchOrder no_grace = Order(minutes(10), Duration(0));
  EXPECT_EQ(at_once.Tick(no_grace, kStart, kStart + minutes(10)), Signals{SIGKILL});
  EXPECT_TRUE(at_once.timed_out());
  EXPECT_EQ(at_once.Tick(no_grace, kStart, kStart + minutes(11)), Signals{});
}

}  // namespace
}  // namespace baton::agent
