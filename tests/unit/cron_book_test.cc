// The controller's CronBook: recurring jobs' series, made again from the jobs at a restore, and
// the runs whose next is owed.
#include "control/cron_book.h"

#include <gtest/gtest.h>

namespace baton::control {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

const TimePoint kNow = FromMillis(1'790'000'000'000);

Job RunOf(int64_t id, int64_t series, JobState state, bool stopped = false) {
  Job job;
  job.id = JobId{id};
  job.cron_id = JobId{series};
  job.state = state;
  job.cron_stopped = stopped;
  job.spec.schedule = "*/5 * * * *";
  return job;
}

TEST(CronBook, TheNextRunIsTheNextTimeTheScheduleNamesAndABeginDelaysTheFirst) {
  JobSpec spec;
  spec.schedule = "*/5 * * * *";
  std::optional<TimePoint> next = CronBook::NextRunTime(spec, kNow);
  ASSERT_TRUE(next.has_value());
  EXPECT_GT(*next, kNow);
  EXPECT_LE(*next, kNow + minutes(5));
  spec.begin = kNow + hours(2);
  next = CronBook::NextRunTime(spec, kNow);
  ASSERT_TRUE(next.has_value());
  EXPECT_GE(*next, kNow + hours(2));
  EXPECT_LT(*next, kNow + hours(2) + minutes(5));
  spec.schedule = "every tuesday";
  EXPECT_FALSE(CronBook::NextRunTime(spec, kNow).has_value());
}

TEST(CronBook, ARestoreCountsEachSeriesRunsAndOwesTheNextOfOneThatEnded) {
  std::map<JobId, Job> jobs;
  for (Job j :
       {RunOf(1, 1, JobState::kSucceeded), RunOf(3, 1, JobState::kRunning),
        RunOf(5, 5, JobState::kFailed, /*stopped=*/true), RunOf(7, 7, JobState::kSucceeded)})
    jobs[j.id] = j;
  CronBook book;
  book.Restore(jobs);
  ASSERT_EQ(book.all().size(), 2u);  // 5 was deleted
  const CronBook::Series* first = book.Find(JobId{1});
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->runs, 2);
  EXPECT_EQ(first->current, JobId{3});
  EXPECT_EQ(first->last, JobId{1});
  EXPECT_TRUE(book.Owed());
  EXPECT_EQ(book.TakeDue(), std::vector<JobId>{JobId{7}});  // ended before the stop
  EXPECT_FALSE(book.Owed());
}

TEST(CronBook, AFirstRunStartsItsSeriesAndEndedRunsAreOwedOnce) {
  CronBook book;
  Job job = RunOf(9, 0, JobState::kPending);
  book.Start(job, kNow);
  EXPECT_EQ(job.cron_id, JobId{9});
  ASSERT_TRUE(job.spec.begin.has_value());
  EXPECT_GT(*job.spec.begin, kNow);
  ASSERT_NE(book.Find(JobId{9}), nullptr);
  EXPECT_EQ(book.Find(JobId{9})->runs, 1);
  book.Ended(JobId{9});
  EXPECT_EQ(book.TakeDue(), std::vector<JobId>{JobId{9}});
  EXPECT_TRUE(book.TakeDue().empty());
  book.Erase(JobId{9});
  EXPECT_EQ(book.Find(JobId{9}), nullptr);
}

}  // namespace
}  // namespace baton::control
