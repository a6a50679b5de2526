// Autoscaling as the controller carries it out (issue 40; control/autoscaler.h): it asks the
// provider what it has before anything else, resumes named nodes for the jobs that wait,
// counts them as coming capacity, fails and suspends those that do not register in time or
// that the provider left out, suspends idle ones, and shows every node's state and why.
#include <gtest/gtest.h>

#include <algorithm>

#include "controller_fixture.h"

namespace baton::control {
namespace {

class ControllerAutoscaleTest : public ControllerTest {
 protected:
  void SetUp() override {
    ControllerTest::SetUp();
    ASSERT_TRUE(Run(SetPolicy{ScalingPolicy()}).status.ok());
  }
  static Policy ScalingPolicy() {
    Policy p;
    p.autoscaling.provider = {"/opt/provider"};
    p.autoscaling.resume_timeout = std::chrono::minutes(5);
    p.autoscaling.templates = {NodeTemplate{.name = "h100",
                                            .gpu_spec = "8xH100-80GB",
                                            .gpus = 8,
                                            .gpu_model = "H100-80GB",
                                            .gpu_memory_bytes = 80LL << 30,
                                            .cpus = 64,
                                            .memory_bytes = 512LL << 30,
                                            .price_per_hour = 20,
                                            .max = 4}};
    return p;
  }

  // A tick a scan interval later: a scan.
  void Scan() {
    now_ += seconds(10);
    Run(Tick{});
  }
  // The calls made since the last look.
  std::vector<ProviderCall> Calls() { return std::exchange(calls_, {}); }
  void Answer(const ProviderCall& call, std::vector<ProvidedNode> nodes, Status st = {}) {
    auto r = Run(ProviderAnswer{.call = call.id, .status = std::move(st), .nodes = nodes});
    ASSERT_TRUE(r.status.ok()) << r.status.message();
  }
  // The provider has nothing yet: the first scan's list answered empty.
  void Listed() {
    Scan();
    auto calls = Calls();
    ASSERT_EQ(calls.size(), 1u);
    ASSERT_EQ(calls[0].request.verb, ProviderVerb::kList);
    Answer(calls[0], {});
  }
  // The job waits with a reason once a pass has looked at it.
  JobId Waiting(int64_t milli_gpus, int nodes = 1) {
    JobSpec spec;
    spec.command = {"true"};
    spec.resources.milli_gpus = milli_gpus;
    spec.resources.nodes = nodes;
    auto submitted = Run(SubmitJobs{.caller = {"ada", true}, .specs = {spec}});
    EXPECT_TRUE(submitted.status.ok()) << submitted.status.message();
    if (!submitted.status.ok()) return JobId{0};
    JobId id = submitted->jobs.at(0).id;
    now_ += seconds(3);
    Run(Tick{});
    EXPECT_EQ(c_->FindJob(id)->reason, WaitReason::kResources);
    return id;
  }
  // A job of `milli_gpus` waits, and h100-1 is resumed for it (the provider says it is
  // starting it as i-1).
  JobId ResumedFor(int64_t milli_gpus) {
    Listed();
    JobId job = Waiting(milli_gpus);
    Scan();
    auto calls = Calls();
    EXPECT_EQ(calls.size(), 1u);
    if (!calls.empty())
      Answer(calls[0], {{.name = "h100-1", .id = "i-1", .template_name = "h100"}});
    return job;
  }
  NodeStatus NodeShown(const std::string& name) {
    for (NodeStatus& n : Run(ListNodes{}).value.nodes) {
      if (n.info.name == name) return n;
    }
    ADD_FAILURE() << name << " is not shown";
    return {};
  }
  std::vector<ClusterEvent> Events(EventKind kind) {
    std::vector<ClusterEvent> out;
    for (ClusterEvent& e : Run(GetEvents{}).value.events) {
      if (e.kind == kind) out.push_back(std::move(e));
    }
    return out;
  }
};

TEST_F(ControllerAutoscaleTest, TheProviderIsAskedWhatItHasBeforeAnyResume) {
  JobId job = Waiting(8000);  // no node holds it; a template does, so it was taken
  Scan();
  auto calls = Calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].request.verb, ProviderVerb::kList);
  EXPECT_EQ(calls[0].argv, std::vector<std::string>{"/opt/provider"});
  // Unanswered, it is not asked again, and nothing is resumed.
  Scan();
  EXPECT_TRUE(Calls().empty());
  Answer(calls[0], {});
  Scan();
  calls = Calls();
  ASSERT_EQ(calls.size(), 1u);
  const ProviderRequest& r = calls[0].request;
  EXPECT_EQ(r.verb, ProviderVerb::kResume);
  EXPECT_EQ(r.node_template.name, "h100");
  ASSERT_EQ(r.nodes.size(), 1u);
  EXPECT_EQ(r.nodes[0].name, "h100-1");
  EXPECT_EQ(r.jobs, std::vector<JobId>{job});
  EXPECT_EQ(r.reason, "for 1 waiting job (" + job.ToString() + ")");
  NodeStatus shown = NodeShown("h100-1");
  EXPECT_EQ(shown.state, NodeState::kResuming);
  EXPECT_EQ(shown.template_name, "h100");
  EXPECT_EQ(shown.state_since, now_);
  EXPECT_EQ(shown.info.gpus.size(), 8u);
  auto resuming = Events(EventKind::kNodeResuming);
  ASSERT_EQ(resuming.size(), 1u);
  EXPECT_EQ(resuming[0].message, "autoscaling resumes 1 node of template h100 (h100-1) for 1 " +
                                     std::string("waiting job (") + job.ToString() + ")");
  // The job's reason says so, as `baton show` and `baton jobs` read it.
  auto detail = Run(GetJob{.caller = {"ada", true}, .id = job});
  ASSERT_TRUE(detail.status.ok());
  EXPECT_NE(detail->job.reason_detail.find("autoscaling resumed h100-1 for it at "),
            std::string::npos)
      << detail->job.reason_detail;
  // A resuming node is coming capacity: the next scans ask for no other.
  Answer(calls[0], {{.name = "h100-1", .id = "i-1", .template_name = "h100"}});
  Scan();
  Scan();
  EXPECT_TRUE(Calls().empty());
}

TEST_F(ControllerAutoscaleTest, AJobNoTemplateServesNowIsToldWhy) {
  Listed();
  // Two gangs of 4 nodes; the template's max is 4: the second waits, and its reason says why.
  const JobId first = Waiting(32000, 4);
  const JobId second = Waiting(32000, 4);
  Scan();
  auto calls = Calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].request.nodes.size(), 4u);
  EXPECT_EQ(calls[0].request.jobs, std::vector<JobId>{first});
  auto shown = Run(ListJobs{});
  ASSERT_TRUE(shown.status.ok());
  std::string first_says, second_says;
  for (const Job& j : shown->jobs) (j.id == first ? first_says : second_says) = j.reason_detail;
  EXPECT_NE(first_says.find("autoscaling resumed h100-1, h100-2, h100-3, h100-4 for it"),
            std::string::npos)
      << first_says;
  EXPECT_NE(second_says.find(
                "autoscaling starts no node for it now: template h100 is at its max of 4 nodes"),
            std::string::npos)
      << second_says;
  EXPECT_NE(second, first);
}

TEST_F(ControllerAutoscaleTest, ASubmitIsLookedAtInItsOwnBatchNotAScanIntervalLater) {
  Listed();
  now_ += seconds(2);  // past the last scan by more than a second
  JobId job = Submit(8000);
  EXPECT_EQ(c_->FindJob(job)->reason, WaitReason::kResources);
  auto calls = Calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].request.verb, ProviderVerb::kResume);
  // Within a second of that scan, the next submit waits for the second to pass, and the pass
  // before that scan is a full one: the job's reason is known to it.
  now_ += milliseconds(300);
  JobId second = Submit(8000);
  EXPECT_TRUE(Calls().empty());
  now_ += milliseconds(800);
  Run(Tick{});
  EXPECT_EQ(c_->FindJob(second)->reason, WaitReason::kResources);
  calls = Calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].request.jobs, std::vector<JobId>{second});
}

TEST_F(ControllerAutoscaleTest, AResumedNodeRunsTheJobAndIsSuspendedOnceIdle) {
  const JobId job = ResumedFor(8000);
  std::vector<ProviderCall> calls;
  RegisterNode("h100-1", 8);
  EXPECT_EQ(NodeShown("h100-1").state, NodeState::kReady);
  now_ += seconds(5);
  Run(Tick{});
  ASSERT_EQ(State(job), JobState::kRunning);
  Poll("h100-1");
  ReportEvent("h100-1", {.job = job, .kind = JobEvent::Kind::kStarted});
  Scan();
  EXPECT_FALSE(NodeShown("h100-1").idle_since.has_value());  // busy
  ReportEvent("h100-1", {.job = job, .kind = JobEvent::Kind::kExited});
  ASSERT_EQ(State(job), JobState::kSucceeded);
  Scan();
  const TimePoint idle = now_;
  EXPECT_EQ(NodeShown("h100-1").idle_since, idle);
  // Idle for less than the idle time (10 minutes): kept. Its agent keeps reporting.
  for (int i = 0; i < 58; ++i) {
    Scan();
    Run(AgentReport{ReportRequest{.node = "h100-1", .session = session_}});
  }
  EXPECT_TRUE(Calls().empty());
  Scan();
  Scan();
  calls = Calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].request.verb, ProviderVerb::kSuspend);
  ASSERT_EQ(calls[0].request.nodes.size(), 1u);
  EXPECT_EQ(calls[0].request.nodes[0].name, "h100-1");
  EXPECT_EQ(calls[0].request.nodes[0].id, "i-1");
  EXPECT_EQ(calls[0].request.reason, "idle for 10m");
  EXPECT_EQ(NodeShown("h100-1").state, NodeState::kSuspending);
  // Being suspended, it takes no new job.
  JobId next = Waiting(1000);
  EXPECT_EQ(State(next), JobState::kPending);
  Answer(calls[0], {});
  EXPECT_EQ(NodeShown("h100-1").state, NodeState::kSuspended);
  // Gone, and not missed: its silence is no lost node.
  now_ += std::chrono::minutes(5);
  Run(Tick{});
  EXPECT_TRUE(Events(EventKind::kNodeLost).empty());
  auto suspending = Events(EventKind::kNodeSuspending);
  ASSERT_EQ(suspending.size(), 1u);
  EXPECT_EQ(suspending[0].message, "autoscaling suspends h100-1: idle for 10m");
}

TEST_F(ControllerAutoscaleTest, AJobThatCouldNotStartOnANodeGetsAnotherNotTheSameAgain) {
  const JobId job = ResumedFor(8000);
  RegisterNode("h100-1", 8);
  now_ += seconds(5);
  Run(Tick{});
  ASSERT_EQ(State(job), JobState::kRunning);
  Poll("h100-1");
  // Its agent could not start it there (a missing user, a missing driver): requeued, and
  // h100-1 is no capacity for it, though it is free.
  ReportEvent("h100-1", {.job = job, .kind = JobEvent::Kind::kStarted, .launch_failed = true});
  ReportEvent("h100-1", {.job = job,
                         .kind = JobEvent::Kind::kExited,
                         .exit_code = 126,
                         .launch_failed = true,
                         .message = "no such user"});
  ASSERT_EQ(State(job), JobState::kPending);
  ASSERT_EQ(c_->FindJob(job)->launch_failed_on, std::vector<std::string>{"h100-1"});
  now_ += seconds(3);
  Run(Tick{});
  Scan();
  auto calls = Calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].request.verb, ProviderVerb::kResume);
  ASSERT_EQ(calls[0].request.nodes.size(), 1u);
  EXPECT_EQ(calls[0].request.nodes[0].name, "h100-2");
  EXPECT_EQ(calls[0].request.jobs, std::vector<JobId>{job});
  // h100-2 never registers and h100-1 is suspended once idle: the job waits for the node
  // resumed in h100-2's place, h100-3, and no resume names h100-1 again for it.
  Answer(calls[0], {{.name = "h100-2", .id = "i-2", .template_name = "h100"}});
  for (int i = 0; i < 62; ++i) {
    Scan();
    Run(AgentReport{ReportRequest{.node = "h100-1", .session = session_}});
  }
  std::vector<std::string> resumed, suspended;
  for (const ProviderCall& c : Calls()) {
    for (const ProvidedNode& n : c.request.nodes)
      (c.request.verb == ProviderVerb::kResume ? resumed : suspended).push_back(n.name);
    Answer(c, c.request.verb == ProviderVerb::kSuspend
                  ? std::vector<ProvidedNode>{}
                  : std::vector<ProvidedNode>{
                        {.name = "h100-3", .id = "i-3", .template_name = "h100"}});
  }
  EXPECT_EQ(resumed, std::vector<std::string>{"h100-3"});
  EXPECT_EQ(suspended, (std::vector<std::string>{"h100-2", "h100-1"}));
  ASSERT_EQ(NodeShown("h100-1").state, NodeState::kSuspended);
  // h100-3 fails too: of the suspended names, the resume in its place takes h100-2, not
  // h100-1.
  for (int i = 0; i < 31; ++i) Scan();
  resumed.clear();
  for (const ProviderCall& c : Calls()) {
    if (c.request.verb != ProviderVerb::kResume) continue;
    for (const ProvidedNode& n : c.request.nodes) resumed.push_back(n.name);
  }
  EXPECT_EQ(resumed, std::vector<std::string>{"h100-2"});
}

TEST_F(ControllerAutoscaleTest, ANodesTimeIsChargedAndWhatNoJobRanInCountsForWhomItWasKeptFor) {
  // The default project has a budget of 100 a month; a node of h100 costs 20 an hour.
  Policy p = ScalingPolicy();
  p.projects["default"].budget = Budget{.amount = 100};
  ASSERT_TRUE(Run(SetPolicy{p}).status.ok());
  const JobId job = ResumedFor(8000);
  const TimePoint resumed = Events(EventKind::kNodeResuming).at(0).at;
  // It boots for 6 minutes, runs the job for an hour, then idles until it is suspended.
  now_ = resumed + std::chrono::minutes(6);
  RegisterNode("h100-1", 8);
  Run(Tick{});
  ASSERT_EQ(State(job), JobState::kRunning);
  // The job pays its GPUs' share of the node's price: all 8 of 8, 20 an hour.
  EXPECT_EQ(c_->FindJob(job)->cost_per_hour_micros, 20'000'000);
  Poll("h100-1");
  ReportEvent("h100-1", {.job = job, .kind = JobEvent::Kind::kStarted});
  Scan();
  now_ = resumed + std::chrono::minutes(66);
  ReportEvent("h100-1", {.job = job, .kind = JobEvent::Kind::kExited});
  ASSERT_EQ(State(job), JobState::kSucceeded);
  Scan();
  std::vector<ProviderCall> suspends;
  while (suspends.empty()) {
    Scan();
    Run(AgentReport{ReportRequest{.node = "h100-1", .session = session_}});
    for (ProviderCall& c : Calls()) {
      if (c.request.verb == ProviderVerb::kSuspend) suspends.push_back(c);
    }
  }
  Answer(suspends[0], {});
  const TimePoint gone = now_;
  // With no job: its boot, the scan interval from its registration to the scan that saw the
  // job on it, and from the scan after the job's end to the suspend.
  const double idle_minutes = 6 + 1.0 / 6 +
                              std::chrono::duration<double, std::ratio<60>>(
                                  gone - (resumed + std::chrono::minutes(66) + seconds(10)))
                                  .count();
  now_ += std::chrono::hours(1);
  UsageReport usage = Run(GetUsage{}).value;
  ASSERT_EQ(usage.projects.size(), 1u);
  const UsageRow& row = usage.projects[0];
  EXPECT_NEAR(row.cost, 20.0, 1e-6);  // the job's hour
  EXPECT_NEAR(row.idle_cost, 20.0 * idle_minutes / 60.0, 0.01);
  EXPECT_NEAR(row.budget_spent, row.cost + row.idle_cost, 0.01);
  ASSERT_EQ(usage.users.size(), 1u);
  EXPECT_NEAR(usage.users[0].idle_cost, row.idle_cost, 1e-9);
  ASSERT_TRUE(usage.nodes.has_value());
  ASSERT_EQ(usage.nodes->templates.size(), 1u);
  const double node_minutes = std::chrono::duration<double, std::ratio<60>>(gone - resumed).count();
  EXPECT_NEAR(usage.nodes->node_seconds, node_minutes * 60, 1e-6);
  EXPECT_NEAR(usage.nodes->cost, 20.0 * node_minutes / 60.0, 1e-6);
  EXPECT_NEAR(usage.nodes->idle_cost, row.idle_cost, 0.01);
  EXPECT_EQ(usage.nodes->templates[0].peak_nodes, 1);
  // A fixed node from the resume until now would have cost the hour since the suspend more.
  EXPECT_NEAR(usage.nodes->saved(), 20.0, 1e-6);

  // Stored: a new controller counts the same.
  auto restarted = std::make_unique<Controller>();
  restarted->Restore(*store_.Load(), now_);
  c_ = std::move(restarted);
  Run(SetPolicy{p});
  UsageReport again = Run(GetUsage{}).value;
  ASSERT_TRUE(again.nodes.has_value());
  EXPECT_NEAR(again.nodes->cost, usage.nodes->cost, 1e-9);
  EXPECT_NEAR(again.projects.at(0).idle_cost, row.idle_cost, 1e-9);
  EXPECT_NEAR(again.projects.at(0).budget_spent, row.budget_spent, 1e-6);
}

TEST_F(ControllerAutoscaleTest, ANodeStillUpWhenTheControllerRestartsIsChargedOnFromWhereItWas) {
  ResumedFor(8000);
  const TimePoint resumed = Events(EventKind::kNodeResuming).at(0).at;
  // The controller stops while h100-1 boots and starts again 10 minutes later.
  auto restarted = std::make_unique<Controller>();
  now_ += std::chrono::minutes(10);
  restarted->Restore(*store_.Load(), now_);
  c_ = std::move(restarted);
  Run(SetPolicy{ScalingPolicy()});
  // The provider lists it: its stretch goes on, none of the 10 minutes lost.
  Scan();
  auto calls = Calls();
  ASSERT_EQ(calls.size(), 1u);
  ASSERT_EQ(calls[0].request.verb, ProviderVerb::kList);
  Answer(calls[0], {{.name = "h100-1", .id = "i-1", .template_name = "h100"}});
  UsageReport usage = Run(GetUsage{}).value;
  ASSERT_TRUE(usage.nodes.has_value());
  EXPECT_NEAR(usage.nodes->node_seconds, std::chrono::duration<double>(now_ - resumed).count(),
              1e-6);
  // One it no longer lists is gone: charged until the list, no further.
  Scan();
  calls = Calls();
  auto restarted_again = std::make_unique<Controller>();
  restarted_again->Restore(*store_.Load(), now_);
  c_ = std::move(restarted_again);
  Run(SetPolicy{ScalingPolicy()});
  Scan();
  calls = Calls();
  ASSERT_EQ(calls.size(), 1u);
  Answer(calls[0], {});
  const TimePoint listed = now_;
  now_ += std::chrono::hours(1);
  usage = Run(GetUsage{}).value;
  ASSERT_TRUE(usage.nodes.has_value());
  EXPECT_NEAR(usage.nodes->node_seconds, std::chrono::duration<double>(listed - resumed).count(),
              1e-6);
}

TEST_F(ControllerAutoscaleTest, ANodeNotRegisteredInTimeFailsIsSuspendedAndTheJobWaitsOn) {
  const JobId job = ResumedFor(8000);
  std::vector<ProviderCall> calls;
  for (int i = 0; i < 30; ++i) Scan();  // the resume timeout: 5 minutes
  // The node failed is suspended, and one in its place is resumed in the same scan: a
  // failed node is no coming capacity, and its name is taken until it is suspended.
  calls = Calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].request.verb, ProviderVerb::kSuspend);
  EXPECT_EQ(calls[0].request.nodes.at(0).name, "h100-1");
  EXPECT_EQ(calls[1].request.verb, ProviderVerb::kResume);
  EXPECT_EQ(calls[1].request.nodes.at(0).name, "h100-2");
  NodeStatus shown = NodeShown("h100-1");
  EXPECT_EQ(shown.state, NodeState::kFailed);
  EXPECT_EQ(shown.scaling_reason, "it did not register within the resume timeout of 5m");
  auto failed = Events(EventKind::kNodeResumeFailed);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].severity, Severity::kAlert);
  EXPECT_EQ(failed[0].message,
            "the resume of h100-1 failed: it did not register within the resume timeout of 5m; "
            "suspended through the provider, and the jobs it was for wait for the next scan");
  // The job waits, no retry spent.
  EXPECT_EQ(State(job), JobState::kPending);
  EXPECT_EQ(c_->FindJob(job)->restarts, 0);
  // Its agent registers late, while the provider is stopping its machine: it takes no job.
  RegisterNode("h100-1", 8);
  now_ += seconds(3);
  Run(Tick{});
  EXPECT_EQ(NodeShown("h100-1").state, NodeState::kFailed);
  EXPECT_EQ(State(job), JobState::kPending);
  Answer(calls[0], {});
  EXPECT_EQ(NodeShown("h100-1").state, NodeState::kSuspended);
}

TEST_F(ControllerAutoscaleTest, ANodeTheProviderLeftOutFailsAndIsSuspended) {
  Listed();
  Waiting(16000, 2);
  Scan();
  auto calls = Calls();
  ASSERT_EQ(calls.size(), 1u);
  ASSERT_EQ(calls[0].request.nodes.size(), 2u);
  Answer(calls[0], {{.name = "h100-1", .id = "i-1"}});
  calls = Calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].request.verb, ProviderVerb::kSuspend);
  EXPECT_EQ(calls[0].request.nodes.at(0).name, "h100-2");
  EXPECT_EQ(NodeShown("h100-1").state, NodeState::kResuming);
  EXPECT_EQ(NodeShown("h100-2").state, NodeState::kFailed);
  EXPECT_EQ(NodeShown("h100-2").scaling_reason,
            "the provider started 1 of the 2 nodes asked, not these");
  Answer(calls[0], {});
  EXPECT_EQ(NodeShown("h100-2").state, NodeState::kSuspended);
  // The gang still needs a second node: h100-1 is coming, h100-2 is asked again.
  Scan();
  calls = Calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].request.verb, ProviderVerb::kResume);
  ASSERT_EQ(calls[0].request.nodes.size(), 1u);
  EXPECT_EQ(calls[0].request.nodes[0].name, "h100-2");
}

TEST_F(ControllerAutoscaleTest, AProviderThatFailsIsAnAlertAndWhatItMayHaveStartedIsSuspended) {
  Scan();
  auto calls = Calls();
  Answer(calls.at(0), {}, Unavailable("exited 3: no credentials"));
  auto alerts = Events(EventKind::kProviderFailed);
  ASSERT_EQ(alerts.size(), 1u);
  EXPECT_EQ(alerts[0].severity, Severity::kAlert);
  EXPECT_EQ(alerts[0].message,
            "provider list: exited 3: no credentials; autoscaling resumes and suspends nothing "
            "until it answers (asked again at the next scan)");
  Waiting(8000);
  Scan();
  calls = Calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].request.verb, ProviderVerb::kList);
  Answer(calls[0], {});
  Scan();
  calls = Calls();
  ASSERT_EQ(calls.at(0).request.verb, ProviderVerb::kResume);
  Answer(calls[0], {}, Unavailable("did not answer within 1m; killed (its process group)"));
  calls = Calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].request.verb, ProviderVerb::kSuspend);
  EXPECT_EQ(NodeShown("h100-1").state, NodeState::kFailed);
  EXPECT_EQ(Events(EventKind::kProviderFailed).back().message,
            "provider resume: did not answer within 1m; killed (its process group)");
  // A suspend that fails is asked again at the next scan.
  Answer(calls[0], {}, Unavailable("exited 1"));
  Scan();
  calls = Calls();
  bool again = std::any_of(calls.begin(), calls.end(), [](const ProviderCall& c) {
    return c.request.verb == ProviderVerb::kSuspend && c.request.nodes.at(0).name == "h100-1";
  });
  EXPECT_TRUE(again);
}

TEST_F(ControllerAutoscaleTest, ANewControllerTakesWhatTheProviderListsAsItsOwn) {
  Scan();
  auto calls = Calls();
  Answer(calls.at(0), {{.name = "h100-3", .id = "i-3", .template_name = "h100"},
                       {.name = "elsewhere", .id = "i-9", .template_name = "no-such-template"}});
  EXPECT_EQ(NodeShown("h100-3").state, NodeState::kResuming);
  EXPECT_EQ(NodeShown("h100-3").scaling_reason, "listed by the provider, not registered yet");
  RegisterNode("h100-3", 8);
  EXPECT_EQ(NodeShown("h100-3").state, NodeState::kReady);
  // A job it holds is placed there, and no node is resumed for it.
  JobId job = Submit(8000);
  now_ += seconds(3);
  Run(Tick{});
  EXPECT_EQ(State(job), JobState::kRunning);
  Scan();
  EXPECT_TRUE(Calls().empty());
}

TEST_F(ControllerAutoscaleTest, AJobNoTemplateHoldsIsRefusedAtSubmitAsBefore) {
  JobSpec s;
  s.command = {"true"};
  s.resources.milli_gpus = 40000;  // five nodes of 8; the template has four at most
  auto r = Run(SubmitJobs{.caller = {"ada", true}, .specs = {s}});
  EXPECT_FALSE(r.status.ok());
}

// The stretches of days past the detail kept (35 days) are folded on the first tick of a day,
// in the store too (a row each was kept for ever); usage and budgets count the same.
TEST_F(ControllerAutoscaleTest, StretchesOfDaysLongPastAreFoldedInTheStoreAndCountTheSame) {
  using std::chrono::hours;
  using std::chrono::minutes;
  Policy p = ScalingPolicy();
  p.projects["vision"].budget = Budget{.amount = 1000, .period = BudgetPeriod::kTotal};
  // 40 days ago, h100-1 was busy and idle for vision in turn, half an hour each, all day.
  const TimePoint day = PeriodStart(BudgetPeriod::kDay, now_) - std::chrono::days(40);
  std::vector<store::NodeCharge> old;
  for (int i = 0; i < 48; ++i) {
    old.push_back(store::NodeCharge{.id = i + 1,
                                    .node = "h100-1",
                                    .template_name = "h100",
                                    .use = i % 2 == 0 ? "busy" : "idle",
                                    .project = "vision",
                                    .user = "ada",
                                    .price_micros = 20'000'000,
                                    .on_demand_micros = 20'000'000,
                                    .start = day + minutes(30 * i),
                                    .end = day + minutes(30 * i + 30)});
  }
  ASSERT_TRUE(store_.Commit(store::Batch{.node_charges = old}).ok());
  c_ = std::make_unique<Controller>();
  c_->Restore(*store_.Load(), now_);
  ASSERT_TRUE(Run(SetPolicy{p}).status.ok());
  const GetUsage that_day{.since = day, .until = day + hours(24)};
  const UsageReport before = Run(that_day).value;

  Run(Tick{});
  const std::vector<store::NodeCharge> kept = store_.Load()->node_charges;
  ASSERT_EQ(kept.size(), 2u);  // a busy and an idle stretch of 12 hours, end to end
  EXPECT_EQ(kept[0].use, "busy");
  EXPECT_EQ(kept[0].start, day);
  EXPECT_EQ(kept[0].end, day + hours(12));
  EXPECT_EQ(kept[1].use, "idle");
  EXPECT_EQ(kept[1].end, day + hours(24));

  const UsageReport after = Run(that_day).value;
  ASSERT_TRUE(before.nodes.has_value() && after.nodes.has_value());
  EXPECT_NEAR(after.nodes->cost, 480, 1e-6);  // 24 hours at 20
  EXPECT_NEAR(after.nodes->cost, before.nodes->cost, 1e-6);
  ASSERT_EQ(after.projects.size(), 1u);
  EXPECT_NEAR(after.projects[0].idle_cost, 240, 1e-6);
  EXPECT_NEAR(after.projects[0].idle_cost, before.projects.at(0).idle_cost, 1e-6);
  // A total budget counts the idle half (no job of the store ran then).
  EXPECT_NEAR(after.projects[0].budget_spent, 240, 1e-6);
  EXPECT_NEAR(after.projects[0].budget_spent, before.projects.at(0).budget_spent, 1e-6);
}

// What `baton sim` relies on to scan only when a scan could decide something: with nothing
// new, no scan before NextDecision decides anything, and the one at it does.
TEST_F(ControllerAutoscaleTest, NoScanBeforeTheNextDecisionDecidesAnythingWhenNothingChanges) {
  const JobId job = ResumedFor(8000);
  const TimePoint resumed = Events(EventKind::kNodeResuming).at(0).at;
  const Autoscaler& as = c_->autoscaler();
  // Booting: the resume rate's minute comes before the resume's timeout (5 minutes).
  EXPECT_EQ(as.NextDecision(), resumed + std::chrono::minutes(1));
  now_ = resumed + std::chrono::minutes(2);
  RegisterNode("h100-1", 8);
  Run(Tick{});
  ASSERT_EQ(State(job), JobState::kRunning);
  Poll("h100-1");
  ReportEvent("h100-1", {.job = job, .kind = JobEvent::Kind::kStarted});
  Scan();
  EXPECT_EQ(as.NextDecision(), std::nullopt);  // busy, no clock running: only a change decides
  ReportEvent("h100-1", {.job = job, .kind = JobEvent::Kind::kExited});
  Scan();  // sees it idle
  const std::optional<TimePoint> idle_since = as.nodes().at("h100-1").idle_since;
  ASSERT_TRUE(idle_since.has_value());
  const std::optional<TimePoint> next = as.NextDecision();
  ASSERT_EQ(next, *idle_since + std::chrono::minutes(10));  // the idle time
  const size_t suspending = Events(EventKind::kNodeSuspending).size();
  while (now_ + seconds(10) < *next) {
    Scan();
    Run(AgentReport{ReportRequest{.node = "h100-1", .session = session_}});  // alive
    EXPECT_TRUE(Calls().empty());
  }
  EXPECT_EQ(Events(EventKind::kNodeSuspending).size(), suspending);
  now_ = std::max(*next, as.next_scan());
  Run(Tick{});
  const std::vector<ProviderCall> calls = Calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].request.verb, ProviderVerb::kSuspend);
}

}  // namespace
}  // namespace baton::control
