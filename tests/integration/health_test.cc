// GPU health through the real binary: a fault injected into a simulated GPU fences that GPU
// alone, requeues its job onto a healthy one, raises an alert, and a GPU that passes its health
// check comes back by itself.
#include <gtest/gtest.h>
#include <signal.h>

#include <boost/json.hpp>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "harness.h"

namespace baton::testing {
namespace {

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

json::value Get(net::HttpClient& c, const std::string& target) {
  auto r = c.Request("GET", target);
  if (!r || r->status != 200) return nullptr;
  return json::parse(r->body);
}

// The job's GPU on its one node, once it runs; -1 until then.
int RunningGpu(net::HttpClient& c, int64_t id, int restarts) {
  json::value j = Get(c, "/v1/jobs/" + std::to_string(id));
  if (!j.is_object() || j.at("state") != "running" || j.at("restarts").as_int64() != restarts)
    return -1;
  const json::array& alloc = j.at("allocation").as_array();
  if (alloc.empty()) return -1;
  return static_cast<int>(alloc[0].at("gpus").as_array().at(0).as_int64());
}

// GPU `gpu` of the one node, as GET /v1/nodes shows it.
json::object GpuOf(net::HttpClient& c, int gpu) {
  json::value n = Get(c, "/v1/nodes");
  if (!n.is_object() || n.at("nodes").as_array().empty()) return {};
  return n.at("nodes").as_array()[0].at("gpus").as_array().at(gpu).as_object();
}

std::string Inject(net::HttpClient& c, const std::string& node, const std::string& body,
                   int* status) {
  auto r = c.Request("POST", "/v1/nodes/" + node + "/inject", body);
  *status = r ? r->status : 0;
  return r ? r->body : "";
}

std::string NodeName(net::HttpClient& c) {
  json::value n;
  Within(std::chrono::seconds(10), [&] {
    n = Get(c, "/v1/nodes");
    return n.is_object() && !n.at("nodes").as_array().empty();
  });
  return std::string(n.at("nodes").as_array().at(0).at("name").as_string());
}

TEST(Health, AnXid79FencesThatGpuWithinFiveSecondsAndItsJobRunsElsewhere) {
  TempDir dir;
  BatonProcess baton(dir.path(), {"--gpus", "3xH100-80GB", "--gpu-readmit-after", "1s"});
  auto c = baton.Client();
  std::string node = NodeName(*c);
  int64_t victim = Submit(*c, R"({"command": ["sleep", "300"], "resources": {"gpus": 1}})");
  int64_t bystander = Submit(*c, R"({"command": ["sleep", "300"], "resources": {"gpus": 1}})");
  int gpu = -1, other = -1;
  ASSERT_TRUE(Within(std::chrono::seconds(10), [&] {
    gpu = RunningGpu(*c, victim, 0);
    other = RunningGpu(*c, bystander, 0);
    return gpu >= 0 && other >= 0;
  }));

  int status = 0;
  auto injected = Clock::now();
  std::string body = Inject(
      *c, node, R"({"gpu": )" + std::to_string(gpu) + R"(, "fault": "xid", "xid": 79})", &status);
  ASSERT_EQ(status, 202) << body;
  ASSERT_TRUE(Within(std::chrono::seconds(5), [&] {
    json::object g = GpuOf(*c, gpu);
    return g.contains("drain_reason") && g.at("drain_reason").is_string();
  })) << json::serialize(GpuOf(*c, gpu));
  auto fenced_after =
      std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - injected);
  EXPECT_LT(fenced_after.count(), 5000);
  json::object g = GpuOf(*c, gpu);
  EXPECT_EQ(g.at("health"), "drain");
  EXPECT_EQ(g.at("drain_reason"), "health: xid 79: GPU has fallen off the bus");

  // The victim comes back on the free GPU, not the fenced one; the bystander never stopped.
  int again = -1;
  ASSERT_TRUE(
      Within(std::chrono::seconds(10), [&] { return (again = RunningGpu(*c, victim, 1)) >= 0; }));
  EXPECT_NE(again, gpu);
  EXPECT_NE(again, other);
  EXPECT_EQ(RunningGpu(*c, bystander, 0), other);
  json::value v = Get(*c, "/v1/jobs/" + std::to_string(victim));
  EXPECT_NE(json::serialize(v).find("failed: xid 79"), std::string::npos) << v;

  // An alert says what happened and what it did.
  json::value events = Get(*c, "/v1/events");
  bool alerted = false;
  for (const auto& e : events.at("events").as_array()) {
    if (e.at("kind") == "gpu_failed" && e.at("gpu") == gpu && e.at("severity") == "alert") {
      alerted = true;
      EXPECT_NE(
          std::string(e.at("message").as_string()).find("requeued job " + std::to_string(victim)),
          std::string::npos)
          << e;
    }
  }
  EXPECT_TRUE(alerted) << events;

  // A job that needs three GPUs waits while one is fenced, and runs once an admin returns it
  // after the repair (here: the simulated reset, then the undrain).
  RunCli(baton, {"cancel", std::to_string(victim)});
  RunCli(baton, {"cancel", std::to_string(bystander)});
  int64_t wide = Submit(*c, R"({"command": ["true"], "resources": {"gpus": 3}})");
  std::string waiting = WaitUntilWaiting(*c, wide, "resources");
  EXPECT_NE(waiting.find("3 GPUs"), std::string::npos) << waiting;
  Inject(*c, node, R"({"gpu": )" + std::to_string(gpu) + R"(, "fault": "clear"})", &status);
  ASSERT_EQ(RunCli(baton, {"undrain", node + "/" + std::to_string(gpu)}).exit_code, 0);
  EXPECT_EQ(JsonString(WaitForJob(*c, wide), "state"), "succeeded");
}

TEST(Health, AGpuThatNeedsAResetComesBackByItselfOnceItPassesItsCheck) {
  TempDir dir;
  BatonProcess baton(dir.path(), {"--gpus", "2xH100-80GB", "--gpu-readmit-after", "1s"});
  auto c = baton.Client();
  std::string node = NodeName(*c);
  int status = 0;
  Inject(*c, node, R"({"gpu": 1, "fault": "xid", "xid": 48})", &status);
  ASSERT_EQ(status, 202);
  ASSERT_TRUE(
      Within(std::chrono::seconds(5), [&] { return GpuOf(*c, 1).at("health") == "reset"; }));
  EXPECT_TRUE(GpuOf(*c, 1).at("drain_reason").is_null());  // no admin needed
  // Two one-GPU jobs: only GPU 0 takes them, one after the other.
  int64_t a = Submit(*c, R"({"command": ["sleep", "1"], "resources": {"gpus": 1}})");
  int64_t b = Submit(*c, R"({"command": ["sleep", "1"], "resources": {"gpus": 1}})");
  EXPECT_EQ(JsonString(WaitForJob(*c, a), "state"), "succeeded");
  EXPECT_EQ(JsonString(WaitForJob(*c, b), "state"), "succeeded");
  for (int64_t id : {a, b}) {
    json::value j = Get(*c, "/v1/jobs/" + std::to_string(id));
    EXPECT_EQ(j.at("allocation").as_array()[0].at("gpus").as_array()[0], 0) << j;
  }
  // Still failing its check (no reset yet): it stays out however long it is quiet.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  EXPECT_EQ(GpuOf(*c, 1).at("health"), "reset");
  // The reset: it passes, and is back without anyone's word.
  Inject(*c, node, R"({"gpu": 1, "fault": "clear"})", &status);
  ASSERT_TRUE(Within(std::chrono::seconds(8), [&] { return GpuOf(*c, 1).at("health") == "ok"; }));
  json::value events = Get(*c, "/v1/events");
  std::string kinds;
  for (const auto& e : events.at("events").as_array())
    kinds += std::string(e.at("kind").as_string()) + " ";
  EXPECT_NE(kinds.find("gpu_failed gpu_recovered"), std::string::npos) << kinds;
}

TEST(Health, InjectionNeedsAnAdminAndASaneFault) {
  TempDir dir;
  BatonProcess baton(dir.path(), {"--gpus", "2xH100-80GB"});
  auto c = baton.Client();
  std::string node = NodeName(*c);
  int status = 0;
  std::string body = Inject(*c, node, R"({"gpu": 0, "fault": "meltdown"})", &status);
  EXPECT_EQ(status, 400);
  EXPECT_NE(body.find("fault: must be xid, temperature, ecc, lost, clear or silence"),
            std::string::npos)
      << body;
  body = Inject(*c, node, R"({"gpu": 5, "fault": "lost"})", &status);
  EXPECT_EQ(status, 400);
  EXPECT_NE(body.find("has no GPU 5"), std::string::npos) << body;
  body = Inject(*c, node, R"({"gpu": 0, "fault": "xid"})", &status);
  EXPECT_EQ(status, 400);
  EXPECT_NE(body.find("xid: missing"), std::string::npos) << body;
  auto nobody = baton.Client("not-a-token");
  auto r =
      nobody->Request("POST", "/v1/nodes/" + node + "/inject", R"({"gpu": 0, "fault": "lost"})");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 401);
}

}  // namespace
}  // namespace baton::testing

namespace baton::testing {
namespace {

bool ProcessAlive(pid_t pid) { return kill(pid, 0) == 0; }

TEST(Health, AnAgentThatFallsSilentLosesItsNodeAndItsOldRunIsKilledWhenItReturns) {
  TempDir dir;
  BatonProcess baton(dir.path() + "/server", {"--gpus", "1xH100-80GB", "--node-timeout", "5s"});
  auto c = baton.Client();
  std::string node = NodeName(*c);
  std::string pids = dir.path() + "/pids";
  int64_t id = Submit(
      *c, R"({"command": "echo $$ >> )" + pids + R"(; exec sleep 300", "resources": {"gpus": 1}})");
  std::string first;
  ASSERT_TRUE(Within(std::chrono::seconds(10), [&] {
    std::ifstream in(pids);
    return static_cast<bool>(in >> first);
  }));
  int status = 0;
  std::string body = Inject(*c, node, R"({"fault": "silence", "duration": "20s"})", &status);
  ASSERT_EQ(status, 202) << body;
  // No heartbeat for longer than the node timeout: the node is lost, with an alert, and the
  // job goes back to the queue once the node's fence has passed (5 s + 10 s + 2.3 s; `baton
  // up`'s own agent has no fence, so its run goes on meanwhile).
  ASSERT_TRUE(Within(std::chrono::seconds(30), [&] {
    json::value j = Get(*c, "/v1/jobs/" + std::to_string(id));
    return j.is_object() && j.at("restarts") == 1;
  }));
  bool alerted = false;
  json::value events = Get(*c, "/v1/events");
  for (const auto& e : events.at("events").as_array()) alerted |= e.at("kind") == "node_lost";
  EXPECT_TRUE(alerted);
  EXPECT_TRUE(ProcessAlive(std::stoi(first)));  // the agent kept it running meanwhile
  // The agent speaks again: its old run is killed, and the job runs anew.
  std::string second;
  ASSERT_TRUE(Within(std::chrono::seconds(30), [&] {
    std::ifstream in(pids);
    return static_cast<bool>(in >> first >> second);
  }));
  EXPECT_TRUE(Within(std::chrono::seconds(10), [&] { return !ProcessAlive(std::stoi(first)); }));
  EXPECT_TRUE(ProcessAlive(std::stoi(second)));
  RunCli(baton, {"cancel", std::to_string(id)});
}

}  // namespace
}  // namespace baton::testing
