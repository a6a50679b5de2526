// The agent's jobs and what orders and time decide for them (agent/job_book.h), driven as the
// agent's main loop drives them: an order or a tick in, effects out. The agent's own tests
// cover carrying them out (processes, signals, run files).
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

}  // namespace
}  // namespace baton::agent
