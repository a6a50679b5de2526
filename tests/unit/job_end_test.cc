// How a job's end is told (agent/job_end.h): the shim's status with what the node knows, made
// the event the controller gets, its message the most telling cause.
#include "agent/job_end.h"

#include <gtest/gtest.h>

namespace baton::agent {
namespace {

const TimePoint kNow = FromMillis(1'800'000'000'000);

LaunchOrder Order() {
  LaunchOrder o;
  o.job = JobId{9};
  o.attempt = 2;
  return o;
}

TEST(JobEnd, AnExitOrASignalIsToldAsTheShimWroteIt) {
  JobEvent e = EndEvent(Order(), EndFacts{.status = ExitStatus{.exit_code = 3}}, "n1", kNow);
  EXPECT_EQ(e.kind, JobEvent::Kind::kExited);
  EXPECT_EQ(e.job, JobId{9});
  EXPECT_EQ(e.attempt, 2);
  EXPECT_EQ(e.at, kNow);
  EXPECT_EQ(e.exit_code, 3);
  EXPECT_FALSE(e.lost);
  EXPECT_TRUE(e.message.empty());
  e = EndEvent(Order(), EndFacts{.status = ExitStatus{.signal = 9}, .timed_out = true}, "n1", kNow);
  EXPECT_EQ(e.signal, 9);
  EXPECT_TRUE(e.timed_out);
}

TEST(JobEnd, AShimThatDiedWithoutAWordLosesTheJobAndAFenceSaysItStoppedIt) {
  JobEvent gone = EndEvent(Order(), EndFacts{}, "n1", kNow);
  EXPECT_TRUE(gone.lost);
  EXPECT_FALSE(gone.launch_failed);
  JobEvent fenced = EndEvent(
      Order(), EndFacts{.status = ExitStatus{.signal = 15, .fenced = true}, .fence_ms = 60'000},
      "n1", kNow);
  EXPECT_TRUE(fenced.lost);  // not failed: a controller may have run it elsewhere
  EXPECT_EQ(fenced.message, "stopped on node n1, which reached no controller for 1m (its fence)");
}

TEST(JobEnd, ALaunchThatFailedSaysTheShimsWordsAndAnOutOfMemoryKillSaysSoAboveAll) {
  JobEvent unstarted =
      EndEvent(Order(),
               EndFacts{.status = ExitStatus{.exit_code = 127, .unstarted = true},
                        .shims_words = "cannot run train.py: No such file or directory"},
               "n1", kNow);
  EXPECT_TRUE(unstarted.launch_failed);
  EXPECT_EQ(unstarted.message, "cannot run train.py: No such file or directory");
  LaunchOrder limited = Order();
  limited.memory_bytes = 2LL << 30;
  JobEvent oom = EndEvent(limited, EndFacts{.status = ExitStatus{.signal = 9}, .oom_killed = true},
                          "n1", kNow);
  EXPECT_EQ(oom.message, "killed by the out-of-memory killer at its memory limit of 2GiB");
  EXPECT_EQ(OomWords(0), "killed by the out-of-memory killer");
}

}  // namespace
}  // namespace baton::agent
