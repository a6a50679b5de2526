// What the controller does with a request no node can hold, a job that could not start on a
// node (a launch failure), and nodes that refuse root's jobs (issue 16).
#include <csignal>
#include <map>

#include "controller_fixture.h"

namespace baton::control {
namespace {

class LaunchTest : public ControllerTest {
 protected:
  // Registers `name` with `gpus` H100s in its own session.
  void Join(const std::string& name, int gpus, bool refuses_root = false) {
    NodeInfo info;
    info.name = name;
    for (int i = 0; i < gpus; ++i) {
      info.gpus.push_back(Gpu{.index = i, .model = "H100-80GB", .memory_bytes = 80LL << 30});
    }
    info.cpus = 64;
    info.memory_bytes = 512LL << 30;
    info.gpu_backend = GpuBackendKind::kSimulated;
    info.refuses_root_jobs = refuses_root;
    auto r = Run(AgentRegister{RegisterRequest{.node = info}});
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    sessions_[name] = r->session;
  }

  // The launches sent to `node` since the last look.
  std::vector<LaunchOrder> Launches(const std::string& node) {
    std::vector<LaunchOrder> out;
    for (const Order& o : Orders(node)) {
      if (o.kind == Order::Kind::kLaunch) out.push_back(o.launch);
    }
    return out;
  }

  // The orders sent to `node` since the last look.
  std::vector<Order> Orders(const std::string& node) {
    auto r = Run(AgentPoll{
        .node = node, .session = sessions_[node], .after = acked_[node], .poll_id = ++poll_});
    EXPECT_TRUE(r.status.ok()) << r.status.message();
    std::vector<Order> orders = r->orders;
    if (r->parked) {
      for (const Delivery& d : last_deliveries_) {
        if (d.poll_id == poll_) orders = d.orders;
      }
    }
    for (const Order& o : orders) acked_[node] = std::max(acked_[node], o.seq);
    return orders;
  }

  void Tell(const std::string& node, JobEvent e) {
    e.at = now_;
    auto r =
        Run(AgentReport{ReportRequest{.node = node, .session = sessions_[node], .events = {e}}});
    ASSERT_TRUE(r.status.ok()) << r.status.message();
  }

  // The agent of `node` could not start `job` (attempt `attempt`), as FailLaunch says it.
  void CannotStart(const std::string& node, JobId job, int attempt, std::string why) {
    JobEvent started{
        .job = job, .attempt = attempt, .kind = JobEvent::Kind::kStarted, .launch_failed = true};
    Tell(node, started);
    JobEvent exited = started;
    exited.kind = JobEvent::Kind::kExited;
    exited.exit_code = 126;
    exited.message = std::move(why);
    Tell(node, exited);
  }

  Answered<SubmitJobs> SubmitAs(const std::string& user, Resources r, int retries = 0) {
    JobSpec s = SubmittedSpec();
    s.command = {"train"};
    s.resources = r;
    s.retries = retries;
    return Run(SubmitJobs{.caller = {user, false}, .specs = {s}});
  }

  static Resources Gpus(int n) {
    Resources r;
    r.milli_gpus = n * 1000;
    r.nodes = 0;  // as a submit that names none
    return r;
  }

  const Job& J(JobId id) { return *c_->FindJob(id); }

  std::map<std::string, uint64_t> sessions_, acked_;
};

TEST_F(LaunchTest, ARequestNoNodeCanEverHoldIsRefusedAtSubmit) {
  Join("a", 8);
  Join("b", 8);
  auto too_many = SubmitAs("ada", Gpus(17));
  ASSERT_FALSE(too_many.status.ok());
  EXPECT_EQ(too_many.status.code(), Code::kInvalidArgument);
  EXPECT_NE(too_many.status.message().find("2 nodes of 8xH100-80GB"), std::string::npos)
      << too_many.status.message();
  Resources typed = Gpus(1);
  typed.gpu_type = "H200";
  auto no_type = SubmitAs("ada", typed);
  ASSERT_FALSE(no_type.status.ok());
  EXPECT_NE(no_type.status.message().find("no GPU of type H200"), std::string::npos);
  EXPECT_TRUE(c_->jobs().empty());  // nothing half-made
  // In a batch, the message names the job.
  JobSpec good = SubmittedSpec(), bad = SubmittedSpec();
  good.command = bad.command = {"x"};
  good.resources = Gpus(1);
  bad.resources = Gpus(64);
  auto batch = Run(SubmitJobs{.caller = {"ada", false}, .specs = {good, bad}});
  ASSERT_FALSE(batch.status.ok());
  EXPECT_EQ(batch.status.message().rfind("jobs[1].resources.gpus", 0), 0u)
      << batch.status.message();
  EXPECT_TRUE(c_->jobs().empty());
}

TEST_F(LaunchTest, SixteenGpusWithNoNodeCountRunOnTwoWholeNodes) {
  Join("a", 8);
  Join("b", 8);
  auto r = SubmitAs("ada", Gpus(16));
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  JobId id = r->jobs.at(0).id;
  EXPECT_EQ(J(id).spec.resources.nodes, 2);
  EXPECT_EQ(State(id), JobState::kRunning);
  ASSERT_EQ(J(id).allocation.size(), 2u);
  EXPECT_EQ(J(id).allocation[0].gpus.size(), 8u);
  EXPECT_EQ(J(id).allocation[1].gpus.size(), 8u);
  // Before any node is known nothing can be judged: one node, as asked of none.
}

TEST_F(LaunchTest, WithNoNodeKnownARequestIsTakenAsItIs) {
  auto r = SubmitAs("ada", Gpus(64));
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(J(r->jobs.at(0).id).spec.resources.nodes, 1);
  EXPECT_EQ(State(r->jobs.at(0).id), JobState::kPending);
}

TEST_F(LaunchTest, RootsJobsGoOnlyWhereTheAgentRunsThem) {
  Join("strict", 8, /*refuses_root=*/true);
  auto r = SubmitAs("root", Gpus(1));
  ASSERT_FALSE(r.status.ok());  // no node runs them
  EXPECT_NE(r.status.message().find("--allow-root-jobs"), std::string::npos);
  Join("open", 2);
  // Fill "open": root's next job waits rather than going to "strict".
  JobId first = SubmitAs("root", Gpus(2))->jobs.at(0).id;
  EXPECT_EQ(J(first).allocation.at(0).node, "open");
  JobId second = SubmitAs("root", Gpus(1))->jobs.at(0).id;
  EXPECT_EQ(State(second), JobState::kPending);
  JobId other = SubmitAs("ada", Gpus(1))->jobs.at(0).id;
  EXPECT_EQ(State(other), JobState::kRunning);
  EXPECT_EQ(J(other).allocation.at(0).node, "strict");
  // Root's waiting job counts only the GPUs of nodes that run root's jobs, and says why the
  // others do not count (issue 38: "4 GPUs free" counted the refusing node's).
  std::string waits = J(second).reason_detail;
  EXPECT_NE(waits.find("0 GPUs free in pool default on nodes that run root's jobs (1 node "
                       "refuses them"),
            std::string::npos)
      << waits;
  // What no node that runs root's jobs can hold is refused, counting only those, and naming
  // the one that refuses.
  auto big = SubmitAs("root", Gpus(4));
  ASSERT_FALSE(big.status.ok());
  EXPECT_NE(big.status.message().find("the largest node that runs root's jobs holds 2 of them, 2 "
                                      "in all on such nodes"),
            std::string::npos)
      << big.status.message();
  EXPECT_NE(big.status.message().find("that may run root's jobs; 1 more refuses them (strict: "
                                      "`baton agent --allow-root-jobs` allows them)"),
            std::string::npos)
      << big.status.message();
}

TEST_F(LaunchTest, ALaunchFailureIsRequeuedElsewhereWithoutSpendingARetry) {
  Join("n1", 1);
  Join("n2", 1);
  // One job holds a node, so the next goes to the other.
  JobId blocker = SubmitAs("ada", Gpus(1))->jobs.at(0).id;
  const std::string held = J(blocker).allocation.at(0).node;
  const std::string free = held == "n1" ? "n2" : "n1";
  JobId job = SubmitAs("ada", Gpus(1), /*retries=*/0)->jobs.at(0).id;
  ASSERT_EQ(J(job).allocation.at(0).node, free);
  CannotStart(free, job, 0, "no such user 'ada' on node " + free);
  EXPECT_EQ(State(job), JobState::kPending);
  EXPECT_EQ(J(job).failures, 0);  // no retry spent, though it had none
  EXPECT_EQ(J(job).restarts, 1);
  EXPECT_EQ(J(job).launch_failed_on, std::vector<std::string>{free});
  EXPECT_NE(J(job).last_requeue.find("could not start on node " + free + ": no such user"),
            std::string::npos)
      << J(job).last_requeue;
  // It is not placed there again, though that node is free.
  Run(Tick{});
  EXPECT_EQ(State(job), JobState::kPending);
  // The blocker ends: it starts on the other node.
  Launches(held);
  Tell(held, JobEvent{.job = blocker, .kind = JobEvent::Kind::kStarted});
  Tell(held, JobEvent{.job = blocker, .kind = JobEvent::Kind::kExited});
  EXPECT_EQ(State(job), JobState::kRunning);
  EXPECT_EQ(J(job).allocation.at(0).node, held);
}

TEST_F(LaunchTest, AJobThatCannotStartAnywhereFailsWithTheAgentsWords) {
  Join("only", 1);
  JobId job = SubmitAs("ada", Gpus(1), /*retries=*/5)->jobs.at(0).id;
  CannotStart("only", job, 0, "cannot execute 'trian': No such file or directory");
  EXPECT_EQ(State(job), JobState::kFailed);
  EXPECT_EQ(J(job).failures, 0);
  EXPECT_EQ(J(job).exit_code, 126);
  EXPECT_NE(J(job).reason_detail.find("could not start on node only"), std::string::npos)
      << J(job).reason_detail;
  EXPECT_NE(J(job).reason_detail.find("cannot execute 'trian'"), std::string::npos)
      << J(job).reason_detail;
  EXPECT_FALSE(J(job).started_at.has_value());
}

TEST_F(LaunchTest, AJobFailsForGoodAfterThreeNodes) {
  for (const char* n : {"n1", "n2", "n3", "n4"}) Join(n, 1);
  JobId job = SubmitAs("ada", Gpus(1))->jobs.at(0).id;
  for (int attempt = 0; attempt < 3; ++attempt) {
    ASSERT_EQ(State(job), JobState::kRunning) << attempt;
    CannotStart(J(job).allocation.at(0).node, job, attempt, "cannot enter the working directory");
  }
  EXPECT_EQ(State(job), JobState::kFailed);
  EXPECT_EQ(J(job).launch_failed_on.size(), kLaunchNodesTried);
}

TEST_F(LaunchTest, ANodeWhereJobsInARowCouldNotStartIsDrained) {
  Join("hole", 1);
  Join("fine", 1);
  // Hold "fine" so that every new job is offered to "hole" first.
  JobId blocker = SubmitAs("ada", Gpus(1))->jobs.at(0).id;
  const std::string held = J(blocker).allocation.at(0).node;
  const std::string hole = held == "fine" ? "hole" : "fine";
  std::vector<JobId> victims;
  for (int i = 0; i < 3; ++i) {
    JobId id = SubmitAs("ada", Gpus(1))->jobs.at(0).id;
    ASSERT_EQ(J(id).allocation.at(0).node, hole);
    CannotStart(hole, id, 0, "jobs do not run as root on node " + hole);
    ASSERT_EQ(State(id), JobState::kPending);
    victims.push_back(id);
  }
  // Not drained yet: nothing shows the fault is the node's until the jobs start elsewhere.
  auto nodes = Run(ListNodes{});
  for (const NodeStatus& n : nodes->nodes) EXPECT_TRUE(n.drain_reason.empty()) << n.info.name;
  Launches(held);
  Tell(held, JobEvent{.job = blocker, .kind = JobEvent::Kind::kStarted});
  Tell(held, JobEvent{.job = blocker, .kind = JobEvent::Kind::kExited});
  for (JobId id : victims) {
    ASSERT_EQ(State(id), JobState::kRunning) << id.value;
    ASSERT_EQ(J(id).allocation.at(0).node, held);
    Tell(held, JobEvent{.job = id, .attempt = 1, .kind = JobEvent::Kind::kStarted});
    Tell(held, JobEvent{.job = id, .attempt = 1, .kind = JobEvent::Kind::kExited});
    EXPECT_EQ(State(id), JobState::kSucceeded);
  }
  nodes = Run(ListNodes{});
  bool drained = false;
  for (const NodeStatus& n : nodes->nodes) {
    if (n.info.name != hole) continue;
    drained = n.state == NodeState::kDrained;
    EXPECT_NE(n.drain_reason.find("3 jobs in a row could not start here"), std::string::npos)
        << n.drain_reason;
  }
  EXPECT_TRUE(drained);
  auto events = Run(GetEvents{});
  bool raised = false;
  for (const ClusterEvent& e : events->events)
    raised |= e.kind == EventKind::kNodeDrained && e.node == hole;
  EXPECT_TRUE(raised);
  // The drain is durable.
  auto snapshot = store_.Load();
  ASSERT_TRUE(snapshot);
  bool stored = false;
  for (const store::Drain& d : snapshot->drains) stored |= d.node == hole && d.gpu < 0;
  EXPECT_TRUE(stored);
}

TEST_F(LaunchTest, AFaultOfTheJobItselfDrainsNoNode) {
  for (const char* n : {"n1", "n2", "n3"}) Join(n, 1);
  // Three jobs with a typo fail on every node they try; none starts anywhere.
  for (int i = 0; i < 3; ++i) {
    JobId id = SubmitAs("ada", Gpus(1))->jobs.at(0).id;
    for (int attempt = 0; State(id) == JobState::kRunning; ++attempt)
      CannotStart(J(id).allocation.at(0).node, id, attempt, "cannot execute 'trian'");
    EXPECT_EQ(State(id), JobState::kFailed);
  }
  auto nodes = Run(ListNodes{});
  for (const NodeStatus& n : nodes->nodes) EXPECT_EQ(n.state, NodeState::kReady) << n.info.name;
}

}  // namespace
// A batch script on several nodes (issue 38): every node's launch names where the step servers
// listen (a port of its own, not the master port) and the key srun shows them; the output
// files go to the first node only. A job that is no batch script gets none of it.
TEST_F(LaunchTest, ABatchScriptsNodesKnowWhereItsStepServersListen) {
  Join("a", 2);
  Join("b", 2);
  JobSpec s = SubmittedSpec();
  s.command = {"/bin/bash", "-c", "srun hostname", "train.sh"};
  s.resources = Gpus(4);
  s.resources.nodes = 2;
  s.batch = s.slurm_env = true;
  s.tasks_per_node = 2;
  s.output_file = "slurm-%j.out";
  auto r = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}, .step_keys = {"k3y"}});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  const Job& job = J(r->jobs.at(0).id);
  ASSERT_EQ(job.allocation.size(), 2u);
  std::map<std::string, LaunchOrder> by_node;
  for (std::string n : {"a", "b"}) {
    std::vector<LaunchOrder> l = Launches(n);
    ASSERT_EQ(l.size(), 1u) << n;
    by_node[n] = l[0];
  }
  const LaunchOrder& first = by_node[job.allocation[0].node];
  const LaunchOrder& second = by_node[job.allocation[1].node];
  for (const LaunchOrder* l : {&first, &second}) {
    EXPECT_TRUE(l->batch);
    EXPECT_TRUE(l->slurm_env);
    EXPECT_EQ(l->step_key, "k3y");
    EXPECT_GT(l->step_port, 0);
    EXPECT_NE(l->step_port, l->master_port);
    EXPECT_EQ(l->tasks_per_node, 2);
    EXPECT_EQ(l->node_addrs,
              (std::vector<std::string>{job.allocation[0].node, job.allocation[1].node}));
  }
  EXPECT_EQ(first.output_file, "slurm-%j.out");
  EXPECT_EQ(second.output_file, "");
  EXPECT_EQ(first.step_port, second.step_port);
  EXPECT_EQ(job.step_key, "k3y");

  Join("c", 2);
  Join("d", 2);
  auto plain = SubmitAs("ada", Gpus(4));
  ASSERT_TRUE(plain.status.ok()) << plain.status.message();
  ASSERT_EQ(State(plain->jobs.at(0).id), JobState::kRunning);
  size_t launched = 0;
  for (std::string n : {"c", "d"}) {
    for (const LaunchOrder& l : Launches(n)) {
      ++launched;
      EXPECT_FALSE(l.batch);
      EXPECT_FALSE(l.slurm_env);
      EXPECT_EQ(l.step_port, 0);
      EXPECT_TRUE(l.node_addrs.empty());
    }
  }
  EXPECT_EQ(launched, 2u);
}

// A batch script's end is its job's: a step server still running when the script ended is
// stopped, and its SIGTERM does not make a succeeded script a failed job.
TEST_F(LaunchTest, ABatchScriptsEndIsItsJobsAndStopsItsStepServers) {
  Join("a", 2);
  Join("b", 2);
  JobSpec s = SubmittedSpec();
  s.command = {"/bin/sh", "-c", "true"};
  s.resources = Gpus(4);
  s.resources.nodes = 2;
  s.batch = true;
  auto r = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}, .step_keys = {"k"}});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  JobId id = r->jobs.at(0).id;
  const std::string first = J(id).allocation[0].node, second = J(id).allocation[1].node;
  Launches(first);
  Launches(second);
  Tell(first, JobEvent{.job = id, .kind = JobEvent::Kind::kStarted});
  Tell(second, JobEvent{.job = id, .kind = JobEvent::Kind::kStarted});
  Tell(first, JobEvent{.job = id, .kind = JobEvent::Kind::kExited, .exit_code = 0});
  EXPECT_EQ(State(id), JobState::kRunning);
  bool stopped = false;
  for (const Order& o : Orders(second)) stopped |= o.kind == Order::Kind::kStop && o.stop.job == id;
  EXPECT_TRUE(stopped) << "the step server the script could not reach is stopped";
  Tell(second, JobEvent{.job = id, .kind = JobEvent::Kind::kExited, .signal = SIGTERM});
  EXPECT_EQ(State(id), JobState::kSucceeded);
  EXPECT_EQ(J(id).exit_code, 0);
}

// `baton update` (issue 38, as scontrol update): a waiting job's fields change and it keeps
// waiting; a running job's time limit changes within its pool's maximum and its node is told;
// nothing else of a running job, and nothing of another user's.
TEST_F(LaunchTest, UpdateChangesAWaitingJobAndARunningJobsTimeLimit) {
  Join("a", 2);
  JobSpec s = SubmittedSpec();
  s.command = {"train"};
  s.resources = Gpus(2);
  s.time_limit = std::chrono::hours(1);
  JobId running = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}})->jobs.at(0).id;
  JobId waiting = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}})->jobs.at(0).id;
  ASSERT_EQ(State(running), JobState::kRunning);
  ASSERT_EQ(State(waiting), JobState::kPending);
  Launches("a");

  UpdateJob change{.caller = {"ada", false}, .id = waiting};
  change.fields.priority = Priority::kLow;  // (high would preempt the running one)
  change.fields.name = "renamed";
  change.fields.time_limit = std::chrono::hours(2);
  change.set = {"priority", "name", "time_limit"};
  auto r = Run(change);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(J(waiting).spec.priority, Priority::kLow);
  EXPECT_EQ(J(waiting).spec.name, "renamed");
  EXPECT_EQ(J(waiting).spec.time_limit, std::chrono::hours(2));
  EXPECT_EQ(State(waiting), JobState::kPending);
  EXPECT_TRUE(J(waiting).reason == WaitReason::kPriority ||
              J(waiting).reason == WaitReason::kResources)
      << "back in the queue: " << J(waiting).reason_detail;

  UpdateJob longer{.caller = {"ada", false}, .id = running};
  longer.fields.time_limit = std::chrono::hours(3);
  longer.set = {"time_limit"};
  ASSERT_TRUE(Run(longer).status.ok());
  std::vector<LaunchOrder> told = Launches("a");
  ASSERT_EQ(told.size(), 1u) << "the node is told the new limit";
  EXPECT_EQ(told[0].job, running);
  EXPECT_EQ(told[0].time_limit, std::chrono::hours(3));

  UpdateJob priority{.caller = {"ada", false}, .id = running};
  priority.fields.priority = Priority::kHigh;
  priority.set = {"priority"};
  auto refused = Run(priority);
  EXPECT_EQ(refused.status.code(), Code::kConflict);
  EXPECT_NE(refused.status.message().find("only its time limit and name change"), std::string::npos)
      << refused.status.message();

  UpdateJob others = longer;
  others.caller = {"eve", false};
  EXPECT_EQ(Run(others).status.code(), Code::kPermissionDenied);

  Policy p;
  p.pools["default"].max_time_limit = std::chrono::hours(4);
  ASSERT_TRUE(Run(SetPolicy{p}).status.ok());
  UpdateJob too_long = longer;
  too_long.fields.time_limit = std::chrono::hours(5);
  auto capped = Run(too_long);
  EXPECT_EQ(capped.status.code(), Code::kInvalidArgument);
  EXPECT_NE(capped.status.message().find("pool default allows at most 4h"), std::string::npos)
      << capped.status.message();
  EXPECT_EQ(J(running).spec.time_limit, std::chrono::hours(3)) << "nothing changed";

  UpdateJob self{.caller = {"ada", false}, .id = waiting};
  self.fields.after = {waiting};
  self.set = {"after"};
  EXPECT_EQ(Run(self).status.code(), Code::kInvalidArgument);
}

// An array's id changes every task that can take the change, all or none.
TEST_F(LaunchTest, UpdateOfAnArraysIdChangesEveryWaitingTask) {
  JobSpec s = SubmittedSpec();
  s.command = {"train"};
  s.array = "0-2";
  s.hold = true;
  JobId array = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}})->jobs.at(0).id;
  UpdateJob change{.caller = {"ada", false}, .id = array};
  change.fields.priority = Priority::kCritical;
  change.set = {"priority"};
  ASSERT_TRUE(Run(change).status.ok());
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(J(JobId{array.value + i}).spec.priority, Priority::kCritical) << i;
    EXPECT_EQ(State(JobId{array.value + i}), JobState::kHeld) << i;
  }
  change.fields.after = {JobId{999}};
  change.set = {"after"};
  EXPECT_EQ(Run(change).status.code(), Code::kInvalidArgument);
  EXPECT_TRUE(J(array).spec.after.empty());
}

// A failing array is one alert, then one more once it has ended saying how many of its tasks
// failed (issue 38: 35 tasks raised 35 alerts); a job that is no task alerts as before.
TEST_F(LaunchTest, AFailingArrayRaisesOneAlertAndOneWhenItHasEnded) {
  auto alerts = [&] {
    std::vector<std::string> out;
    for (const ClusterEvent& e : Run(GetEvents{}).value.events) {
      if (e.kind == EventKind::kJobFailed) out.push_back(e.message);
    }
    return out;
  };
  JobSpec gone = SubmittedSpec();
  gone.command = {"prepare"};
  gone.hold = true;
  JobId prepare = Run(SubmitJobs{.caller = {"ada", false}, .specs = {gone}})->jobs.at(0).id;
  JobAction cancel{.caller = {"ada", false}, .id = prepare, .kind = JobAction::Kind::kCancel};
  ASSERT_TRUE(Run(cancel).status.ok());
  // Five tasks that can never start (their dependency was cancelled): each fails at once.
  JobSpec s = SubmittedSpec();
  s.command = {"train"};
  s.array = "0-4";
  s.after = {prepare};
  JobId array = Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}})->jobs.at(0).id;
  for (int64_t i = 0; i < 5; ++i) ASSERT_EQ(State(JobId{array.value + i}), JobState::kFailed);
  std::vector<std::string> said = alerts();
  ASSERT_EQ(said.size(), 2u) << (said.empty() ? "" : said[0]);
  EXPECT_EQ(said[0].rfind("task " + array.ToString() + "_0 of array " + array.ToString(), 0), 0u)
      << said[0];
  EXPECT_NE(said[0].find("the array's other failures are counted"), std::string::npos) << said[0];
  EXPECT_NE(said[1].find("array " + array.ToString() +
                         " of ada has ended: 5 of its 5 "
                         "tasks failed"),
            std::string::npos)
      << said[1] << "\n"
      << said[0];
  // A job alone: its own alert.
  JobSpec single = SubmittedSpec();
  single.command = {"eval"};
  single.after = {prepare};
  Run(SubmitJobs{.caller = {"ada", false}, .specs = {single}});
  EXPECT_EQ(alerts().size(), 3u);
}

}  // namespace baton::control
