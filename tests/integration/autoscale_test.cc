// Issue 40, "autoscaling through a provider", through the real binaries: a controller with no
// node of its own and the repository's local provider (scripts/baton-local-provider), whose
// "machines" are real `baton agent` processes with simulated GPUs. A job no node holds makes
// the controller resume a node, the job runs there, and the idle node is suspended; a gang
// starts only once all its nodes are there; and the provider's faults: a node that never
// registers, one that would register late, a resume that starts only part of the nodes, a
// provider that exits non-zero or hangs, a controller killed and started again (it lists the
// provider and starts nothing twice). The time of each step is printed (docs/performance.md).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>

#include "core/time.h"
#include "harness.h"

namespace baton::testing {
namespace {

namespace json = boost::json;
namespace fs = std::filesystem;

std::string Written(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  return path;
}

struct Scaling {
  std::string idle_time = "1h";
  std::string resume_timeout = "60s";
  std::string provider_timeout = "20s";
  int max = 3;
};

// A controller whose only nodes are those its provider starts: template h100 (2 GPUs each).
class ScaledCluster {
 public:
  explicit ScaledCluster(const Scaling& s)
      : state_(dir_.path() + "/provider"),
        config_(Written(dir_.path() + "/baton.yaml", Config(s))),
        server_(dir_.path() + "/server", {"--config", config_}, "server") {}
  ~ScaledCluster() {
    server_.Stop();
    StopMachines();
  }

  std::string Config(const Scaling& s) const {
    return "autoscaling:\n"
           "  provider: [" +
           std::string(BATON_SOURCE_DIR) + "/scripts/baton-local-provider, --baton, " +
           BATON_BINARY + ", --state, " + state_ +
           ", --agent-arg, --allow-root-jobs]\n"
           "  provider_timeout: " +
           s.provider_timeout +
           "\n"
           "  scan_interval: 200ms\n"
           "  idle_time: " +
           s.idle_time +
           "\n"
           "  resume_timeout: " +
           s.resume_timeout +
           "\n"
           "  templates:\n"
           "    - {name: h100, gpus: 2xH100-80GB, cpus: 8, memory: 64GiB, price: 7.2, max: " +
           std::to_string(s.max) +
           "}\n"
           "projects:\n"
           "  default: {budget: 1000}\n";
  }

  // The provider's faults from now on (scripts/baton-local-provider); "" for none.
  void Faults(const std::string& faults) {
    fs::create_directories(state_);
    if (faults.empty()) {
      fs::remove(state_ + "/faults.json");
    } else {
      Written(state_ + "/faults.json", faults);
    }
  }
  // Every call the provider had, one JSON line each.
  std::string Calls() const { return ReadFile(state_ + "/calls.log"); }

  // The node as `GET /v1/nodes` shows it (null when it is not shown).
  json::value Node(const std::string& name) {
    auto r = c_->Request("GET", "/v1/nodes");
    if (!r) return nullptr;
    const json::value list = json::parse(r->body);
    for (const auto& n : list.at("nodes").as_array()) {
      if (n.at("name") == name.c_str()) return n;
    }
    return nullptr;
  }
  std::string StateOf(const std::string& name) {
    json::value n = Node(name);
    return n.is_null() ? "" : json::value_to<std::string>(n.at("state"));
  }
  bool Becomes(const std::string& name, const std::string& state, int seconds = 30) {
    return Within(std::chrono::seconds(seconds), [&] { return StateOf(name) == state; });
  }
  // The events of `kind` so far.
  std::vector<json::value> Events(const std::string& kind) {
    std::vector<json::value> out;
    auto r = c_->Request("GET", "/v1/events");
    if (!r) return out;
    const json::value list = json::parse(r->body);
    for (const auto& e : list.at("events").as_array()) {
      if (e.at("kind") == kind.c_str()) out.push_back(e);
    }
    return out;
  }
  bool EventSaid(const std::string& kind, const std::string& words, int seconds = 30) {
    return Within(std::chrono::seconds(seconds), [&] {
      for (const json::value& e : Events(kind)) {
        if (json::value_to<std::string>(e.at("message")).find(words) != std::string::npos)
          return true;
      }
      return false;
    });
  }
  json::value Job(int64_t id) { return json::parse(GetJob(*c_, id)); }
  bool JobIs(int64_t id, const std::string& state, int seconds = 30) {
    return Within(std::chrono::seconds(seconds),
                  [&] { return Job(id).at("state") == json::value(state); });
  }

  // Kills what the provider started and left running.
  void StopMachines() {
    if (!fs::exists(state_)) return;
    for (const auto& e : fs::directory_iterator(state_)) {
      const std::string name = e.path().filename();
      if (e.path().extension() != ".json" || name == "faults.json") continue;
      json::value record = json::parse(ReadFile(e.path()));
      ::kill(-static_cast<pid_t>(record.at("pid").to_number<int64_t>()), SIGKILL);
    }
  }

  TempDir dir_;
  std::string state_;
  std::string config_;
  BatonProcess server_;
  std::unique_ptr<net::HttpClient> c_ = server_.Client();
};

constexpr const char* kTwoGpus = R"({"command": ["true"], "resources": {"gpus": 2}})";

int64_t Millis(const json::value& t) {
  return ToMillis(*ParseRfc3339(json::value_to<std::string>(t)));
}

TEST(Autoscale, AJobNoNodeHoldsResumesANodeThatRunsItAndTheIdleNodeIsSuspended) {
  ScaledCluster k(Scaling{.idle_time = "2s"});
  // Once the controller has asked what the provider has (its first scan after a start), as a
  // running cluster has.
  ASSERT_TRUE(Within(std::chrono::seconds(10), [&] {
    return k.Calls().find(R"("request": {"verb": "list")") != std::string::npos;
  }));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const int64_t id = Submit(*k.c_, R"({"command": ["sh", "-c", "echo ran on $BATON_NODE"],
                                      "resources": {"gpus": 2}})");
  ASSERT_GT(id, 0);
  ASSERT_TRUE(k.JobIs(id, "succeeded")) << GetJob(*k.c_, id);
  json::value job = k.Job(id);
  EXPECT_EQ(job.at("allocation").at(0).at("node"), "h100-1");
  EXPECT_EQ(job.at("restarts"), 0);
  ASSERT_TRUE(k.EventSaid(
      "node_resuming", "autoscaling resumes 1 node of template h100 (h100-1) for 1 waiting job (" +
                           std::to_string(id) + ")"));
  // The times: the job waited for the resume, the provider "booted" the node (its agent
  // started and registered), the controller placed the job and its first process ran.
  const int64_t submitted = Millis(job.at("submitted_at"));
  const int64_t started = Millis(job.at("started_at"));
  const int64_t resumed = Millis(k.Events("node_resuming").at(0).at("at"));
  int64_t joined = 0;
  for (const json::value& e : k.Events("node_joined")) {
    if (e.at("node") == "h100-1") joined = Millis(e.at("at"));
  }
  ASSERT_GT(joined, 0);
  std::cout << "autoscale timing: submit -> resume " << resumed - submitted
            << " ms; resume -> registered (the provider's boot) " << joined - resumed
            << " ms; registered -> first process " << started - joined
            << " ms; submit -> first process less the boot "
            << (started - submitted) - (joined - resumed) << " ms\n";

  // Idle for its idle time (2 s): suspended through the provider, its agent gone, and shown.
  ASSERT_TRUE(k.Becomes("h100-1", "suspended")) << k.Calls();
  ASSERT_TRUE(k.EventSaid("node_suspending", "autoscaling suspends h100-1: idle for"));
  json::value shown = k.Node("h100-1");
  EXPECT_EQ(shown.at("template"), "h100");
  EXPECT_FALSE(shown.at("state_since").is_null());
  EXPECT_FALSE(fs::exists(k.state_ + "/h100-1.json")) << k.Calls();
  CliResult nodes = RunCli(k.server_, {"nodes"});
  EXPECT_EQ(nodes.exit_code, 0);
  EXPECT_NE(nodes.out.find("suspended"), std::string::npos) << nodes.out;
  EXPECT_NE(nodes.out.find("autoscaled (h100): suspended since"), std::string::npos) << nodes.out;
  // Its silence is no lost node.
  EXPECT_TRUE(k.Events("node_lost").empty());
  // The provider's own files are its user's alone.
  struct stat st {};
  ASSERT_EQ(stat(k.state_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  for (const char* file : {"/calls.log", "/h100-1.log"}) {
    ASSERT_EQ(stat((k.state_ + file).c_str(), &st), 0) << file;
    EXPECT_EQ(st.st_mode & 0777, 0600u) << file;
  }
  // As another Unix user would look, the directories above it open to them: refused.
  if (TestUser("baton-rb") >= 0) {
    fs::permissions(k.dir_.path(), fs::perms(0711));
    CliResult peek = RunShell("setpriv --reuid=baton-rb --regid=nogroup --clear-groups cat '" +
                              k.state_ + "/calls.log'");
    EXPECT_NE(peek.exit_code, 0) << peek.out;
    EXPECT_NE(peek.out.find("Permission denied"), std::string::npos) << peek.out;
  }
  // What it cost, as a user asks: h100 costs 7.2 an hour (0.002 a second); the job paid its 2
  // of 2 GPUs while it ran, and its project the boot and the idle time before the suspend.
  CliResult usage = RunCli(k.server_, {"usage"});
  EXPECT_EQ(usage.exit_code, 0) << usage.out;
  EXPECT_NE(usage.out.find("IDLE NODES"), std::string::npos) << usage.out;
  EXPECT_NE(usage.out.find("Autoscaled nodes, over"), std::string::npos) << usage.out;
  EXPECT_NE(usage.out.find("the peak as a fixed on-demand cluster"), std::string::npos)
      << usage.out;
  auto answer = k.c_->Request("GET", "/v1/usage");
  ASSERT_TRUE(answer.has_value());
  const json::value money = json::parse(answer->body);
  const json::value& scaled = money.at("nodes");
  const double node_seconds = scaled.at("node_seconds").to_number<double>();
  const double life = static_cast<double>(Millis(shown.at("state_since")) - resumed) / 1000.0;
  EXPECT_NEAR(node_seconds, life, 0.5) << answer->body;
  EXPECT_NEAR(scaled.at("cost").to_number<double>(), life * 0.002, 0.002) << answer->body;
  EXPECT_EQ(scaled.at("templates").at(0).at("peak_nodes"), 1);
  const double idle = money.at("projects").at(0).at("idle_cost").to_number<double>();
  EXPECT_GT(idle, 0) << answer->body;
  EXPECT_NEAR(idle, scaled.at("idle_cost").to_number<double>(), 1e-6) << answer->body;
  // The project's budget counts its job and the node's time kept for it.
  const json::value& project = money.at("projects").at(0);
  EXPECT_NEAR(project.at("budget_spent").to_number<double>(),
              project.at("cost").to_number<double>() + idle, 1e-3)
      << answer->body;
  EXPECT_GT(job.at("cost_per_hour").to_number<double>(), 7.19) << job;
  // Each call had its verb and the request's JSON.
  EXPECT_NE(k.Calls().find(R"("request": {"verb": "list")"), std::string::npos) << k.Calls();
  EXPECT_NE(k.Calls().find(R"("nodes": [{"name": "h100-1", "template": "h100"}])"),
            std::string::npos)
      << k.Calls();
}

TEST(Autoscale, AGangStartsOnlyOnceAllItsNodesAreThere) {
  ScaledCluster k(Scaling{});
  k.Faults(R"({"late": {"h100-2": 3}})");  // its agent starts 3 s after h100-1's
  const int64_t id =
      Submit(*k.c_, R"({"command": ["true"], "resources": {"gpus": 4, "nodes": 2}})");
  ASSERT_TRUE(k.Becomes("h100-1", "ready"));
  EXPECT_EQ(k.StateOf("h100-2"), "resuming");
  EXPECT_EQ(k.Job(id).at("state"), "pending");  // not on part of its nodes
  // Its reason says what autoscaling did for it, as a user reads it.
  CliResult show = RunCli(k.server_, {"show", std::to_string(id)});
  EXPECT_NE(show.out.find("autoscaling resumed h100-1, h100-2 for it at "), std::string::npos)
      << show.out;
  ASSERT_TRUE(k.JobIs(id, "succeeded"));
  int64_t joined2 = 0;
  for (const json::value& e : k.Events("node_joined")) {
    if (e.at("node") == "h100-2") joined2 = Millis(e.at("at"));
  }
  ASSERT_GT(joined2, 0);
  EXPECT_GE(Millis(k.Job(id).at("started_at")), joined2);
  EXPECT_EQ(CountOf(k.Calls(), R"("request": {"verb": "resume")"), 1u) << k.Calls();
}

TEST(Autoscale, ANodeThatNeverRegistersFailsIsSuspendedAndTheJobRunsOnAnotherWithoutARetry) {
  ScaledCluster k(Scaling{.resume_timeout = "3s"});
  k.Faults(R"({"never_register": ["h100-1"]})");
  const int64_t id = Submit(*k.c_, kTwoGpus);
  ASSERT_TRUE(k.EventSaid("node_resume_failed",
                          "the resume of h100-1 failed: it did not register within the resume "
                          "timeout of 3s"));
  // The "machine" is stopped through the provider; the job was not on it, so it runs on the
  // node resumed in its place, no retry spent.
  ASSERT_TRUE(k.Becomes("h100-1", "suspended")) << k.Calls();
  EXPECT_FALSE(fs::exists(k.state_ + "/h100-1.json"));
  ASSERT_TRUE(k.JobIs(id, "succeeded")) << k.Calls();
  EXPECT_EQ(k.Job(id).at("allocation").at(0).at("node"), "h100-2");
  EXPECT_EQ(k.Job(id).at("restarts"), 0);
  EXPECT_EQ(k.Node("h100-1").at("scaling_reason"),
            "it did not register within the resume timeout of 3s");
}

TEST(Autoscale, AJobThatCannotStartOnANodeIsGivenAnotherNodeNotTheSameOneAgain) {
  ScaledCluster k(Scaling{.idle_time = "1s"});
  // A program no node has: it cannot start on h100-1, then on the node resumed for it in its
  // place, h100-2, then on h100-3, and fails for good with the agent's words, no retry spent
  // and no node resumed twice for it.
  const int64_t id = Submit(*k.c_, R"({"command": ["/nonexistent/train"], "resources":
                                      {"gpus": 2}})");
  ASSERT_TRUE(k.JobIs(id, "failed", 60)) << GetJob(*k.c_, id) << k.Calls();
  json::value job = k.Job(id);
  EXPECT_NE(json::value_to<std::string>(job.at("reason_detail")).find("/nonexistent/train"),
            std::string::npos)
      << job;
  EXPECT_EQ(job.at("restarts"), 2);
  // The nodes each resume named, in order.
  std::vector<std::string> resumed;
  std::istringstream calls(k.Calls());
  for (std::string line; std::getline(calls, line);) {
    const json::value call = json::parse(line);
    if (call.at("verb") != "resume") continue;
    for (const json::value& n : call.at("request").at("nodes").as_array())
      resumed.push_back(json::value_to<std::string>(n.at("name")));
  }
  EXPECT_EQ(resumed, (std::vector<std::string>{"h100-1", "h100-2", "h100-3"})) << k.Calls();
}

TEST(Autoscale, ANodeThatWouldRegisterLateIsStoppedBeforeItJoins) {
  ScaledCluster k(Scaling{.resume_timeout = "2s"});
  k.Faults(R"({"late": {"h100-1": 5}})");
  const auto submitted = std::chrono::steady_clock::now();
  const int64_t id = Submit(*k.c_, kTwoGpus);
  ASSERT_TRUE(k.EventSaid("node_resume_failed", "the resume of h100-1 failed"));
  ASSERT_TRUE(k.JobIs(id, "succeeded")) << k.Calls();
  EXPECT_EQ(k.Job(id).at("allocation").at(0).at("node"), "h100-2");
  // Past the time its agent would have started: the provider's suspend stopped the "machine",
  // so h100-1 never joined.
  std::this_thread::sleep_until(submitted + std::chrono::seconds(7));
  for (const json::value& e : k.Events("node_joined")) EXPECT_NE(e.at("node"), "h100-1");
  EXPECT_EQ(k.StateOf("h100-1"), "suspended");
}

TEST(Autoscale, AResumeThatStartsOnlyPartOfTheNodesFailsTheRestAndAsksAgain) {
  ScaledCluster k(Scaling{});
  k.Faults(R"({"partial": 1})");
  const int64_t id =
      Submit(*k.c_, R"({"command": ["true"], "resources": {"gpus": 4, "nodes": 2}})");
  ASSERT_TRUE(k.EventSaid("node_resume_failed",
                          "the resume of h100-2 failed: the provider started 1 of the 2 nodes "
                          "asked, not these"));
  k.Faults("");
  ASSERT_TRUE(k.JobIs(id, "succeeded")) << k.Calls();
  // On h100-1, which the provider did start, and one resumed after.
  std::set<std::string> nodes;
  const json::value job = k.Job(id);
  for (const auto& part : job.at("allocation").as_array())
    nodes.insert(json::value_to<std::string>(part.at("node")));
  EXPECT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes.count("h100-1"), 1u);
}

TEST(Autoscale, AProviderThatExitsNonZeroOrHangsIsAnAlertAndAutoscalingGoesOnAfter) {
  ScaledCluster k(Scaling{.provider_timeout = "2s"});
  k.Faults(R"({"exit": 3})");
  const int64_t id = Submit(*k.c_, kTwoGpus);
  ASSERT_TRUE(k.EventSaid("provider_failed",
                          "provider list: exited 3: baton-local-provider: failing as "
                          "faults.json asks; autoscaling resumes and suspends nothing until it "
                          "answers"));
  k.Faults(R"({"hang": true})");
  const auto hung = std::chrono::steady_clock::now();
  ASSERT_TRUE(k.EventSaid("provider_failed",
                          "provider list: did not answer within 2s; killed (its process group)"));
  const auto killed = std::chrono::steady_clock::now() - hung;
  EXPECT_LT(killed, std::chrono::seconds(15));
  k.Faults("");
  ASSERT_TRUE(k.JobIs(id, "succeeded")) << k.Calls();
  // The hung providers were killed: none is left.
  CliResult left = RunShell("pgrep -f '[b]aton-local-provider.*" + k.state_ + "' || true");
  EXPECT_EQ(left.out, "") << left.out;
}

TEST(Autoscale, AControllerStartedAgainListsTheProviderAndStartsNothingTwice) {
  ScaledCluster k(Scaling{});
  k.Faults(R"({"never_register": ["h100-1"]})");  // a machine that is there, still booting
  const int64_t id = Submit(*k.c_, kTwoGpus);
  ASSERT_TRUE(k.Becomes("h100-1", "resuming"));
  ASSERT_TRUE(
      Within(std::chrono::seconds(10), [&] { return fs::exists(k.state_ + "/h100-1.json"); }));
  k.server_.Kill9();
  k.server_.Start();
  k.c_ = k.server_.Client();
  ASSERT_TRUE(Within(std::chrono::seconds(10), [&] {
    json::value n = k.Node("h100-1");
    return !n.is_null() && n.at("scaling_reason") == "listed by the provider, not registered yet";
  })) << k.Calls();
  EXPECT_EQ(k.StateOf("h100-1"), "resuming");
  // The job still waits for it: nothing else is resumed for it.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_EQ(CountOf(k.Calls(), R"("request": {"verb": "resume")"), 1u) << k.Calls();
  EXPECT_EQ(CountOf(k.Calls(), R"("request": {"verb": "list")"), 2u) << k.Calls();
  EXPECT_EQ(k.Job(id).at("state"), "pending");
  // Its boot is charged from the resume by the first controller, not from the restart: the
  // stretch was stored and goes on.
  const int64_t resumed = Millis(k.Events("node_resuming").at(0).at("at"));
  auto r = k.c_->Request("GET", "/v1/usage");
  ASSERT_TRUE(r.has_value());
  const json::value usage = json::parse(r->body);
  const double seconds = usage.at("nodes").at("node_seconds").to_number<double>();
  const double since_resume =
      static_cast<double>(std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count() -
                          resumed) /
      1000.0;
  EXPECT_GT(seconds, since_resume - 1.0) << r->body;
  EXPECT_LE(seconds, since_resume + 1.0) << r->body;
}

}  // namespace
}  // namespace baton::testing
