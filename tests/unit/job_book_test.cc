// The agent's jobs and what orders, time and ends decide for them (agent/job_book.h), driven as
// the agent's main loop drives them: an order, a tick, an end or a run file in, effects out. The
// agent's own tests cover carrying them out (processes, signals, run files).
#include "agent/job_book.h"

#include <gtest/gtest.h>

#include <csignal>

namespace baton::agent {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;
using Signals = std::vector<std::pair<JobAttempt, int>>;

const TimePoint kStart = FromMillis(1'790'000'000'000);
const JobAttempt kJob{JobId{12}, 1};

Order Launch(Duration limit, std::vector<int> gpus = {0}) {
  Order o;
  o.kind = Order::Kind::kLaunch;
  o.launch.job = kJob.job;
  o.launch.attempt = kJob.attempt;
  o.launch.time_limit = limit;
  o.launch.grace_period = seconds(30);
  o.launch.gpus = std::move(gpus);
  return o;
}

Order Stop(JobAttempt key, Duration grace) {
  Order o;
  o.kind = Order::Kind::kStop;
  o.stop = StopOrder{.job = key.job, .attempt = key.attempt, .grace_period = grace};
  return o;
}

// The job of `order` started at kStart, as the agent records a launch it carried out.
RunningJob& Started(JobBook& book, const Order& order) {
  RunningJob& job = book[JobAttempt{order.launch.job, order.launch.attempt}];
  job.order = order.launch;
  job.started_at = kStart;
  return job;
}

TEST(JobBook, ALaunchIsStartedOnceAndAgainOnlySaysANewTimeLimit) {
  JobBook book;
  JobBook::Effects fx = book.Take(Launch(minutes(10)), kStart);
  ASSERT_EQ(fx.launches.size(), 1u);
  EXPECT_EQ(fx.launches[0].job, kJob.job);
  EXPECT_TRUE(fx.signals.empty());
  Started(book, Launch(minutes(10)));

  // The same launch again (a controller that re-sent it): nothing.
  fx = book.Take(Launch(minutes(10)), kStart + minutes(1));
  EXPECT_TRUE(fx.launches.empty());
  EXPECT_TRUE(fx.relimited.empty());
  // With a longer time limit (`baton update --time`): recorded, and the clock follows it.
  fx = book.Take(Launch(minutes(30)), kStart + minutes(2));
  EXPECT_TRUE(fx.launches.empty());
  EXPECT_EQ(fx.relimited, std::vector<JobAttempt>{kJob});
  EXPECT_TRUE(book.Tick(kStart + minutes(10)).signals.empty());  // the old limit is gone
  EXPECT_EQ(book.Tick(kStart + minutes(30)).signals, (Signals{{kJob, SIGTERM}}));
}

TEST(JobBook, AStopIsItsClocksSignalsAndAnEndedOrUnknownJobGetsNone) {
  JobBook book;
  Started(book, Launch(Duration(0)));
  EXPECT_TRUE(book.Take(Stop(JobAttempt{JobId{99}, 0}, seconds(30)), kStart).signals.empty());
  EXPECT_TRUE(book.Take(Stop(JobAttempt{kJob.job, 0}, seconds(30)), kStart).signals.empty());
  EXPECT_EQ(book.Take(Stop(kJob, seconds(30)), kStart + minutes(1)).signals,
            (Signals{{kJob, SIGTERM}}));
  EXPECT_TRUE(book.Tick(kStart + minutes(1) + seconds(29)).signals.empty());
  EXPECT_EQ(book.Tick(kStart + minutes(1) + seconds(30)).signals, (Signals{{kJob, SIGKILL}}));
  book[kJob].exited = true;
  EXPECT_TRUE(book.Take(Stop(kJob, Duration(0)), kStart + minutes(2)).signals.empty());
  EXPECT_TRUE(book.Tick(kStart + minutes(3)).signals.empty());
}

TEST(JobBook, AStopThatBringsTheKillForwardSaysItsDeadlineFileIsToBeWrittenAgain) {
  JobBook book;
  Started(book, Launch(Duration(0)));
  JobBook::Effects first = book.Take(Stop(kJob, seconds(30)), kStart);
  EXPECT_EQ(first.signals, (Signals{{kJob, SIGTERM}}));
  EXPECT_TRUE(first.deadlines.empty());  // its SIGTERM's: the agent writes it with the signal
  // A reclaim notice leaves 10 s: no signal now, SIGKILL sooner, the file written again.
  JobBook::Effects sooner = book.Take(Stop(kJob, seconds(10)), kStart + seconds(1));
  EXPECT_TRUE(sooner.signals.empty());
  EXPECT_EQ(sooner.deadlines, std::vector<JobAttempt>{kJob});
  EXPECT_EQ(book[kJob].stop.kill_at(), kStart + seconds(11));
  EXPECT_TRUE(book.Take(Stop(kJob, seconds(60)), kStart + seconds(2)).deadlines.empty());
}

TEST(JobBook, ItIsBusyWhileAJobRunsOrASignalWaitsAndHoldsTheGpusOfRunningBatchJobs) {
  JobBook book;
  EXPECT_FALSE(book.Busy());
  Started(book, Launch(Duration(0), {1, 3}));
  Order session = Launch(Duration(0), {2});
  session.launch.job = JobId{13};
  session.launch.interactive = Interactive::kTty;
  Started(book, session);
  EXPECT_TRUE(book.Busy());
  EXPECT_EQ(book.HeldGpus(4), (std::vector<bool>{false, true, false, true}));  // not the session's
  book[kJob].exited = true;
  book[JobAttempt{JobId{13}, 1}].exited = true;
  EXPECT_FALSE(book.Busy());
  EXPECT_EQ(book.HeldGpus(4), std::vector<bool>(4, false));
  book[kJob].unsent.push_back(SIGKILL);  // a kill that waits for the shim's pid
  EXPECT_TRUE(book.Busy());
}

TEST(JobBook, SignalsWaitForThePidInOrderAndAreDroppedWhenTheJobNeverRan) {
  RunningJob job;
  job.unsent = {SIGTERM, SIGKILL};
  // No pid yet, the shim alive: they wait.
  EXPECT_TRUE(TakeDueSignals(job, /*pid_known=*/false, /*shim_alive=*/true).empty());
  EXPECT_EQ(job.unsent, (std::vector<int>{SIGTERM, SIGKILL}));
  // The pid known: all, in order, and none waits any more.
  EXPECT_EQ(TakeDueSignals(job, true, true), (std::vector<int>{SIGTERM, SIGKILL}));
  EXPECT_TRUE(job.unsent.empty());
  // The shim ended without a pid: the job never ran, nothing to signal.
  job.unsent = {SIGKILL};
  EXPECT_TRUE(TakeDueSignals(job, false, false).empty());
  EXPECT_TRUE(job.unsent.empty());
}

TEST(JobBook, AJobIsForgottenOnceItsEndAndOutputAreTheControllersAndNoKillWaits) {
  JobBook book;
  auto add = [&](int64_t id, bool acked, std::vector<int> unsent) {
    RunningJob& job = book[JobAttempt{JobId{id}, 0}];
    job.order.job = JobId{id};
    job.exited = true;
    job.exit_acked = acked;
    job.unsent = std::move(unsent);
  };
  add(1, true, {});         // done
  add(2, false, {});        // its end not acknowledged yet
  add(3, true, {SIGKILL});  // a kill waits for its pid
  add(4, true, {});         // its output not all shipped
  std::vector<RunningJob> done =
      book.TakeDone([](const RunningJob& j) { return j.order.job != JobId{4}; });
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].order.job, JobId{1});
  EXPECT_EQ(book.size(), 3u);
  EXPECT_EQ(book.find(JobAttempt{JobId{1}, 0}), book.end());
}

TEST(JobBook, AnAcknowledgedReportAndARegistrationSayWhatTheControllerHas) {
  JobBook book;
  Started(book, Launch(Duration(0)));
  const JobAttempt other{JobId{30}, 0};
  book.Acknowledged({{kJob, LogShipment{.bytes = 100, .head = true}},
                     {other, LogShipment{.bytes = 5}}},  // not here (any more): nothing made
                    {{kJob, 40}}, {});
  EXPECT_EQ(book.size(), 1u);
  EXPECT_EQ(book[kJob].log_shipped, 100);
  EXPECT_EQ(book[kJob].metrics_shipped, 40);
  book.Acknowledged({{kJob, LogShipment{.bytes = 7, .head = false}}}, {}, {kJob});
  EXPECT_EQ(book[kJob].tail_sent, 7);  // the tail past an output limit
  EXPECT_EQ(book[kJob].log_shipped, 100);
  EXPECT_TRUE(book[kJob].exit_acked);
  book.Acknowledged({{kJob, LogShipment{.bytes = 9, .unreadable = true}}}, {}, {});
  EXPECT_EQ(book[kJob].log_shipped, 100);  // a log that cannot be read was not shipped

  book[kJob].exit_acked = false;
  book[kJob].exited = true;
  book.Registered(/*new_leader=*/false);
  EXPECT_TRUE(book[kJob].start_reported);
  EXPECT_TRUE(book[kJob].exit_acked);  // the registration carried its end
  EXPECT_EQ(book[kJob].log_shipped, 100);
  book.Registered(/*new_leader=*/true);  // has only what reached the store
  EXPECT_EQ(book[kJob].log_shipped, 0);
  EXPECT_EQ(book[kJob].metrics_shipped, 0);
}

TEST(JobBook, AnEndIsKeptWithItsStatusAndBecomesTheExitedEvent) {
  JobBook book;
  Started(book, Launch(minutes(10)));
  EXPECT_TRUE(book.Busy());
  JobEvent e =
      book.Exited(kJob, EndFacts{.status = ExitStatus{.exit_code = 3}}, "n1", kStart + seconds(5));
  EXPECT_EQ(e.kind, JobEvent::Kind::kExited);
  EXPECT_EQ(e.job, kJob.job);
  EXPECT_EQ(e.attempt, kJob.attempt);
  EXPECT_EQ(e.exit_code, 3);
  EXPECT_EQ(e.at, kStart + seconds(5));
  EXPECT_FALSE(e.lost);
  const RunningJob& job = book.find(kJob)->second;
  EXPECT_TRUE(job.exited);
  EXPECT_EQ(job.status.exit_code, 3);
  EXPECT_FALSE(book.Busy());
  // Ended: a stop or a tick sends it nothing.
  EXPECT_TRUE(book.Take(Stop(kJob, seconds(1)), kStart + seconds(6)).signals.empty());
  EXPECT_TRUE(book.Tick(kStart + minutes(20)).signals.empty());
}

TEST(JobBook, AShimThatDiedWithoutAWordLosesItsJobAndAFenceSaysWhy) {
  JobBook book;
  Started(book, Launch(minutes(10)));
  JobEvent lost = book.Exited(kJob, EndFacts{}, "n1", kStart);
  EXPECT_TRUE(lost.lost);
  EXPECT_TRUE(book.find(kJob)->second.lost);
  const JobAttempt other{JobId{13}, 0};
  Order second = Launch(minutes(10));
  second.launch.job = other.job;
  second.launch.attempt = other.attempt;
  Started(book, second);
  JobEvent fenced = book.Exited(
      other, EndFacts{.status = ExitStatus{.signal = SIGTERM, .fenced = true}, .fence_ms = 30000},
      "n1", kStart);
  EXPECT_TRUE(fenced.lost);  // not the job's failure: it goes back to the queue
  EXPECT_EQ(fenced.message, "stopped on node n1, which reached no controller for 30s (its fence)");
  // One that never started says the shim's words, and is a failed launch.
  const JobAttempt third{JobId{14}, 0};
  Order unstarted = Launch(minutes(10));
  unstarted.launch.job = third.job;
  unstarted.launch.attempt = third.attempt;
  Started(book, unstarted);
  JobEvent never = book.Exited(third,
                               EndFacts{.status = ExitStatus{.exit_code = 127, .unstarted = true},
                                        .shims_words = "baton: cannot execute \"trian.py\""},
                               "n1", kStart);
  EXPECT_TRUE(never.launch_failed);
  EXPECT_TRUE(book.find(third)->second.launch_failed);
  EXPECT_EQ(never.message, "baton: cannot execute \"trian.py\"");
}

TEST(JobBook, ALaunchThatFailedIsKeptEndedAndSaidAsAStartAndAnExitThatFailed) {
  JobBook book;
  RunningJob job;
  job.order = Launch(minutes(10)).launch;
  job.started_at = kStart;
  std::vector<JobEvent> events = book.LaunchFailed(std::move(job), 126, "no space left on device");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, JobEvent::Kind::kStarted);
  EXPECT_TRUE(events[0].launch_failed);
  EXPECT_EQ(events[0].at, kStart);
  EXPECT_EQ(events[1].kind, JobEvent::Kind::kExited);
  EXPECT_TRUE(events[1].launch_failed);
  EXPECT_EQ(events[1].exit_code, 126);
  EXPECT_EQ(events[1].message, "no space left on device");
  ASSERT_NE(book.find(kJob), book.end());
  EXPECT_TRUE(book.find(kJob)->second.exited);
  EXPECT_FALSE(book.Busy());
  EXPECT_TRUE(book.HeldGpus(2) == std::vector<bool>({false, false}));
}

TEST(JobBook, AnAdoptedJobIsWatchedThroughItsStatusFileAndShipsItsLogAgain) {
  JobBook book;
  RunningJob& stale = Started(book, Launch(minutes(10)));
  stale.log_shipped = 4096;  // what this agent had before it restarted: gone with it
  RunRecord record{.order = Launch(minutes(10)).launch,
                   .process = {.shim_pid = 4242, .job_pid = 4243},
                   .started_at = kStart - minutes(1)};
  RunningJob& job = book.Adopt(record);
  EXPECT_TRUE(job.adopted);
  EXPECT_TRUE(job.start_reported);  // the registration tells the controller
  EXPECT_EQ(job.log_shipped, 0);
  EXPECT_EQ(job.metrics_shipped, 0);
  EXPECT_EQ(job.process.shim_pid, 4242);
  EXPECT_EQ(job.started_at, kStart - minutes(1));
  EXPECT_EQ(book.size(), 1u);
  // Its clock runs from its own start: the limit passes 9 minutes after the restart.
  EXPECT_TRUE(book.Tick(kStart + minutes(8)).signals.empty());
  EXPECT_EQ(book.Tick(kStart + minutes(9)).signals, (Signals{{kJob, SIGTERM}}));
}

}  // namespace
}  // namespace baton::agent
