// What the agent owes the controller (agent/report_outbox.h): events in order, a job's end held
// until its output is all in a report, notices and the health change, forgotten only once a
// report that carried them is acknowledged.
#include "agent/report_outbox.h"

#include <gtest/gtest.h>

namespace baton::agent {
namespace {

JobEvent Event(int64_t job, JobEvent::Kind kind) {
  return JobEvent{.job = JobId{job}, .attempt = 0, .kind = kind};
}

std::vector<std::pair<int64_t, JobEvent::Kind>> Kinds(const std::vector<JobEvent>& events) {
  std::vector<std::pair<int64_t, JobEvent::Kind>> out;
  for (const JobEvent& e : events) out.emplace_back(e.job.value, e.kind);
  return out;
}

using Kind = JobEvent::Kind;

TEST(ReportOutbox, AJobsEndAndWhatFollowsItWaitForItsOutputOtherJobsDoNot) {
  ReportOutbox outbox;
  outbox.Add(Event(1, Kind::kStarted));
  outbox.Add(Event(1, Kind::kExited));
  outbox.Add(Event(2, Kind::kStarted));
  outbox.Add(Event(1, Kind::kMetric));  // after job 1's end: waits with it
  outbox.Add(Event(2, Kind::kExited));
  const JobAttempt one{JobId{1}, 0};
  ReportOutbox::Draft draft = outbox.Compose([&](const JobAttempt& j) { return j == one; });
  std::vector<std::pair<int64_t, Kind>> want = {
      {1, Kind::kStarted}, {2, Kind::kStarted}, {2, Kind::kExited}};
  EXPECT_EQ(Kinds(draft.events), want);
  EXPECT_EQ(draft.ends, (std::set<JobAttempt>{JobAttempt{JobId{2}, 0}}));
  outbox.Acknowledged(draft);
  ASSERT_EQ(outbox.events(), 2u);
  // Its output is all in the next report: the end goes, then what followed it.
  draft = outbox.Compose([](const JobAttempt&) { return false; });
  want = {{1, Kind::kExited}, {1, Kind::kMetric}};
  EXPECT_EQ(Kinds(draft.events), want);
  outbox.Acknowledged(draft);
  EXPECT_EQ(outbox.events(), 0u);
}

TEST(ReportOutbox, WhatArrivesWhileAReportIsOutIsOwedStill) {
  ReportOutbox outbox;
  outbox.Add(Event(1, Kind::kStarted));
  outbox.Notice(GpuNotice{.gpu = 0, .xid = 31});
  outbox.HealthChanged(true);
  EXPECT_TRUE(outbox.health_news());
  ReportOutbox::Draft draft = outbox.Compose([](const JobAttempt&) { return false; });
  EXPECT_TRUE(draft.health);
  ASSERT_EQ(draft.notices.size(), 1u);
  outbox.Add(Event(1, Kind::kExited));
  outbox.Notice(GpuNotice{.gpu = 1, .xid = 79});
  outbox.Acknowledged(draft);
  EXPECT_EQ(outbox.events(), 1u);  // the end, added after the draft
  draft = outbox.Compose([](const JobAttempt&) { return false; });
  ASSERT_EQ(draft.notices.size(), 1u);
  EXPECT_EQ(draft.notices[0].xid, 79);
  EXPECT_FALSE(draft.health);  // acknowledged
}

TEST(ReportOutbox, AFailedReportKeepsEverythingAndARegistrationClearsTheEventsAndHealth) {
  ReportOutbox outbox;
  outbox.Add(Event(1, Kind::kStarted));
  outbox.HealthChanged(true);
  outbox.Notice(GpuNotice{.gpu = 0, .xid = 48});
  (void)outbox.Compose([](const JobAttempt&) { return false; });  // never acknowledged
  EXPECT_EQ(outbox.events(), 1u);
  EXPECT_TRUE(outbox.Compose([](const JobAttempt&) { return false; }).health);
  outbox.Registered();
  EXPECT_EQ(outbox.events(), 0u);
  ReportOutbox::Draft draft = outbox.Compose([](const JobAttempt&) { return false; });
  EXPECT_FALSE(draft.health);
  EXPECT_EQ(draft.notices.size(), 1u);  // notices are not in a registration
}

// A registration that told a job as running because the controller lacked some of its output
// keeps that job's end owed: the next report tells it with the last of the output.
TEST(ReportOutbox, ARegistrationKeepsTheEndsItHeldBack) {
  ReportOutbox outbox;
  outbox.Add(Event(1, Kind::kExited));
  outbox.Add(Event(2, Kind::kExited));
  outbox.Registered({JobAttempt{JobId{2}, 0}});
  EXPECT_EQ(outbox.events(), 1u);
  ReportOutbox::Draft draft = outbox.Compose([](const JobAttempt&) { return false; });
  ASSERT_EQ(draft.events.size(), 1u);
  EXPECT_EQ(draft.events[0].job, JobId{2});
  EXPECT_EQ(draft.ends.count(JobAttempt{JobId{2}, 0}), 1u);
}

}  // namespace
}  // namespace baton::agent
