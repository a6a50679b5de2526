// The controller as a state machine: jobs, the queue, priorities, dependencies, restarts,
// preemption and policies. (Agents and nodes, health, tokens and costs have files of their own.)
#include <gtest/gtest.h>

#include "controller_fixture.h"

namespace baton::control {
namespace {

TEST_F(ControllerTest, JobsWaitForANodeThenRunOnDistinctGpus) {
  JobId a = Submit(1000), b = Submit(1000), c = Submit(1000);
  EXPECT_EQ(State(a), JobState::kPending);
  EXPECT_EQ(c_->FindJob(a)->reason, WaitReason::kResources);
  RegisterNode("n1", 2);
  std::vector<Order> orders = Poll("n1");
  ASSERT_EQ(orders.size(), 2u);
  EXPECT_EQ(orders[0].launch.job, a);
  EXPECT_EQ(orders[1].launch.job, b);
  EXPECT_NE(orders[0].launch.gpus, orders[1].launch.gpus);
  EXPECT_EQ(State(a), JobState::kRunning);
  EXPECT_EQ(State(c), JobState::kPending);

  ReportEvent("n1", {.job = a, .kind = JobEvent::Kind::kStarted});
  ReportEvent("n1", {.job = a, .kind = JobEvent::Kind::kExited, .exit_code = 0});
  EXPECT_EQ(State(a), JobState::kSucceeded);
  EXPECT_EQ(*c_->FindJob(a)->exit_code, 0);
  orders = Poll("n1");
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_EQ(orders[0].launch.job, c);
  EXPECT_EQ(orders[0].launch.gpus, c_->FindJob(a)->allocation[0].gpus);  // a's GPU, now free
}

TEST_F(ControllerTest, HigherPriorityStartsFirst) {
  RegisterNode("n1", 1);
  JobId busy = Submit(1000);
  Poll("n1");
  JobId low = Submit(1000, Priority::kLow);
  JobId high = Submit(1000, Priority::kHigh);
  ReportEvent("n1", {.job = busy, .kind = JobEvent::Kind::kStarted});
  ReportEvent("n1", {.job = busy, .kind = JobEvent::Kind::kExited});
  EXPECT_EQ(State(high), JobState::kRunning);
  EXPECT_EQ(State(low), JobState::kPending);
}

TEST_F(ControllerTest, ALaterHighPriorityArrivalStillGetsTheNextFreeGpu) {
  RegisterNode("n1", 1);
  JobId busy = Submit(1000, Priority::kCritical);  // nothing preempts it: no full pass on arrival
  Poll("n1");
  ReportEvent("n1", {.job = busy, .kind = JobEvent::Kind::kStarted});
  JobId low1 = Submit(1000, Priority::kLow), low2 = Submit(1000, Priority::kLow);
  now_ += seconds(3);
  (void)Run(Tick{});                           // a full pass orders the queue: low1, low2
  JobId high = Submit(1000, Priority::kHigh);  // arrives after it
  now_ += milliseconds(100);
  ReportEvent("n1",
              {.job = busy, .kind = JobEvent::Kind::kExited});  // a GPU frees between full passes
  EXPECT_EQ(State(high), JobState::kRunning);
  EXPECT_EQ(State(low1), JobState::kPending);
  EXPECT_EQ(State(low2), JobState::kPending);
}

TEST_F(ControllerTest, StrictOrderHoldsNewArrivalsBehindAWaitingJob) {
  ControllerOptions options;
  options.policy.backfill = false;
  c_ = std::make_unique<Controller>(options);
  c_->Restore(*store_.Load(), now_);
  RegisterNode("n1", 8);
  JobId busy = StartJob("n1", 4000, Priority::kNormal);
  JobId wide = Submit(8000);
  JobId small = Submit(1000);  // would fit now; it must wait behind `wide`
  EXPECT_EQ(State(wide), JobState::kPending);
  EXPECT_EQ(State(small), JobState::kPending);
  EXPECT_EQ(c_->FindJob(small)->reason, WaitReason::kPriority);
  // The jobs ahead are said when the job is read (the pass keeps them as a number).
  EXPECT_EQ(ReasonDetail(*c_->FindJob(small)),
            "behind job " + wide.ToString() +
                " (strict queue order, no backfill); 1 job ahead in the queue");
  EXPECT_NE(codec::EncodeJob(*c_->FindJob(small)).find("1 job ahead in the queue"),
            std::string::npos);
  (void)busy;
}

TEST_F(ControllerTest, StrictOrderWithoutPreemptionKeepsArrivalsBehindUntilTheBlockerFits) {
  // Strict order by class alone, no preemption: arrivals and frees that cannot hold the job
  // ahead are passes of their own (sched/job_queue.h), with the same outcome as full ones.
  ControllerOptions options;
  options.policy.backfill = false;
  options.policy.preemption = false;
  options.policy.weights = Weights{.priority = 10'000, .fairshare = 0, .age = 0, .size = 0};
  c_ = std::make_unique<Controller>(options);
  c_->Restore(*store_.Load(), now_);
  RegisterNode("n1", 8);
  JobId a = StartJob("n1", 4000, Priority::kNormal);
  JobId b = StartJob("n1", 2000, Priority::kNormal);
  JobId wide = Submit(8000);
  now_ += seconds(5);  // past the timed pass a score of age or usage would want
  (void)Run(Tick{});
  JobId small1 = Submit(1000);  // fits in the 2 free GPUs; must wait behind `wide`
  JobId small2 = Submit(1000);
  const std::string behind =
      "behind job " + wide.ToString() + " (strict queue order, no backfill); ";
  EXPECT_EQ(ReasonDetail(*c_->FindJob(small1)), behind + "1 job ahead in the queue");
  EXPECT_EQ(ReasonDetail(*c_->FindJob(small2)), behind + "2 jobs ahead in the queue");
  auto queue = Run(GetQueue{.caller = {"ada", true}, .limit = 10})->jobs;
  ASSERT_EQ(queue.size(), 3u);
  EXPECT_EQ(queue[0].id, wide);
  EXPECT_EQ(queue[2].id, small2);
  // b ends: 4 GPUs free, still short of 8.
  ReportEvent("n1", {.job = b, .kind = JobEvent::Kind::kExited, .exit_code = 0});
  EXPECT_EQ(State(wide), JobState::kPending);
  EXPECT_EQ(State(small1), JobState::kPending);
  EXPECT_EQ(State(small2), JobState::kPending);
  // A higher class arrives: it goes ahead of `wide` and fits.
  JobId urgent = Submit(1000, Priority::kHigh);
  EXPECT_EQ(State(urgent), JobState::kRunning);
  EXPECT_EQ(State(small1), JobState::kPending);
  ReportEvent("n1", {.job = urgent, .kind = JobEvent::Kind::kStarted});
  ReportEvent("n1", {.job = urgent, .kind = JobEvent::Kind::kExited, .exit_code = 0});
  // a ends: all 8 free; `wide` starts, then the small ones once it is done.
  ReportEvent("n1", {.job = a, .kind = JobEvent::Kind::kExited, .exit_code = 0});
  EXPECT_EQ(State(wide), JobState::kRunning);
  EXPECT_EQ(State(small1), JobState::kPending);
  Poll("n1");
  ReportEvent("n1", {.job = wide, .kind = JobEvent::Kind::kStarted});
  ReportEvent("n1", {.job = wide, .kind = JobEvent::Kind::kExited, .exit_code = 0});
  EXPECT_EQ(State(small1), JobState::kRunning);
  EXPECT_EQ(State(small2), JobState::kRunning);
}

TEST_F(ControllerTest, StrictOrderByClassStartsMoreJobsThanTheHeadItLooksAtFirst) {
  // Strict order by class alone: a full pass is given the head of the queue first
  // (kStrictHead jobs), and asks for more when all of them start.
  ControllerOptions options;
  options.policy.backfill = false;
  options.policy.weights = Weights{.priority = 0, .fairshare = 0, .age = 0, .size = 0};
  c_ = std::make_unique<Controller>(options);
  c_->Restore(*store_.Load(), now_);
  RegisterNode("n1", 8);
  const size_t many = 420;  // more than the 320 (kStrictHead) it is given first
  JobSpec s;
  s.command = {"true"};  // no GPU: every one of them fits
  auto r = Run(SubmitJobs{.caller = {"ada", true}, .specs = std::vector<JobSpec>(many, s)});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r->jobs.size(), many);
  for (const Job& j : r->jobs) EXPECT_EQ(State(j.id), JobState::kRunning) << j.id.ToString();
}

TEST_F(ControllerTest, FailedExitRetriesThenFails) {
  RegisterNode("n1", 1);
  JobId id = SubmitFailing(1);
  Poll("n1");
  ReportEvent("n1", {.job = id, .kind = JobEvent::Kind::kStarted});
  ReportEvent("n1", {.job = id, .attempt = 0, .kind = JobEvent::Kind::kExited, .exit_code = 1});
  EXPECT_EQ(c_->FindJob(id)->restarts, 1);
  EXPECT_EQ(State(id), JobState::kRunning);  // requeued and started again at once
  std::vector<Order> orders = Poll("n1");
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_EQ(orders[0].launch.attempt, 1);
  ReportEvent("n1", {.job = id, .attempt = 1, .kind = JobEvent::Kind::kStarted});
  ReportEvent("n1", {.job = id, .attempt = 1, .kind = JobEvent::Kind::kExited, .exit_code = 1});
  EXPECT_EQ(State(id), JobState::kFailed);
}

TEST_F(ControllerTest, StaleEventsOfAnEarlierAttemptAreIgnored) {
  RegisterNode("n1", 1);
  JobId id = Submit(1000);
  Poll("n1");
  ReportEvent("n1", {.job = id, .attempt = 7, .kind = JobEvent::Kind::kExited, .exit_code = 1});
  EXPECT_EQ(State(id), JobState::kRunning);
}

TEST_F(ControllerTest, CancelPendingAndRunning) {
  RegisterNode("n1", 1);
  JobId run = Submit(1000), wait = Submit(1000);
  Poll("n1");
  ReportEvent("n1", {.job = run, .kind = JobEvent::Kind::kStarted});
  EXPECT_TRUE(Run(JobAction{.caller = {"ada", true}, .id = wait, .kind = JobAction::Kind::kCancel})
                  .status.ok());
  EXPECT_EQ(State(wait), JobState::kCancelled);
  EXPECT_TRUE(Run(JobAction{.caller = {"ada", true}, .id = run, .kind = JobAction::Kind::kCancel})
                  .status.ok());
  std::vector<Order> orders = Poll("n1");
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_EQ(orders[0].kind, Order::Kind::kStop);
  EXPECT_EQ(orders[0].stop.reason, StopReason::kCancel);
  ReportEvent("n1", {.job = run, .kind = JobEvent::Kind::kExited, .signal = 10});
  EXPECT_EQ(State(run), JobState::kCancelled);
  // Cancelling an ended job again is harmless (a retried request), and changes nothing.
  auto again = Run(JobAction{.caller = {"ada", true}, .id = run, .kind = JobAction::Kind::kCancel});
  EXPECT_TRUE(again.status.ok());
  EXPECT_EQ(State(run), JobState::kCancelled);
}

TEST_F(ControllerTest, OnlyTheOwnerOrAnAdminActsOnAJob) {
  JobSpec s;
  s.command = {"true"};
  JobId id = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}})->jobs[0].id;
  auto r = Run(JobAction{.caller = {"bob", false}, .id = id, .kind = JobAction::Kind::kCancel});
  EXPECT_EQ(r.status.code(), Code::kPermissionDenied);
  EXPECT_EQ(State(id), JobState::kPending);
}

TEST_F(ControllerTest, HoldAndRelease) {
  JobSpec s;
  s.command = {"true"};
  s.hold = true;
  JobId id = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}})->jobs[0].id;
  EXPECT_EQ(State(id), JobState::kHeld);
  RegisterNode("n1", 1);
  EXPECT_EQ(State(id), JobState::kHeld);
  EXPECT_TRUE(Run(JobAction{.caller = {"ada", false}, .id = id, .kind = JobAction::Kind::kRelease})
                  .status.ok());
  EXPECT_EQ(State(id), JobState::kRunning);
}

TEST_F(ControllerTest, DependenciesWaitAndBreak) {
  RegisterNode("n1", 1);
  JobId first = Submit(1000);
  JobSpec s;
  s.command = {"true"};
  s.after = {first};
  JobId second = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}})->jobs[0].id;
  EXPECT_EQ(c_->FindJob(second)->reason, WaitReason::kDependency);
  Poll("n1");
  ReportEvent("n1", {.job = first, .kind = JobEvent::Kind::kStarted});
  ReportEvent("n1", {.job = first, .kind = JobEvent::Kind::kExited, .exit_code = 2});
  EXPECT_EQ(State(first), JobState::kFailed);
  EXPECT_EQ(State(second), JobState::kFailed);  // its dependency can never be met
  EXPECT_EQ(c_->FindJob(second)->reason, WaitReason::kDependency);
  EXPECT_NE(c_->FindJob(second)->reason_detail.find("job " + first.ToString()), std::string::npos);
  s.after = {JobId{999}};
  auto bad = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}});
  EXPECT_EQ(bad.status.code(), Code::kInvalidArgument);
}

TEST_F(ControllerTest, IdempotencyKeyReturnsTheSameJob) {
  JobId a = Submit(0, Priority::kNormal, "k1");
  JobSpec s;
  s.command = {"true"};
  auto again = Run(SubmitJobs{.caller = {"ada", true}, .specs = {s}, .idempotency_key = "k1"});
  ASSERT_TRUE(again.status.ok());
  EXPECT_FALSE(again->created);
  EXPECT_EQ(again->jobs[0].id, a);
  EXPECT_EQ(c_->jobs().size(), 1u);
}

TEST_F(ControllerTest, FairShareChargesSurviveARestartOfJobsNotYetStarted) {
  RegisterNode("n1", 2);
  JobId a = Submit(1000), b = Submit(1000);
  Poll("n1");
  ReportEvent("n1", {.job = a, .kind = JobEvent::Kind::kStarted});  // b's start not reported yet
  c_ = std::make_unique<Controller>();
  c_->Restore(*store_.Load(), now_);
  RegisterNode("n1", 2,
               {JobEvent{.job = a, .kind = JobEvent::Kind::kStarted, .at = now_},
                JobEvent{.job = b, .kind = JobEvent::Kind::kStarted, .at = now_}});
  ReportEvent("n1", {.job = b, .kind = JobEvent::Kind::kExited});
  double before = c_->usage().project("default");
  now_ += std::chrono::hours(1);
  (void)Run(Tick{});
  Submit(0);  // any pass brings the ledger up to now
  // a still runs on one GPU: an hour of it is charged (a little less with the week's decay).
  EXPECT_GT(c_->usage().project("default") - before, 3500.0);
}

TEST_F(ControllerTest, ARestartRebuildsExactlyTheSameState) {
  RegisterNode("n1", 2);
  JobId a = Submit(1000), b = Submit(1000), c = Submit(1000);
  Poll("n1");
  ReportEvent("n1", {.job = a, .kind = JobEvent::Kind::kStarted});
  ReportEvent("n1", {.job = a, .kind = JobEvent::Kind::kExited, .exit_code = 0});
  std::map<JobId, Job> before = c_->jobs();

  Controller restarted;
  restarted.Restore(*store_.Load(), now_);
  EXPECT_EQ(restarted.jobs(), before);
  EXPECT_EQ(restarted.queue_length(), c_->queue_length());
  // And it never hands out an id twice.
  c_ = std::make_unique<Controller>();
  c_->Restore(*store_.Load(), now_);
  JobId d = Submit(0);
  EXPECT_GT(d.value, c.value);
  (void)b;
}

TEST_F(ControllerTest, AHigherClassPreemptsAndTheVictimComesBackPending) {
  RegisterNode("n1", 8);
  JobId low = StartJob("n1", 8000, Priority::kLow);
  now_ += seconds(10);
  JobId high = Submit(2000, Priority::kHigh);
  EXPECT_EQ(State(high), JobState::kPending);
  std::vector<Order> orders = Poll("n1");
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_EQ(orders[0].kind, Order::Kind::kStop);
  EXPECT_EQ(orders[0].stop.job, low);
  EXPECT_EQ(orders[0].stop.reason, StopReason::kPreempt);
  EXPECT_EQ(orders[0].stop.grace_period, Policy{}.preempt_grace);
  EXPECT_TRUE(c_->FindJob(high)->estimated_start.has_value());
  // The victim ends by the signal: it goes back to the queue, not to `failed`.
  ReportEvent("n1", {.job = low, .kind = JobEvent::Kind::kExited, .signal = 15});
  EXPECT_EQ(State(low), JobState::kPending);
  EXPECT_EQ(c_->FindJob(low)->restarts, 1);
  EXPECT_EQ(c_->FindJob(low)->failures, 0);
  // The GPU-time of the attempt stays with the job (least attained service counts it).
  EXPECT_NEAR(c_->FindJob(low)->gpu_seconds, 8 * 10.0, 1e-6);
  EXPECT_NE(c_->FindJob(low)->last_requeue.find("preempted (priority) for job " + high.ToString()),
            std::string::npos)
      << c_->FindJob(low)->last_requeue;
  EXPECT_EQ(State(high), JobState::kRunning);
}

TEST_F(ControllerTest, PreemptionTakesTheJobWhoseCheckpointIsFreshest) {
  RegisterNode("n1", 4);
  JobId a = Submit(2000, Priority::kLow), b = Submit(2000, Priority::kLow);
  Poll("n1");
  ReportEvent("n1", {.job = a, .kind = JobEvent::Kind::kStarted});
  ReportEvent("n1", {.job = b, .kind = JobEvent::Kind::kStarted});
  now_ += std::chrono::minutes(30);
  ReportEvent("n1", {.job = b, .kind = JobEvent::Kind::kCheckpoint, .message = "/ckpt/b-30m.pt"});
  EXPECT_EQ(c_->FindJob(b)->last_checkpoint, now_);
  now_ += std::chrono::minutes(1);
  Submit(2000, Priority::kHigh);
  std::vector<Order> orders = Poll("n1");
  ASSERT_EQ(orders.size(), 1u);
  EXPECT_EQ(orders[0].kind, Order::Kind::kStop);
  EXPECT_EQ(orders[0].stop.job, b);  // 1 minute lost, not a's 31
  (void)a;
}

TEST_F(ControllerTest, TheQueueListsPendingJobsInStartOrderWithTheirFactors) {
  RegisterNode("n1", 1);
  JobId busy = Submit(1000);
  JobId low = Submit(1000, Priority::kLow);
  JobId high = Submit(1000, Priority::kHigh);
  now_ += seconds(5);
  (void)Run(Tick{});
  auto q = Run(GetQueue{.caller = {"ada", true}});
  ASSERT_TRUE(q.status.ok());
  ASSERT_EQ(q->jobs.size(), 2u);
  ASSERT_EQ(q->factors.size(), 2u);
  EXPECT_EQ(q->jobs[0].id, high);
  EXPECT_EQ(q->jobs[1].id, low);
  EXPECT_GT(q->factors[0].priority, q->factors[1].priority);
  EXPECT_GT(q->factors[0].score, q->factors[1].score);
  EXPECT_EQ(State(busy), JobState::kRunning);
  // One job's page carries the same.
  auto one = Run(GetJob{.caller = {"ada", true}, .id = low});
  ASSERT_TRUE(one->factors.has_value());
  EXPECT_EQ(*one->factors, q->factors[1]);
  EXPECT_EQ(one->queue_position, 2);
  EXPECT_TRUE(Run(GetJob{.caller = {"ada", true}, .id = busy})->factors == std::nullopt);
}

TEST_F(ControllerTest, AQueueThatFairShareDoesNotOrderStillShowsEachJobsFairShare) {
  // A pass does not work out a factor the policy does not weigh; the queue shows it anyway,
  // from the usage when asked.
  ControllerOptions options;
  options.policy.backfill = false;
  options.policy.weights = Weights{.priority = 10'000, .fairshare = 0, .age = 0, .size = 0};
  c_ = std::make_unique<Controller>(options);
  c_->Restore(*store_.Load(), now_);
  RegisterNode("n1", 1);
  auto submit = [&](const std::string& project, const std::string& user) {
    JobSpec s;
    s.command = {"true"};
    s.project = project;
    s.resources.milli_gpus = 1000;
    return Run(SubmitJobs{.caller = {user, true}, .specs = {s}})->jobs.at(0).id;
  };
  JobId used = submit("heavy", "ada");  // runs for ten minutes: its project's usage
  Poll("n1");
  ReportEvent("n1", {.job = used, .kind = JobEvent::Kind::kStarted});
  for (int i = 0; i < 60; ++i) {
    now_ += seconds(10);
    Poll("n1");
  }
  ASSERT_EQ(State(used), JobState::kRunning);
  JobId heavy = submit("heavy", "ada");
  JobId light = submit("light", "bob");
  now_ += seconds(5);
  (void)Run(Tick{});
  auto q = Run(GetQueue{.caller = {"ada", true}});
  ASSERT_EQ(q->jobs.size(), 2u);
  ASSERT_EQ(q->factors.size(), 2u);
  EXPECT_EQ(q->jobs[0].id, heavy);  // submit order: the factor changes no score
  EXPECT_EQ(q->factors[0].score, q->factors[1].score);
  EXPECT_GT(q->factors[0].fairshare, 0);
  EXPECT_LT(q->factors[0].fairshare, 1);
  EXPECT_GT(q->factors[1].fairshare, q->factors[0].fairshare);  // `light` used none of its share
  auto one = Run(GetJob{.caller = {"ada", true}, .id = light});
  ASSERT_TRUE(one->factors.has_value());
  EXPECT_EQ(*one->factors, q->factors[1]);
}

TEST_F(ControllerTest, ANewPolicyAppliesToWhatComesNextAndKeepsWhatJobsWereGiven) {
  JobSpec s;
  s.command = {"true"};
  s.pool = "dev";
  auto before = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}});
  ASSERT_TRUE(before.status.ok());
  EXPECT_EQ(before->jobs[0].spec.time_limit.count(), 0);  // no pool limits yet
  Policy p;
  p.pools["dev"] = PoolPolicy{.default_time_limit = std::chrono::hours(1),
                              .max_time_limit = std::chrono::hours(2)};
  p.fairshare_half_life = std::chrono::hours(1);
  ASSERT_TRUE(Run(SetPolicy{p}).status.ok());
  EXPECT_EQ(c_->usage().half_life(), std::chrono::hours(1));
  auto after = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}});
  ASSERT_TRUE(after.status.ok());
  EXPECT_EQ(after->jobs[0].spec.time_limit, std::chrono::hours(1));
  EXPECT_EQ(c_->FindJob(before->jobs[0].id)->spec.time_limit.count(), 0);  // kept
  s.time_limit = std::chrono::hours(3);
  EXPECT_EQ(Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}}).status.code(),
            Code::kInvalidArgument);
}

TEST_F(ControllerTest, PoolsGiveDefaultTimeLimitsAndRefuseLongerOnes) {
  ControllerOptions options;
  options.policy.pools["dev"] = PoolPolicy{.default_time_limit = std::chrono::hours(1),
                                           .max_time_limit = std::chrono::hours(4),
                                           .max_milli_per_job = 2000};
  c_ = std::make_unique<Controller>(options);
  c_->Restore(*store_.Load(), now_);
  JobSpec s;
  s.command = {"true"};
  s.pool = "dev";
  s.resources.milli_gpus = 1000;
  auto ok = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}});
  ASSERT_TRUE(ok.status.ok()) << ok.status.message();
  EXPECT_EQ(ok->jobs[0].spec.time_limit, std::chrono::hours(1));
  s.time_limit = std::chrono::hours(5);
  auto too_long = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}});
  EXPECT_EQ(too_long.status.code(), Code::kInvalidArgument);
  EXPECT_NE(too_long.status.message().find("time_limit: pool dev allows at most 4h"),
            std::string::npos)
      << too_long.status.message();
  s.time_limit = std::chrono::hours(1);
  s.resources.milli_gpus = 4000;
  auto too_big = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}});
  EXPECT_NE(too_big.status.message().find("resources.gpus: pool dev allows at most 2 GPUs"),
            std::string::npos)
      << too_big.status.message();
}

// A waiting job moved to another pool is placed in that pool: what a pass knows of its pool is
// not the pool it had when it first waited.
TEST_F(ControllerTest, AWaitingJobMovedToAnotherPoolRunsThere) {
  RegisterNode("n1", 1);  // pool default
  NodeInfo big;
  big.name = "b1";
  big.pool = "big";
  big.gpus.push_back(
      Gpu{.index = 0, .uuid = "GPU-b", .model = "H100-80GB", .memory_bytes = 80LL << 30});
  big.cpus = 64;
  big.memory_bytes = 512LL << 30;
  big.gpu_backend = GpuBackendKind::kSimulated;
  ASSERT_TRUE(Run(AgentRegister{RegisterRequest{.node = big}}).status.ok());
  JobId busy = Submit(1000);
  JobId moved = Submit(1000);
  ASSERT_EQ(State(busy), JobState::kRunning);
  ASSERT_EQ(State(moved), JobState::kPending);  // default's one GPU is taken
  JobSpec fields;
  fields.pool = "big";
  auto r = Run(UpdateJob{.caller = {"ada", true}, .id = moved, .fields = fields, .set = {"pool"}});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(State(moved), JobState::kRunning);
  ASSERT_FALSE(c_->FindJob(moved)->allocation.empty());
  EXPECT_EQ(c_->FindJob(moved)->allocation.front().node, "b1");
}

// A waiting job moved to another project counts against that project's limit, not the one it
// waited under.
TEST_F(ControllerTest, AWaitingJobMovedToAnotherProjectRunsUnderItsLimit) {
  ControllerOptions options;
  options.policy.projects["capped"] = ProjectPolicy{.limit_milli = 1000};
  c_ = std::make_unique<Controller>(options);
  c_->Restore(*store_.Load(), now_);
  RegisterNode("n1", 2);
  JobSpec s;
  s.command = {"true"};
  s.resources.milli_gpus = 1000;
  s.project = "capped";
  JobId first = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}})->jobs[0].id;
  JobId second = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}})->jobs[0].id;
  ASSERT_EQ(State(first), JobState::kRunning);
  ASSERT_EQ(State(second), JobState::kPending);  // capped holds its one GPU
  EXPECT_EQ(c_->FindJob(second)->reason, WaitReason::kQuota);
  JobSpec fields;
  fields.project = "other";
  auto r =
      Run(UpdateJob{.caller = {"ada", false}, .id = second, .fields = fields, .set = {"project"}});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(State(second), JobState::kRunning);
}

TEST_F(ControllerTest, ABatchIsAllOrNothing) {
  JobSpec good;
  good.command = {"true"};
  JobSpec bad = good;
  bad.after = {JobId{12345}};
  auto r = Run(SubmitJobs{.caller = {"ada", false}, .specs = {good, bad}});
  EXPECT_FALSE(r.status.ok());
  EXPECT_TRUE(c_->jobs().empty());
  EXPECT_EQ(Submit(0).value, 1);  // no id was used up by the failed batch
}

}  // namespace
}  // namespace baton::control
