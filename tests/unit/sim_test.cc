// `baton sim`: trace and cluster files, and replays through the real controller.
#include <gtest/gtest.h>

#include <algorithm>

#include "codec/json_codec.h"
#include "sim/sacct.h"
#include "sim/simulator.h"
#include "sim/trace.h"

namespace baton::sim {
namespace {

TEST(Trace, ReadsTheColumnsOfTheContractInAnyOrder) {
  auto t = ParseTraceCsv(
      "# a comment\n"
      "gpus,submit_time,duration,user,project,priority,time_limit,nodes,name,gpu_type,preemptible\n"
      "2,0,3600,ana,vision,high,2h,1,\"train, v2\",H100,true\n"
      "0.5,30.5,90s,,,,,,,,\n",
      "t.csv");
  ASSERT_TRUE(t.has_value()) << t.error().message();
  ASSERT_EQ(t->size(), 2u);
  const TraceJob& a = (*t)[0];
  EXPECT_EQ(a.resources.milli_gpus, 2000);
  EXPECT_EQ(a.duration, std::chrono::hours(1));
  EXPECT_EQ(a.user, "ana");
  EXPECT_EQ(a.project, "vision");
  EXPECT_EQ(a.priority, Priority::kHigh);
  EXPECT_EQ(a.time_limit, std::chrono::hours(2));
  EXPECT_EQ(a.name, "train, v2");
  EXPECT_EQ(a.resources.gpu_type, "H100");
  EXPECT_EQ(a.preemptible, std::optional<bool>(true));
  EXPECT_EQ(a.line, 3);
  const TraceJob& b = (*t)[1];
  EXPECT_EQ(b.resources.milli_gpus, 500);
  EXPECT_EQ(b.submit, std::chrono::milliseconds(30'500));
  EXPECT_EQ(b.user, "user");
  EXPECT_EQ(b.project, "default");
  EXPECT_EQ(b.resources.nodes, 0);  // none named: chosen at submit, as `baton submit` does
}

TEST(Trace, ErrorsNameTheFileTheLineAndTheColumn) {
  struct Case {
    const char* csv;
    const char* message;
  } cases[] = {
      {"", "t.csv: empty"},
      {"submit_time,duration\n", "t.csv: line 1: gpus: required column missing"},
      {"submit_time,duration,gpus,colour\n", "line 1: colour: unknown column"},
      {"submit_time,duration,gpus\n0,60,1\n5,abc,1\n", "t.csv: line 3: duration:"},
      {"submit_time,duration,gpus\n-5,60,1\n", "line 2: submit_time:"},
      {"submit_time,duration,gpus\n0,60,-2\n", "line 2: gpus:"},
      {"submit_time,duration,gpus\n0,60\n", "line 2: 2 fields where the header has 3"},
      {"submit_time,duration,gpus,priority\n0,60,1,urgent\n", "line 2: priority:"},
      {"submit_time,duration,gpus,user\n0,60,1,../root\n", "line 2: user:"},
      {"submit_time,duration,gpus,nodes\n0,60,3,2\n", "line 2: resources.gpus: must divide evenly"},
      {"submit_time,duration,gpus,name\n0,60,1,\"open\n", "line 2: a quoted field is not closed"},
  };
  for (const auto& c : cases) {
    auto t = ParseTraceCsv(c.csv, "t.csv");
    ASSERT_FALSE(t.has_value()) << c.csv;
    EXPECT_NE(t.error().message().find(c.message), std::string::npos)
        << c.csv << " -> " << t.error().message();
  }
}

TEST(Trace, ThePhillyTraceIsRecognisedByItsHeader) {
  auto t = ParseTrace(
      "timestamp,duration,num_gpus,gpu_time,cluster\n"
      "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
      "2017-10-09 06:13:03,2951.0,12,35412.0,6214e9\n"
      "2017-10-09 06:14:03,10.5,128,1344.0,6214e9\n",
      "philly.csv");
  ASSERT_TRUE(t.has_value()) << t.error().message();
  ASSERT_EQ(t->size(), 3u);
  EXPECT_EQ((*t)[0].submit, std::chrono::seconds(48 * 60 + 52));  // from the earliest submit
  EXPECT_EQ((*t)[1].submit, std::chrono::seconds(0));
  EXPECT_EQ((*t)[0].project, "vc-11cb48");
  EXPECT_EQ((*t)[0].user, "vc-11cb48");
  EXPECT_EQ((*t)[1].resources.nodes, 2);   // 12 GPUs: two nodes of 6
  EXPECT_EQ((*t)[2].resources.nodes, 16);  // 128 GPUs: sixteen of 8
  EXPECT_EQ((*t)[2].duration, std::chrono::milliseconds(10'500));
  auto bad = ParseTrace(
      "timestamp,duration,num_gpus,gpu_time,cluster\n2017-13-09 7:1,66.0,1,66.0,x\n", "philly.csv");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("philly.csv: line 2: timestamp"), std::string::npos)
      << bad.error().message();
  // The shape is checked digit by digit, the ranges by the time's own parser.
  for (const char* time : {"2017-1-09 07:01:55", "2017-10-09T07:01:55", "2017-10-09 07:01:5x",
                           " 2017-10-09 07:01:5", "+017-10-09 07:01:55"}) {
    auto odd = ParseTrace(
        std::string("timestamp,duration,num_gpus,gpu_time,cluster\n") + time + ",66.0,1,66.0,x\n",
        "philly.csv");
    ASSERT_FALSE(odd.has_value()) << time;
    EXPECT_NE(
        odd.error().message().find("philly.csv: line 2: timestamp: not a time YYYY-MM-DD HH:MM:SS"),
        std::string::npos)
        << odd.error().message();
  }
  auto out_of_range = ParseTrace(
      "timestamp,duration,num_gpus,gpu_time,cluster\n2017-02-30 07:01:55,66.0,1,66.0,x\n",
      "philly.csv");
  ASSERT_FALSE(out_of_range.has_value());
  EXPECT_NE(out_of_range.error().message().find("philly.csv: line 2: timestamp"),
            std::string::npos);
}

TEST(Trace, AnAlibabaPodListIsRecognisedByItsHeader) {
  auto t = ParseTrace(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_"
      "time,scheduled_time\n"
      "p0,12000,16384,1,460,,LS,Running,100,700,100\n"
      "p1,6000,12288,2,1000,V100M16|V100M32,BE,Failed,200,260,\n"
      "p2,6000,12288,1,1000,,LS,Pending,300,,\n",
      "pods.csv");
  ASSERT_TRUE(t.has_value()) << t.error().message();
  ASSERT_EQ(t->size(), 2u);  // p2 has no deletion time: never ran, left out
  EXPECT_EQ((*t)[0].resources.milli_gpus, 460);
  EXPECT_EQ((*t)[0].duration, std::chrono::seconds(600));
  EXPECT_EQ((*t)[0].submit, std::chrono::seconds(100));
  EXPECT_EQ((*t)[1].resources.milli_gpus, 2000);
  EXPECT_EQ((*t)[1].resources.gpu_type,
            "V100");  // V100M16 or V100M32: their family, as Baton names it
  EXPECT_EQ((*t)[1].priority, Priority::kLow);
  EXPECT_EQ((*t)[1].project, "qos-BE");
}

// A time past what a duration holds is refused, naming the row and field, never wrapped into
// a negative duration (FuzzMutate.trace found one:
// tests/fuzz/corpus/trace/openb_time_past_int64.csv).
TEST(Trace, AnAlibabaPodTimePastAYearIsRefusedNotWrapped) {
  std::string header =
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_"
      "time,scheduled_time\n";
  auto far = ParseTrace(header + "p0,4000,8192,2,1000,,BE,Succeeded,60,6922337203685477580800,61\n",
                        "pods.csv");
  ASSERT_FALSE(far.has_value());
  EXPECT_NE(far.error().message().find("pods.csv: line 2: deletion_time"), std::string::npos)
      << far.error().message();
  auto late = ParseTrace(header + "p0,4000,8192,2,1000,,BE,Succeeded,1e12,1e12,\n", "pods.csv");
  ASSERT_FALSE(late.has_value());
  EXPECT_NE(late.error().message().find("creation_time"), std::string::npos)
      << late.error().message();
}

TEST(ClusterFile, NodeGroupsAndThePolicyKeys) {
  auto c = codec::DecodeClusterFile(R"(
nodes:
  - {name: dgx, count: 4, gpus: 8xH100-80GB, pool: prod}
  - {name: pcie, gpus: "4xA100-40GB:topo=pcie", mps: true}
projects:
  vision: {share: 2, guaranteed_gpus: 8}
)",
                                    "c.yaml");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  ASSERT_EQ(c->groups.size(), 2u);
  EXPECT_EQ(c->groups[0].count, 4);
  EXPECT_EQ(c->groups[0].pool, "prod");
  EXPECT_EQ(c->groups[1].count, 1);
  EXPECT_FALSE(c->groups[0].mps);
  EXPECT_TRUE(c->groups[1].mps);
  EXPECT_EQ(c->policy.Project("vision").guaranteed_milli, 8000);
  for (auto [yaml, message] :
       {std::pair{"projects: {}\n", "c.yaml: line 1: nodes: missing"},
        std::pair{"nodes:\n  - {name: a, gpus: 8xH100-80GB:topo=mesh}\n", "line 2: nodes[0].gpus"},
        std::pair{"nodes:\n  - {name: a, count: 0, gpus: 1xH100-80GB}\n", "nodes[0].count"},
        std::pair{"nodes:\n  - {name: a, gpus: 1xH100-80GB}\n  - {name: a, gpus: 1xH100-80GB}\n",
                  "line 3: nodes[1].name: named twice"},
        std::pair{"nodes: []\n", "nodes: must be a non-empty list"},
        std::pair{"nodes:\n  - {name: a, gpus: 1xH100-80GB, mps: often}\n", "nodes[0].mps"}}) {
    auto bad = codec::DecodeClusterFile(yaml, "c.yaml");
    ASSERT_FALSE(bad.has_value()) << yaml;
    EXPECT_NE(bad.error().message().find(message), std::string::npos)
        << yaml << " -> " << bad.error().message();
  }
}

// A cluster file may declare node templates for autoscaling, with the simulator as their
// provider: no provider of its own, a boot delay instead.
TEST(ClusterFile, AutoscalingTemplatesAndABootDelay) {
  auto c = codec::DecodeClusterFile(R"(
autoscaling:
  boot_delay: 90s
  idle_time: 5m
  templates:
    - {name: h100-spot, gpus: 8xH100-80GB, price: 31.5, spot: true, max: 8}
)",
                                    "c.yaml");
  ASSERT_TRUE(c.has_value()) << c.error().message();
  EXPECT_TRUE(c->groups.empty());  // every node an autoscaled one
  EXPECT_EQ(c->boot_delay, std::chrono::seconds(90));
  EXPECT_TRUE(c->policy.autoscaling.on());
  ASSERT_EQ(c->policy.autoscaling.templates.size(), 1u);
  EXPECT_EQ(c->policy.autoscaling.templates[0].max, 8);
  EXPECT_EQ(c->policy.autoscaling.idle_time, std::chrono::minutes(5));
  for (auto [yaml, message] :
       {std::pair{"autoscaling:\n  provider: /p\n  templates: [{name: a, gpus: 1xH100-80GB, max: "
                  "1}]\n",
                  "autoscaling.provider: unknown key"},
        std::pair{"autoscaling:\n  boot_delay: 2m\n", "autoscaling: has no templates"},
        std::pair{"autoscaling:\n  boot_delay: 2d\n  templates: [{name: a, gpus: 1xH100-80GB, "
                  "max: 1}]\n",
                  "autoscaling.boot_delay:"},
        std::pair{"autoscaling:\n  boot_delay: 15m\n  templates: [{name: a, gpus: 1xH100-80GB, "
                  "max: 1}]\n",
                  "line 2: autoscaling.boot_delay: must be shorter than resume_timeout (10m), "
                  "or every resume fails"}}) {
    auto bad = codec::DecodeClusterFile(yaml, "c.yaml");
    ASSERT_FALSE(bad.has_value()) << yaml;
    EXPECT_NE(bad.error().message().find(message), std::string::npos)
        << yaml << " -> " << bad.error().message();
  }
}

TraceJob Job(double submit_s, double duration_s, int64_t milli, Duration limit = Duration(0)) {
  TraceJob j;
  j.submit = std::chrono::milliseconds(static_cast<int64_t>(submit_s * 1000));
  j.duration = std::chrono::milliseconds(static_cast<int64_t>(duration_s * 1000));
  j.resources.milli_gpus = milli;
  j.time_limit = limit;
  return j;
}

TEST(Simulate, JobsRunForTheirDurationOnTheRealController) {
  std::vector<SimNode> nodes = {{.name = "n1", .gpus = "4xH100-80GB"}};
  std::vector<TraceJob> trace = {Job(0, 100, 4000), Job(10, 50, 2000),
                                 Job(20, 300, 1000, std::chrono::seconds(60))};
  auto r = Simulate(nodes, trace, Policy{});
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->jobs.size(), 3u);
  EXPECT_DOUBLE_EQ(r->jobs[0].start, 0);
  EXPECT_DOUBLE_EQ(r->jobs[0].end, 100);
  EXPECT_DOUBLE_EQ(r->jobs[1].start, 100);  // waited for the whole node
  EXPECT_DOUBLE_EQ(r->jobs[1].end, 150);
  EXPECT_DOUBLE_EQ(r->jobs[2].start, 100);
  EXPECT_DOUBLE_EQ(r->jobs[2].end, 160);  // stopped at its 60 s limit
  EXPECT_EQ(r->jobs[2].state, "timed_out");
  const Summary& s = r->summary;
  EXPECT_EQ(s.finished, 3);
  EXPECT_DOUBLE_EQ(s.makespan_s, 160);
  EXPECT_NEAR(s.avg_jct_s, (100.0 + 140.0 + 140.0) / 3, 1e-9);
  EXPECT_NEAR(s.avg_wait_s, (0.0 + 90.0 + 80.0) / 3, 1e-9);
  // GPU-seconds: 4 x 100 + 2 x 50 + 1 x 60 = 560 of 4 x 160 = 640.
  EXPECT_NEAR(s.gpu_utilization, 560.0 / 640.0, 1e-9);
}

TEST(Simulate, PreemptionAndRequeueHappenAsInProduction) {
  std::vector<SimNode> nodes = {{.name = "n1", .gpus = "8xH100-80GB"}};
  TraceJob low = Job(0, 1000, 8000);
  low.priority = Priority::kLow;
  TraceJob high = Job(100, 50, 2000);
  high.priority = Priority::kHigh;
  auto r = Simulate(nodes, {low, high}, Policy{});
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->summary.preemptions, 1);
  EXPECT_EQ(r->jobs[0].restarts, 1);
  EXPECT_EQ(r->jobs[0].state, "succeeded");
  EXPECT_DOUBLE_EQ(r->jobs[1].start, 100);
  // A simulated job checkpoints when preempted: 100 s done, the other 900 s after the high job.
  EXPECT_DOUBLE_EQ(r->jobs[0].end, 150 + 900);
}

TEST(Simulate, BackfillBeatsFifoAndTheSameTraceGivesTheSameResult) {
  std::vector<SimNode> nodes = {{.name = "n1", .gpus = "8xH100-80GB"}};
  // Half the node is busy for 1,000 s; a whole-node job waits for it; short one-GPU jobs
  // behind it fit in the free half and end long before: backfill runs them, FIFO does not.
  std::vector<TraceJob> trace = {Job(0, 1000, 4000, std::chrono::seconds(1000)),
                                 Job(10, 100, 8000, std::chrono::seconds(100))};
  for (int i = 0; i < 20; ++i) trace.push_back(Job(20 + i, 60, 1000, std::chrono::seconds(60)));
  auto fifo = Simulate(nodes, trace, *NamedPolicy("fifo", Policy{}));
  auto backfill = Simulate(nodes, trace, *NamedPolicy("backfill", Policy{}));
  ASSERT_TRUE(fifo.has_value() && backfill.has_value());
  EXPECT_LT(backfill->summary.avg_wait_s, fifo->summary.avg_wait_s);
  auto again = Simulate(nodes, trace, *NamedPolicy("backfill", Policy{}));
  ASSERT_EQ(again->jobs.size(), backfill->jobs.size());
  for (size_t i = 0; i < again->jobs.size(); ++i) {
    EXPECT_EQ(again->jobs[i].start, backfill->jobs[i].start);
    EXPECT_EQ(again->jobs[i].end, backfill->jobs[i].end);
  }
  EXPECT_FALSE(NamedPolicy("random", Policy{}).has_value());
}

// Issue 16: a job no set of nodes can ever hold is refused by the controller at submit, and the
// summary counts and names it instead of leaving it pending without a word.
TEST(Simulate, AJobThatFitsNowhereIsCountedAndNamedAndTheReplayStillEnds) {
  std::vector<SimNode> nodes = {{.name = "n1", .gpus = "2xH100-80GB"}};
  TraceJob big = Job(0, 10, 4000);
  big.name = "too-big";
  big.line = 7;
  TraceJob typed = Job(0, 10, 1000);
  typed.resources.gpu_type = "H200";
  auto r = Simulate(nodes, {Job(0, 10, 1000), big, typed}, Policy{});
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->summary.finished, 1);
  EXPECT_EQ(r->jobs[1].state, "refused");
  EXPECT_LT(r->jobs[1].start, 0);
  EXPECT_EQ(r->jobs[2].state, "refused");
  EXPECT_EQ(r->summary.unrunnable, 2);
  ASSERT_EQ(r->summary.unrunnable_jobs.size(), 2u);
  const Unrunnable& u = r->summary.unrunnable_jobs[0];
  EXPECT_EQ(u.name, "too-big");
  EXPECT_EQ(u.line, 7);
  EXPECT_NE(u.reason.find("1 node of 2xH100-80GB"), std::string::npos) << u.reason;
  EXPECT_NE(r->summary.unrunnable_jobs[1].reason.find("H200"), std::string::npos);
}

// The default policy's least attained service (issue 41): a job past 10 GPU-hours yields its
// GPU to a new job once, then runs to its end; Tiresias' own (`las`, no budget) stops it for
// every new job.
TEST(Simulate, UnderTheDefaultPolicyALongJobYieldsToANewOneOnceThenRunsToItsEnd) {
  std::vector<SimNode> nodes = {{.name = "n1", .gpus = "1xH100-80GB"}};
  std::vector<TraceJob> trace = {Job(0, 100 * 3600, 1000)};
  for (int i = 1; i <= 5; ++i) trace.push_back(Job(i * 11 * 3600, 600, 1000));
  auto d = Simulate(nodes, trace, Policy{});
  ASSERT_TRUE(d.has_value()) << d.error().message();
  EXPECT_EQ(d->summary.preemptions, 1);
  EXPECT_EQ(d->summary.preempted_jobs, 1);  // per job: the long one, once (its budget)
  EXPECT_EQ(d->summary.max_job_preemptions, 1);
  EXPECT_EQ(d->summary.finished, 6);
  EXPECT_NEAR(d->jobs[1].start, 11 * 3600, 60);  // the first new job, at once
  EXPECT_GT(d->jobs[2].start, 100 * 3600);       // the next waits for the long one's end
  auto las_policy = NamedPolicy("las", Policy{});
  ASSERT_TRUE(las_policy.has_value());
  auto las = Simulate(nodes, trace, *las_policy);
  ASSERT_TRUE(las.has_value()) << las.error().message();
  EXPECT_EQ(las->summary.preemptions, 5);
  EXPECT_EQ(las->summary.preempted_jobs, 1);  // all five were the long job's
  EXPECT_EQ(las->summary.max_job_preemptions, 5);
  EXPECT_NEAR(las->jobs[2].start, 22 * 3600, 60);
}

// A trace row means what `baton submit` with the same fields means (issue 41): 16 GPUs and no
// `nodes` on nodes of 8 GPUs is a gang over two whole nodes, as `baton submit -g 16`; with
// `nodes` 1 (`-N 1 -g 16`) it can never run.
TEST(Simulate, ATraceRowThatNamesNoNodesGoesOnTheFewestWholeNodesAsASubmitDoes) {
  auto t = ParseTraceCsv(
      "submit_time,duration,gpus,nodes,name\n"
      "0,100,16,,spread\n"
      "0,100,16,1,one-node\n",
      "t.csv");
  ASSERT_TRUE(t.has_value()) << t.error().message();
  std::vector<SimNode> nodes = {{.name = "n1", .gpus = "8xH100-80GB"},
                                {.name = "n2", .gpus = "8xH100-80GB"}};
  auto r = Simulate(nodes, *t, Policy{});
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->jobs[0].state, "succeeded");
  EXPECT_DOUBLE_EQ(r->jobs[0].start, 0);
  EXPECT_DOUBLE_EQ(r->jobs[0].end, 100);
  EXPECT_NEAR(r->summary.gpu_utilization, 1.0, 1e-9);  // both nodes' 16 GPUs for 100 s
  EXPECT_EQ(r->jobs[1].state, "refused");
  ASSERT_EQ(r->summary.unrunnable_jobs.size(), 1u);
  EXPECT_NE(r->summary.unrunnable_jobs[0].reason.find("no set of nodes can ever hold"),
            std::string::npos)
      << r->summary.unrunnable_jobs[0].reason;

  // Written back, a row with no nodes still names none.
  auto back = ParseTraceCsv(TraceCsv(*t), "back.csv");
  ASSERT_TRUE(back.has_value()) << back.error().message();
  EXPECT_EQ((*back)[0].resources.nodes, 0);
  EXPECT_EQ((*back)[1].resources.nodes, 1);
}

// With autoscaling, the simulator is the provider: a job no node holds waits for a node's
// resume and boot, each node is suspended after its idle time, and the summary says what the
// nodes cost.
TEST(Simulate, AutoscaledNodesBootForTheJobsAndAreSuspendedWhenIdle) {
  Policy p;
  p.autoscaling.provider = {"(baton sim)"};
  p.autoscaling.idle_time = std::chrono::minutes(5);
  p.autoscaling.templates = {NodeTemplate{.name = "h100",
                                          .gpu_spec = "8xH100-80GB",
                                          .gpus = 8,
                                          .gpu_model = "H100-80GB",
                                          .gpu_memory_bytes = 80LL << 30,
                                          .price_per_hour = 36,  // 0.01 a second
                                          .max = 2}};
  std::vector<TraceJob> trace = {Job(0, 1000, 8000), Job(100, 500, 8000)};
  auto r = Simulate({}, trace, p,
                    SimOptions{.decisions = true, .boot_delay = std::chrono::seconds(120)});
  ASSERT_TRUE(r.has_value()) << r.error().message();
  // Each job's node is resumed at its submit's scan and boots 120 s: the first a second after
  // the submit (the scan that asked the provider what it had was then), the second at once
  // (no scan in the second before it).
  EXPECT_DOUBLE_EQ(r->jobs[0].start, 121);
  EXPECT_DOUBLE_EQ(r->jobs[1].start, 220);
  EXPECT_EQ(r->summary.finished, 2);
  EXPECT_EQ(r->summary.resumed_nodes, 2);
  auto has = [&](const std::string& line) {
    return std::find(r->decisions.begin(), r->decisions.end(), line) != r->decisions.end();
  };
  EXPECT_TRUE(has("1.000 resume h100-1"));
  EXPECT_TRUE(has("121.000 register h100-1"));
  EXPECT_TRUE(has("100.000 resume h100-2"));
  // Each suspended once idle for 5 minutes (to within the 10 s scans): h100-2 after 720 s.
  std::vector<std::string> suspends;
  for (const std::string& d : r->decisions) {
    if (d.find(" suspend ") != std::string::npos) suspends.push_back(d);
  }
  ASSERT_EQ(suspends.size(), 2u) << ::testing::PrintToString(r->decisions);
  const double h2_gone = std::stod(suspends[0]);
  const double h1_gone = std::stod(suspends[1]);
  EXPECT_NE(suspends[0].find("h100-2"), std::string::npos);
  EXPECT_GE(h2_gone, 720 + 300);
  EXPECT_LE(h2_gone, 720 + 300 + 20);
  EXPECT_GE(h1_gone, 1121 + 300);
  EXPECT_LE(h1_gone, 1121 + 300 + 20);
  ASSERT_TRUE(r->summary.nodes.has_value());
  const NodeCosts& n = *r->summary.nodes;
  EXPECT_NEAR(n.node_seconds, (h1_gone - 1) + (h2_gone - 100), 1e-6);
  EXPECT_NEAR(n.cost, n.node_seconds * 0.01, 1e-6);
  // With no job: the two boots (240 s) and the idle times before the suspends.
  EXPECT_NEAR(n.idle_cost, (240 + (h2_gone - 720) + (h1_gone - 1121)) * 0.01, 0.2);
  ASSERT_EQ(n.templates.size(), 1u);
  EXPECT_EQ(n.templates[0].peak_nodes, 2);
  EXPECT_NEAR(n.fixed_cost, 2 * 0.01 * n.window_seconds, 1e-6);
  EXPECT_GT(n.saved(), 0);
  // Utilisation is over the GPUs up: 8 x (1000 + 500) of what the nodes offered once booted.
  EXPECT_GT(r->summary.gpu_utilization, 0.5);
  EXPECT_LE(r->summary.gpu_utilization, 1.0);
}

}  // namespace
}  // namespace baton::sim

namespace baton::sim {
namespace {

// MIG on demand in `baton sim` (issue 42): the cluster file says which nodes' MIG GPUs are
// re-planned and how long a change takes; the real controller's windows cut the GPUs for the
// trace's profiles, the simulated agents make each change after its delay and register again,
// and the summary counts the changes and the free slices' fragmentation over time.
TEST(Simulate, MigGpusAreCutForTheQueuesProfilesAfterTheirDelayAndTheFragmentationIsReported) {
  auto file = codec::DecodeClusterFile(R"(
nodes:
  - {name: a100, count: 2, gpus: "1xA100-80GB:mig=7g.80gb", mig_reconfigure: true, mig_delay: 20s}
scheduling: {mig_window: 10s}
)",
                                       "c.yaml");
  ASSERT_TRUE(file.has_value()) << file.error().message();
  ASSERT_TRUE(file->groups[0].mig_reconfigure);
  EXPECT_EQ(file->groups[0].mig_delay, std::chrono::seconds(20));
  EXPECT_EQ(file->policy.mig_window, std::chrono::seconds(10));
  std::vector<SimNode> nodes = {{.name = "a100-1",
                                 .gpus = "1xA100-80GB:mig=7g.80gb",
                                 .mig_reconfigure = true,
                                 .mig_delay = std::chrono::seconds(20)},
                                {.name = "a100-2",
                                 .gpus = "1xA100-80GB:mig=7g.80gb",
                                 .mig_reconfigure = true,
                                 .mig_delay = std::chrono::seconds(20)}};
  std::vector<TraceJob> trace;
  for (int i = 0; i < 6; ++i) {
    TraceJob j = Job(i, 600, 1000);
    j.resources.gpu_type = i % 2 == 0 ? "3g.40gb" : "1g.10gb";
    trace.push_back(j);
  }
  TraceJob whole = Job(0, 100, 1000);
  whole.resources.gpu_type = "7g.80gb";
  trace.push_back(whole);
  auto r = Simulate(nodes, trace, file->policy);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  const Summary& s = r->summary;
  EXPECT_EQ(s.finished, 7);
  EXPECT_EQ(s.unrunnable, 0);
  EXPECT_EQ(s.mig_gpus, 2);
  EXPECT_GE(s.mig_changes, 2);
  EXPECT_GE(s.mig_fragmentation, 0.0);
  EXPECT_LE(s.mig_fragmentation, 1.0);
  // The whole-GPU job ran on an instance as it was; the others waited for a window and a
  // change's delay at least.
  EXPECT_DOUBLE_EQ(r->jobs[6].start, 0);
  for (int i = 0; i < 6; ++i) EXPECT_GE(r->jobs[i].start, 20.0) << i;

  // A longer change costs the jobs that wait for it.
  for (SimNode& n : nodes) n.mig_delay = std::chrono::seconds(120);
  auto slow = Simulate(nodes, trace, file->policy);
  ASSERT_TRUE(slow.has_value());
  EXPECT_EQ(slow->summary.finished, 7);
  EXPECT_GT(slow->summary.avg_wait_s, s.avg_wait_s);

  for (auto [yaml, message] :
       {std::pair{"nodes:\n  - {name: a, gpus: 1xA100-80GB, mig_reconfigure: true}\n",
                  "nodes[0].mig_reconfigure: its GPUs are not in MIG mode"},
        std::pair{"nodes:\n  - {name: a, gpus: 1xA100-80GB:mig=7g.80gb, mig_delay: 5s}\n",
                  "nodes[0].mig_delay: is for mig_reconfigure: true"}}) {
    auto bad = codec::DecodeClusterFile(yaml, "c.yaml");
    ASSERT_FALSE(bad.has_value()) << yaml;
    EXPECT_NE(bad.error().message().find(message), std::string::npos)
        << yaml << " -> " << bad.error().message();
  }
}

}  // namespace
}  // namespace baton::sim
