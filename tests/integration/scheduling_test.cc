// Scheduling through the real binary: the configuration file, the queue, drains and
// preemption, as an admin and a researcher meet them.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "harness.h"

namespace baton::testing {
namespace {

// Polls job `id` until `pred` holds for its JSON (or ~20 s pass); returns the last JSON.
template <class Pred>
std::string Until(net::HttpClient& c, int64_t id, Pred pred) {
  std::string job;
  for (int i = 0; i < 400; ++i) {
    job = GetJob(c, id);
    if (pred(job)) return job;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return job;
}

std::string WriteConfig(const TempDir& dir, const std::string& text) {
  std::string path = dir.path() + "/baton.yaml";
  std::ofstream(path) << text;
  return path;
}

TEST(Scheduling, ABadConfigurationIsRefusedWithFileLineAndKey) {
  TempDir dir;
  std::string path = WriteConfig(dir, "projects:\n  vision: {share: many}\n");
  BatonProcess baton(dir.path() + "/running");
  CliResult r = RunCli(
      baton, {"up", "--data", dir.path() + "/other", "--listen", "127.0.0.1:0", "--config", path});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("baton.yaml: line 2: projects.vision.share: must be a number"),
            std::string::npos)
      << r.out;
}

TEST(Scheduling, PoolLimitsFromTheConfigurationApplyAtSubmit) {
  TempDir dir;
  std::string path =
      WriteConfig(dir, "pools:\n  default: {default_time_limit: 2h, max_time_limit: 4h}\n");
  BatonProcess baton(dir.path(), {"--config", path});
  auto c = baton.Client();
  auto r = c->Request("POST", "/v1/jobs", R"({"command": ["true"], "time_limit": "10h"})");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_NE(r->body.find("pool default allows at most 4h"), std::string::npos) << r->body;
  int64_t id = Submit(*c, R"({"command": ["true"]})");
  EXPECT_EQ(std::stod(JsonField(GetJob(*c, id), "time_limit_s")), 7200.0);
}

TEST(Scheduling, TheQueueShowsOrderReasonsAndEstimatedStarts) {
  TempDir dir;
  BatonProcess baton(dir.path(), {"--gpus", "2xH100-80GB"});
  auto c = baton.Client();
  int64_t busy = Submit(
      *c,
      R"({"command": ["sleep", "30"], "resources": {"gpus": 2}, "priority": "critical", "time_limit": "1h"})");
  Until(*c, busy, [](const std::string& j) { return JsonString(j, "state") == "running"; });
  int64_t low = Submit(
      *c,
      R"({"command": ["true"], "resources": {"gpus": 2}, "priority": "low", "time_limit": "5m"})");
  int64_t high = Submit(
      *c,
      R"({"command": ["true"], "resources": {"gpus": 2}, "priority": "high", "time_limit": "5m"})");
  // Both are listed at once; a full pass (within a few seconds) orders them with reasons.
  std::string body;
  for (int i = 0; i < 100; ++i) {
    auto q = c->Request("GET", "/v1/queue");
    ASSERT_TRUE(q.has_value());
    body = q->body;
    size_t h = body.find("\"id\":" + std::to_string(high)),
           l = body.find("\"id\":" + std::to_string(low));
    if (h != std::string::npos && l != std::string::npos && h < l &&
        body.substr(h, l - h).find("\"estimated_start\":\"20") != std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  size_t at_high = body.find("\"id\":" + std::to_string(high));
  size_t at_low = body.find("\"id\":" + std::to_string(low));
  ASSERT_NE(at_high, std::string::npos) << body;
  ASSERT_NE(at_low, std::string::npos) << body;
  EXPECT_LT(at_high, at_low) << body;
  EXPECT_NE(body.find("\"estimated_start\":\"20"), std::string::npos) << body;
  CliResult table = RunCli(baton, {"queue"});
  EXPECT_EQ(table.exit_code, 0) << table.out;
  EXPECT_NE(table.out.find("EXPECTED START"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("waiting for 2 GPUs"), std::string::npos) << table.out;
  CliResult show = RunCli(baton, {"show", std::to_string(high)});
  EXPECT_NE(show.out.find("expected start"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("queue position 1 (score"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("fair share"), std::string::npos) << show.out;
  // Every factor the score sums, LAS among them: 1 for a job that never ran.
  EXPECT_NE(show.out.find(", LAS 1.00, each weighted)"), std::string::npos) << show.out;
  RunCli(baton, {"cancel", std::to_string(busy), std::to_string(low), std::to_string(high)});
}

TEST(Scheduling, DrainAndUndrainThroughTheCli) {
  TempDir dir;
  BatonProcess baton(dir.path(), {"--gpus", "2xH100-80GB"});
  auto c = baton.Client();
  std::string node;
  for (int i = 0; i < 200 && node.empty(); ++i) {  // the local agent registers shortly after start
    auto nodes = c->Request("GET", "/v1/nodes");
    ASSERT_TRUE(nodes.has_value());
    boost::json::value v = boost::json::parse(nodes->body);
    const auto& list = v.at("nodes").as_array();
    if (!list.empty()) {
      node = std::string(list[0].at("name").as_string());
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ASSERT_FALSE(node.empty());

  CliResult d = RunCli(baton, {"drain", node + "/1", "--reason", "ECC errors"});
  ASSERT_EQ(d.exit_code, 0) << d.out;
  int64_t two = Submit(*c, R"({"command": ["true"], "resources": {"gpus": 2}})");
  int64_t one = Submit(
      *c,
      R"({"command": ["sh", "-c", "echo gpu=$CUDA_VISIBLE_DEVICES"], "resources": {"gpus": 1}})");
  EXPECT_EQ(JsonString(WaitForJob(*c, one), "state"), "succeeded");
  EXPECT_EQ(JsonString(GetJob(*c, two), "state"), "pending");
  CliResult list = RunCli(baton, {"nodes"});
  EXPECT_NE(list.out.find("GPU 1: ECC errors"), std::string::npos) << list.out;

  EXPECT_EQ(RunCli(baton, {"drain", node + "/x"}).exit_code, 2);
  EXPECT_EQ(RunCli(baton, {"drain", "no-such-node"}).exit_code, 1);
  ASSERT_EQ(RunCli(baton, {"undrain", node + "/1"}).exit_code, 0);
  EXPECT_EQ(JsonString(WaitForJob(*c, two), "state"), "succeeded");

  // A drain survives a restart of the server.
  ASSERT_EQ(RunCli(baton, {"drain", node, "--reason", "maintenance"}).exit_code, 0);
  baton.Stop();
  baton.Start();
  auto again = baton.Client();
  auto after = again->Request("GET", "/v1/nodes");
  ASSERT_TRUE(after.has_value());
  EXPECT_NE(after->body.find("\"drain_reason\":\"maintenance\""), std::string::npos) << after->body;
  int64_t waits = Submit(*again, R"({"command": ["true"]})");
  EXPECT_NE(WaitUntilWaiting(*again, waits, "resources"), "") << GetJob(*again, waits);
  ASSERT_EQ(RunCli(baton, {"undrain", node}).exit_code, 0);
  EXPECT_EQ(JsonString(WaitForJob(*again, waits), "state"), "succeeded");
}

TEST(Scheduling, AHighPriorityJobPreemptsALowOneWhichComesBack) {
  TempDir dir;
  std::string path = WriteConfig(dir, "scheduling: {preempt_grace: 1s}\n");
  BatonProcess baton(dir.path(), {"--gpus", "2xH100-80GB", "--config", path});
  auto c = baton.Client();
  int64_t low =
      Submit(*c, R"({"command": ["sleep", "60"], "resources": {"gpus": 2}, "priority": "low"})");
  Until(*c, low, [](const std::string& j) { return JsonString(j, "state") == "running"; });
  int64_t high =
      Submit(*c, R"({"command": ["true"], "resources": {"gpus": 1}, "priority": "high"})");
  EXPECT_EQ(JsonString(WaitForJob(*c, high), "state"), "succeeded");
  std::string victim = Until(*c, low, [](const std::string& j) {
    return JsonField(j, "restarts") == "1" && JsonString(j, "state") == "running";
  });
  EXPECT_EQ(JsonField(victim, "restarts"), "1") << victim;
  EXPECT_NE(victim.find("preempted (priority) for job " + std::to_string(high)), std::string::npos)
      << victim;
  RunCli(baton, {"cancel", std::to_string(low)});
}

TEST(Scheduling, AJobOnAMigSliceSeesOnlyThatInstance) {
  TempDir dir;
  BatonProcess baton(dir.path(), {"--gpus", "1xA100-80GB:mig=3g.40gb+2g.20gb+1g.10gb*2"});
  auto c = baton.Client();
  int64_t id = Submit(
      *c,
      R"({"command": "echo dev=$CUDA_VISIBLE_DEVICES", "resources": {"gpus": 1, "gpu_type": "1g.10gb"}})");
  std::string job = WaitForJob(*c, id);
  ASSERT_EQ(JsonString(job, "state"), "succeeded") << job;
  std::string log;
  for (int i = 0; i < 200 && log.find("dev=") == std::string::npos; ++i) {
    auto r = c->Request("GET", "/v1/jobs/" + std::to_string(id) + "/logs");
    if (r) log = r->body;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_NE(log.find("dev=MIG-"), std::string::npos) << log;
  EXPECT_EQ(log.find(","), std::string::npos) << log;  // one instance, nothing else
  // A request for a whole GPU cannot be met by slices: it is refused at submit, naming what
  // the node has (issue 16: no job waits for ever on a request no node can hold).
  auto whole = c->Request("POST", "/v1/jobs", R"({"command": ["true"], "resources": {"gpus": 1}})");
  ASSERT_TRUE(whole) << whole.error().message();
  EXPECT_EQ(whole->status, 400) << whole->body;
  EXPECT_NE(whole->body.find("resources.gpu_type: no whole GPU (a MIG instance is asked for"),
            std::string::npos)
      << whole->body;
  EXPECT_NE(whole->body.find("A100-80GB-MIG-1g.10gb"), std::string::npos) << whole->body;
}

TEST(Scheduling, AJobsCheckpointLineMakesItTheCheaperVictim) {
  TempDir dir;
  std::string path = WriteConfig(dir, "scheduling: {preempt_grace: 1s}\n");
  BatonProcess baton(dir.path(), {"--gpus", "2xH100-80GB", "--config", path});
  auto c = baton.Client();
  // `saver` starts first, so it has run longer; but 3 s in it reports a checkpoint, and then
  // preempting it loses less than preempting `plain`, which started later and never saved.
  int64_t saver = Submit(*c, R"({"command": ["sh", "-c",
      "sleep 3; echo '{\"checkpoint\": \"ck-1\", \"step\": 10}' >> $BATON_METRICS_FILE; sleep 60"],
      "priority": "low", "resources": {"gpus": 1}})");
  Until(*c, saver, [](const std::string& j) { return JsonString(j, "state") == "running"; });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  int64_t plain =
      Submit(*c, R"({"command": ["sleep", "60"], "priority": "low", "resources": {"gpus": 1}})");
  Until(*c, plain, [](const std::string& j) { return JsonString(j, "state") == "running"; });
  // Its checkpoint reported (not a fixed wait that assumes it was).
  Until(*c, saver, [](const std::string& j) { return !JsonString(j, "last_checkpoint").empty(); });
  int64_t high =
      Submit(*c, R"({"command": ["true"], "priority": "high", "resources": {"gpus": 1}})");
  EXPECT_EQ(JsonString(WaitForJob(*c, high), "state"), "succeeded");
  std::string s =
      Until(*c, saver, [](const std::string& j) { return JsonField(j, "restarts") == "1"; });
  EXPECT_EQ(JsonField(s, "restarts"), "1") << s;
  EXPECT_EQ(JsonField(GetJob(*c, plain), "restarts"), "0");
  RunCli(baton, {"cancel", std::to_string(plain), std::to_string(saver)});
}

TEST(Sim, ReplaysATraceAndWritesItsReport) {
  TempDir dir;
  BatonProcess baton(dir.path() + "/server");
  std::ofstream(dir.path() + "/cluster.yaml")
      << "nodes:\n  - {name: dgx, count: 2, gpus: 8xH100-80GB}\n";
  std::ofstream(dir.path() + "/trace.csv")
      << "submit_time,duration,gpus,user\n0,600,8,ana\n0,600,8,bo\n10,60,8,ana\n";
  CliResult r = RunCli(baton, {"sim", "--cluster", dir.path() + "/cluster.yaml", "--trace",
                               dir.path() + "/trace.csv", "--policy", "fifo", "--json", "--report",
                               dir.path() + "/report"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::string json = r.out.substr(r.out.find('{'));
  EXPECT_EQ(JsonField(json, "jobs"), "3") << json;
  EXPECT_EQ(std::stod(JsonField(json, "makespan_s")), 660.0) << json;  // the third waits 600 s
  EXPECT_NEAR(std::stod(JsonField(json, "avg_wait_s")), 590.0 / 3, 0.01) << json;
  for (const char* key :
       {"avg_jct_s", "p50_jct_s", "p95_jct_s", "gpu_utilization", "preemptions", "jain_fairness"}) {
    EXPECT_FALSE(JsonField(json, key).empty()) << key << " in " << json;
  }
  std::ifstream csv(dir.path() + "/report/jobs.csv");
  std::string header, first;
  std::getline(csv, header);
  std::getline(csv, first);
  EXPECT_EQ(header,
            "id,name,user,project,gpus,submit_time,start_time,end_time,restarts,state,policy");
  EXPECT_EQ(first, "1,,ana,default,8,0.000,0.000,600.000,0,succeeded,fifo");
  for (const char* svg : {"utilisation.svg", "queue.svg", "jct_cdf.svg"}) {
    std::ifstream in(dir.path() + "/report/" + svg);
    std::string head;
    std::getline(in, head);
    EXPECT_EQ(head.rfind("<svg", 0), 0u) << svg << ": " << head;
  }

  std::ofstream(dir.path() + "/bad.csv") << "submit_time,duration,gpus\n0,sixty,1\n";
  CliResult bad = RunCli(baton, {"sim", "--cluster", dir.path() + "/cluster.yaml", "--trace",
                                 dir.path() + "/bad.csv"});
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("bad.csv: line 2: duration"), std::string::npos) << bad.out;
}

// "What would our month have cost with autoscaling?": a cluster file of node templates and a
// boot delay; the summary gives node-hours, cost and waiting, and the same trace on a fixed
// cluster of the peak for comparison.
TEST(Sim, ReportsWhatAutoscaledNodesCostAgainstAFixedCluster) {
  TempDir dir;
  BatonProcess baton(dir.path() + "/server");
  std::ofstream(dir.path() + "/cluster.yaml")
      << "autoscaling:\n  boot_delay: 3m\n  idle_time: 10m\n  templates:\n"
         "    - {name: h100-spot, gpus: 8xH100-80GB, price: 36, spot: true, "
         "on_demand_price: 72, max: 4}\n"
         "gpu_catalog: {currency: EUR}\n";
  // A file whose own node has a template node's name: the fixed cluster names its nodes apart.
  std::ofstream(dir.path() + "/both.yaml")
      << "nodes:\n  - {name: h100-spot-1, gpus: 1xL4-24GB}\n"
         "autoscaling:\n  templates:\n"
         "    - {name: h100-spot, gpus: 8xH100-80GB, price: 36, spot: true, max: 4}\n";
  // A busy hour, then a quiet day: a fixed cluster sized for the hour idles all day.
  std::ofstream(dir.path() + "/trace.csv") << "submit_time,duration,gpus,user\n"
                                              "0,3600,8,ana\n0,3600,8,bo\n60,3600,8,cy\n"
                                              "90000,600,8,ana\n";
  CliResult text = RunCli(baton, {"sim", "--cluster", dir.path() + "/cluster.yaml", "--trace",
                                  dir.path() + "/trace.csv"});
  ASSERT_EQ(text.exit_code, 0) << text.out;
  EXPECT_NE(text.out.find("autoscaling: 4 nodes resumed;"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("a fixed cluster of the peak (3 nodes up from the start, on demand)"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find(" EUR"), std::string::npos) << text.out;
  CliResult r =
      RunCli(baton, {"sim", "--cluster", dir.path() + "/cluster.yaml", "--trace",
                     dir.path() + "/trace.csv", "--json", "--report", dir.path() + "/report"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string all = r.out.substr(r.out.find('{'));
  EXPECT_EQ(JsonField(all, "finished"), "4") << all;
  // Each job waited for its node's boot (3 minutes) from its submit's scan: at once, or a
  // second on for the first two (the scan before was the one that asked what the provider
  // had); on the fixed cluster of 3 nodes none waited.
  EXPECT_NEAR(std::stod(JsonField(all, "avg_wait_s")), (181 + 181 + 180 + 180) / 4.0, 1e-9) << all;
  const std::string json = JsonField(all, "autoscaling");
  ASSERT_FALSE(json.empty()) << all;
  EXPECT_EQ(JsonField(json, "resumed_nodes"), "4") << json;
  EXPECT_EQ(JsonField(json, "fixed_nodes"), "3") << json;
  EXPECT_NEAR(std::stod(JsonField(json, "fixed_avg_wait_s")), 0, 1e-9) << json;
  // Spot at half the on-demand price and gone when idle: far cheaper than 3 nodes for the day.
  const double cost = std::stod(JsonField(json, "cost"));
  const double fixed = std::stod(JsonField(json, "fixed_cost"));
  EXPECT_GT(cost, 3 * 36.0) << json;  // 3 node-hours and more
  EXPECT_LT(cost, 6 * 36.0) << json;
  EXPECT_GT(fixed, 3 * 72 * 25.0) << json;  // 3 on-demand nodes for 25 hours and more
  EXPECT_NEAR(std::stod(JsonField(json, "saved")), fixed - cost, 0.01) << json;
  std::ofstream(dir.path() + "/both.csv")
      << "submit_time,duration,gpus,gpu_type,user\n0,3600,8,H100,ana\n0,600,1,L4,bo\n";
  CliResult both = RunCli(baton, {"sim", "--cluster", dir.path() + "/both.yaml", "--trace",
                                  dir.path() + "/both.csv", "--json"});
  ASSERT_EQ(both.exit_code, 0) << both.out;
  const std::string both_all = both.out.substr(both.out.find('{'));
  EXPECT_EQ(JsonField(both_all, "finished"), "2") << both.out;
  const std::string scaled = JsonField(both_all, "autoscaling");
  EXPECT_EQ(JsonField(scaled, "fixed_nodes"), "1") << both.out;
  EXPECT_EQ(JsonField(scaled, "fixed_finished"), "2") << both.out;  // the L4 node kept too
  std::ifstream summary(dir.path() + "/report/summary.json");
  std::string line;
  std::getline(summary, line);
  EXPECT_NE(line.find("\"autoscaling\": {\"resumed_nodes\": 4"), std::string::npos) << line;
}

// Policies side by side in one run: a summary line each, one report with a row per job and
// policy; a Slurm site's sacct history replays directly and converts to the plain CSV; an
// Alibaba openb node list serves as the cluster.
TEST(Sim, ComparesPoliciesReplaysSacctAndReadsANodeList) {
  TempDir dir;
  BatonProcess baton(dir.path() + "/server");
  std::ofstream(dir.path() + "/nodes.csv")
      << "sn,cpu_milli,memory_mib,gpu,model\nn-a,96000,786432,8,V100M32\n"
         "n-b,64000,262144,2,P100\nn-c,64000,262144,0,\n";
  std::ofstream(dir.path() + "/jobs.sacct")
      << "JobID|JobName|User|Account|Submit|Start|End|State|AllocTRES|Timelimit\n"
         "100|train|ana|vision|2024-03-01T10:00:00|2024-03-01T10:00:00|2024-03-01T11:00:00|"
         "COMPLETED|"
         "billing=8,cpu=8,gres/gpu=8,mem=64G,node=1|02:00:00\n"
         "100.batch|batch||vision|2024-03-01T10:00:00|2024-03-01T10:00:00|2024-03-01T11:00:00|"
         "COMPLETED|"
         "cpu=8,gres/gpu=8,mem=64G,node=1|\n"
         "101|eval|bo|speech|2024-03-01T10:05:00|2024-03-01T10:05:00|2024-03-01T10:15:00|COMPLETED|"
         "cpu=2,gres/gpu=1,node=1|UNLIMITED\n"
         "102|prep|bo|speech|2024-03-01T10:06:00|2024-03-01T10:06:00|2024-03-01T10:07:00|COMPLETED|"
         "cpu=4,node=1|"
         "UNLIMITED\n";
  CliResult r = RunCli(
      baton, {"sim", "--cluster", dir.path() + "/nodes.csv", "--trace", dir.path() + "/jobs.sacct",
              "--policy", "fifo,las,default", "--json", "--report", dir.path() + "/report"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::istringstream lines(r.out);
  std::vector<std::string> policies;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] != '{') continue;
    policies.push_back(JsonString(line, "policy"));
    EXPECT_EQ(JsonField(line, "jobs"), "2") << line;  // the step and the CPU-only job are left out
    EXPECT_EQ(std::stod(JsonField(line, "makespan_s")), 3600.0) << line;
  }
  EXPECT_EQ(policies, (std::vector<std::string>{"fifo", "las", "default"}));
  std::ifstream csv(dir.path() + "/report/jobs.csv");
  int rows = -1;
  for (std::string line; std::getline(csv, line);) ++rows;
  EXPECT_EQ(rows, 2 * 3);

  CliResult converted = RunCli(
      baton, {"sim", "--trace", dir.path() + "/jobs.sacct", "--convert", dir.path() + "/t.csv"});
  ASSERT_EQ(converted.exit_code, 0) << converted.out;
  std::ifstream t(dir.path() + "/t.csv");
  std::string header, first;
  std::getline(t, header);
  std::getline(t, first);
  EXPECT_EQ(header.rfind("submit_time,duration,gpus", 0), 0u) << header;
  EXPECT_NE(first.find("train"), std::string::npos) << first;
  // The plain CSV replays to the same result.
  CliResult again = RunCli(baton, {"sim", "--cluster", dir.path() + "/nodes.csv", "--trace",
                                   dir.path() + "/t.csv", "--policy", "fifo", "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.out;
  EXPECT_EQ(std::stod(JsonField(again.out.substr(again.out.find('{')), "makespan_s")), 3600.0)
      << again.out;

  CliResult unknown = RunCli(baton, {"sim", "--cluster", dir.path() + "/nodes.csv", "--trace",
                                     dir.path() + "/t.csv", "--policy", "fifo,sjf"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.out.find("\"sjf\" is not a policy"), std::string::npos) << unknown.out;
}

}  // namespace
}  // namespace baton::testing
