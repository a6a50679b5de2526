// The steps of a scheduling pass, each on its own (sched/scheduler.cc sequences them): the
// claims that stand, the running jobs summed up, what they hold against quotas, the waits and
// their words, and the shapes that failed.
#include <gtest/gtest.h>

#include "sched/failed_shapes.h"
#include "sched/holdings.h"
#include "sched/reservations.h"
#include "sched/running_summary.h"
#include "sched/wait_book.h"
#include "sched_harness.h"

namespace baton::sched {
namespace {

using std::chrono::hours;
using std::chrono::seconds;
using testing::kPassNow;
using testing::MakeNode;
using testing::PassJobs;

TEST(RunningSummary, SaysWhenEachJobGivesItsGpusBackAndWhatAPreemptorMustOutrank) {
  ClusterView view;
  view.nodes.push_back(MakeNode("n1", 8));
  PassJobs jobs;
  Policy policy;
  policy.las_preemption = false;
  policy.preempt_grace = seconds(30);
  std::vector<RunningJob> running;
  running.push_back(jobs.Running(view, 1, "n1", 0, 2, 0, Priority::kHigh));  // no time limit
  running.push_back(jobs.Running(view, 2, "n1", 2, 1, 0, Priority::kNormal));
  running.back().expected_end = kPassNow + hours(1);
  running.push_back(jobs.Running(view, 3, "n1", 3, 4, 0, Priority::kLow));
  running.back().stopping = true;  // stopping already: gone within the grace, whatever its class

  RunningSummary s = SummarizeRunning(running, policy, kPassNow);
  // Only the releases that say when: the job without a time limit has none.
  ASSERT_EQ(s.releases.size(), 2u);
  EXPECT_EQ(s.releases[0].at, kPassNow + hours(1));
  EXPECT_EQ(s.releases[0].allocation, running[1].allocation);
  EXPECT_EQ(s.releases[1].at, kPassNow + seconds(30));
  EXPECT_EQ(s.releases[1].allocation, running[2].allocation);
  EXPECT_EQ(s.stopping, (std::vector<uint8_t>{0, 0, 1}));
  EXPECT_EQ(s.lowest_class, static_cast<int>(Priority::kNormal));  // not the stopping one
  EXPECT_EQ(s.timed_milli, 5000);
  EXPECT_TRUE(s.Levels(running, policy).empty());  // no LAS preemption: no levels

  // A job stopped for a preemptor gets a release once, at the earlier of two times; one with a
  // release already keeps it, brought forward; a start adds one only with a time limit.
  s.BringForward(running[0], kPassNow + seconds(10));
  s.BringForward(running[0], kPassNow + seconds(20));  // later: stays at the earlier
  ASSERT_EQ(s.releases.size(), 3u);
  EXPECT_EQ(s.releases[2].at, kPassNow + seconds(10));
  EXPECT_EQ(s.releases[2].allocation, running[0].allocation);
  EXPECT_EQ(s.timed_milli, 7000);
  s.BringForward(running[1], kPassNow + seconds(40));
  EXPECT_EQ(s.releases[0].at, kPassNow + seconds(40));
  EXPECT_EQ(s.releases.size(), 3u);
  EXPECT_EQ(s.timed_milli, 7000);
  Resources one{.milli_gpus = 1000};
  s.Add(Release{kNever, nullptr, &one});
  EXPECT_EQ(s.releases.size(), 3u);
  s.Add(Release{kPassNow + hours(2), nullptr, &one});
  EXPECT_EQ(s.releases.size(), 4u);
  EXPECT_EQ(s.timed_milli, 8000);

  EXPECT_EQ(SummarizeRunning({}, policy, kPassNow).lowest_class,
            static_cast<int>(Priority::kCritical) + 1);
}

TEST(RunningSummary, WithLasPreemptionGivesEachJobItsLevel) {
  ClusterView view;
  view.nodes.push_back(MakeNode("n1", 8));
  PassJobs jobs;
  Policy policy;
  policy.las_preemption = true;
  policy.las_thresholds = {3600, 36000};
  std::vector<RunningJob> running = {jobs.Running(view, 1, "n1", 0, 1, 100),
                                     jobs.Running(view, 2, "n1", 1, 1, 50000)};
  RunningSummary s = SummarizeRunning(running, policy, kPassNow);
  EXPECT_TRUE(s.levels.empty());  // made only for a victim search
  EXPECT_EQ(s.Levels(running, policy), (std::vector<int>{0, 2}));
  EXPECT_EQ(s.highest_level, 2);
  // A job whose LAS budget is spent is no victim a search could find (las_preemption_budget).
  running[1].preemptions = 1;
  s = SummarizeRunning(running, policy, kPassNow);
  EXPECT_EQ(s.Levels(running, policy), (std::vector<int>{0, 2}));
  EXPECT_EQ(s.highest_level, 0);
  // Nor is one stopping already, however long it ran.
  running.push_back(jobs.Running(view, 3, "n1", 2, 1, 40000));
  running.back().stopping = true;
  s = SummarizeRunning(running, policy, kPassNow);
  EXPECT_EQ(s.Levels(running, policy), (std::vector<int>{0, 2, 2}));
  EXPECT_EQ(s.highest_level, 0);
  running[1].preemptions = 0;
  running.push_back(jobs.Running(view, 4, "n1", 3, 1, 4000));
  s = SummarizeRunning(running, policy, kPassNow);
  EXPECT_EQ(s.highest_level, 2);
}

TEST(StandingClaims, KeepsTheFreshClaimsOfJobsStillWaitingAndMarksThemInTheView) {
  PassJobs jobs;
  PassInput in;
  in.view.nodes.push_back(MakeNode("n1", 4));
  in.now = kPassNow;
  in.pending = {jobs.Pending(1, 2000, 0), jobs.Pending(2, 1000, 0)};
  auto claim = [&](int64_t id, TimePoint from, bool is_claim = true) {
    return Reservation{.id = JobId{id},
                       .from = from,
                       .allocation = {NodeAllocation{.node = "n1", .gpus = {0, 1}}},
                       .resources = Resources{.milli_gpus = 2000},
                       .claim = is_claim};
  };
  in.claims = {claim(1, kPassNow - seconds(10)),
               claim(2, kPassNow - kClaimSlack - seconds(1)),  // its victims never stopped
               claim(3, kPassNow),                             // job 3 no longer waits
               claim(1, kPassNow, /*is_claim=*/false)};        // a plain reservation
  auto standing = StandingClaims(in);
  ASSERT_EQ(standing.size(), 1u);
  ASSERT_TRUE(standing.count(1));
  EXPECT_EQ(standing.at(1), &in.claims[0]);
  EXPECT_EQ(in.view.nodes[0].gpus[0].reserved_from, kPassNow - seconds(10));
  EXPECT_EQ(in.view.nodes[0].gpus[2].reserved_from, kNever);

  in.full = false;  // a pass of arrivals keeps the last full pass's reservations as they are
  EXPECT_TRUE(StandingClaims(in).empty());
}

TEST(Holdings, AddRunningSumsByAccountAndPoolAsOneJobAtATimeWould) {
  ClusterView view;
  view.nodes.push_back(MakeNode("n1", 8));
  PassJobs jobs;
  Policy policy;
  policy.default_user.max_milli = 8000;  // users are tracked
  std::string other_pool = "big";
  std::vector<RunningJob> running = {jobs.Running(view, 1, "n1", 0, 2, 0),
                                     jobs.Running(view, 2, "n1", 2, 1, 0),
                                     jobs.Running(view, 3, "n1", 3, 1, 0)};
  for (RunningJob& r : running) r.account = 0;
  running[2].pool = &other_pool;  // same account, another pool: counted on its own
  Holdings summed(policy), one_by_one(policy);
  AddRunning(summed, running);
  for (const RunningJob& r : running)
    one_by_one.Add(*r.project, *r.user, *r.pool, r.resources->milli_gpus, +1);
  EXPECT_EQ(summed.Project("p"), 4000);
  EXPECT_EQ(summed.project_milli, one_by_one.project_milli);
  EXPECT_EQ(summed.user_milli, one_by_one.user_milli);
  EXPECT_EQ(summed.user_jobs, one_by_one.user_jobs);
  EXPECT_EQ(summed.user_jobs.at("u"), 3);
}

TEST(Holdings, AnyGuaranteeCountsTheDefaultProjects) {
  Policy policy;
  EXPECT_FALSE(AnyGuarantee(policy));
  policy.projects["vision"].guaranteed_milli = 4000;
  EXPECT_TRUE(AnyGuarantee(policy));
  Policy by_default;
  by_default.default_project.guaranteed_milli = 1000;  // every project not named has it
  EXPECT_TRUE(AnyGuarantee(by_default));
}

TEST(WaitBook, CountsEveryWaitAndExplainsTheFirstOnesSharingTheirWords) {
  PassJobs jobs;
  std::vector<PendingJob> pending = {jobs.Pending(1, 1000, 0), jobs.Pending(2, 1000, 0),
                                     jobs.Pending(3, 1000, 0), jobs.Pending(4, 1000, 0)};
  PassResult result;
  // Five jobs were counted before the walk (PassInput::ahead), and they count towards the
  // seven explained: two more are.
  WaitBook waits(result, pending, /*explained=*/7, /*ahead=*/5);
  EXPECT_EQ(waits.ahead(), 5);
  EXPECT_TRUE(waits.Explaining());
  waits.Wait(pending[0], WaitReason::kQuota, "over the project's quota");
  waits.Wait(pending[1], WaitReason::kQuota, "over the project's quota");  // the same words
  EXPECT_FALSE(waits.Explaining());
  int cached = -1;
  waits.Wait(pending[2], WaitReason::kResources,
             waits.Explaining() ? waits.TextOnce(cached, [] { return "never said"; }) : 0);
  waits.Count(10);
  EXPECT_EQ(waits.ahead(), 18);
  ASSERT_EQ(result.waits.size(), 2u);
  EXPECT_EQ(result.texts, std::vector<std::string>{"over the project's quota"});
  EXPECT_EQ(result.waits[0].id, JobId{1});
  EXPECT_EQ(result.waits[0].ahead, 5);
  EXPECT_EQ(result.waits[1].ahead, 6);
  EXPECT_EQ(result.waits[1].index, 1u);
  EXPECT_EQ(result.waits[1].text, 0u);
  EXPECT_EQ(cached, -1);  // no words made for a wait past the explained ones
}

TEST(WaitBook, WordsSaidOnceAPassAreKeptOnce) {
  PassJobs jobs;
  std::vector<PendingJob> pending = {jobs.Pending(1, 1000, 0), jobs.Pending(2, 1000, 0)};
  PassResult result;
  WaitBook waits(result, pending, kExplainedWaits, 0);
  int cached = -1;
  int made = 0;
  auto words = [&] {
    ++made;
    return std::string("behind job 7");
  };
  waits.Wait(pending[0], WaitReason::kPriority, waits.TextOnce(cached, words), kPassNow + hours(1));
  waits.Wait(pending[1], WaitReason::kPriority, waits.TextOnce(cached, words));
  EXPECT_EQ(made, 1);
  ASSERT_EQ(result.waits.size(), 2u);
  EXPECT_EQ(result.waits[0].text, result.waits[1].text);
  EXPECT_EQ(result.waits[0].estimated_start, kPassNow + hours(1));
  EXPECT_EQ(result.waits[1].estimated_start, std::nullopt);
}

TEST(FailedShapes, FindsAShapeByItsRequestAndPoolAndKeepsAtMostKKept) {
  FailedShapes shapes;
  std::string pool = "default", same_name = "default", other = "big";
  Resources two{.milli_gpus = 2000}, also_two{.milli_gpus = 2000}, four{.milli_gpus = 4000};
  EXPECT_EQ(shapes.Find(two, &pool), nullptr);
  FailedShape* kept = shapes.Keep(FailedShape{.r = &two, .pool = &pool, .words = "w"});
  ASSERT_NE(kept, nullptr);
  EXPECT_EQ(shapes.Find(also_two, &same_name), kept);  // equal requests, pools by name
  EXPECT_EQ(shapes.Find(two, &other), nullptr);
  EXPECT_EQ(shapes.Find(four, &pool), nullptr);
  std::vector<Resources> many(FailedShapes::kKept);
  for (size_t i = 1; i < FailedShapes::kKept; ++i) {
    many[i].milli_gpus = static_cast<int64_t>(i) * 100;
    ASSERT_NE(shapes.Keep(FailedShape{.r = &many[i], .pool = &pool}), nullptr);
  }
  EXPECT_EQ(shapes.Keep(FailedShape{.r = &four, .pool = &pool}), nullptr);  // full
  EXPECT_EQ(shapes.Find(also_two, &pool), kept);  // what was kept stays where it was
}

TEST(FailedShapes, NoFitWordsSayWhatIsFreeAndWhatIsShort) {
  ClusterView view;
  view.nodes.push_back(MakeNode("n1", 4));
  view.nodes.push_back(MakeNode("n2", 4));
  view.nodes[1].refuses_root_jobs = true;
  PassJobs jobs;
  RunningJob busy = jobs.Running(view, 9, "n1", 0, 3, 0);
  (void)busy;
  Placer placer(view);
  PendingJob job = jobs.Pending(1, 8000, 0);
  PlaceRules rules{.pool = "default", .limits = job.Limits()};
  EXPECT_EQ(NoFitWords(placer, job, rules, /*never=*/true, Refusing{}, false),
            "no node in pool default can ever hold 8 GPUs");
  EXPECT_EQ(NoFitWords(placer, job, rules, false, Refusing{}, false),
            "waiting for 8 GPUs; 5 GPUs free in pool default");
  EXPECT_NE(NoFitWords(placer, job, rules, false, Refusing{}, /*shortfall=*/true)
                .find("waiting for 8 GPUs; 5 GPUs free in pool default; short of "),
            std::string::npos);
  jobs.user = "root";
  PendingJob root = jobs.Pending(2, 2000, 0);
  PlaceRules root_rules{.pool = "default", .limits = root.Limits()};
  EXPECT_EQ(NoFitWords(placer, root, root_rules, false, Refusing{.root = true}, false),
            "waiting for 2 GPUs; 1 GPU free in pool default on nodes that run root's jobs (1 node "
            "refuses them: `baton agent --allow-root-jobs` allows them)");
  // Root's job that is not preemptible, where n1 is a spot node: neither node may run it.
  view.nodes[0].spot = true;
  Placer spot_placer(view);
  root.preemptible = false;
  PlaceRules both{.pool = "default", .limits = root.Limits()};
  EXPECT_EQ(NoFitWords(spot_placer, root, both, false, Refusing{.root = true, .spot = true}, false),
            "waiting for 2 GPUs; 0 GPUs free in pool default on nodes that run root's jobs and are "
            "not spot (1 node refuses them: `baton agent --allow-root-jobs` allows them; 1 spot "
            "node runs only preemptible jobs: --preemptible lets it use them)");
}

}  // namespace
}  // namespace baton::sched
