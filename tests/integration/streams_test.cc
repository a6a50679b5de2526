// What streams and what is priced, through the real binary: a followed log that arrives while
// its job runs and ends with it, the event stream as Server-Sent Events with resumption, a
// job's GPU readings and cost from the GPU catalog, project budgets (alerts, hard stop, raised
// by a reload), and the OpenAPI document checked by a validator from npm.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>

#include "harness.h"

namespace baton::testing {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

TEST(Streams, AFollowedLogArrivesWhileTheJobRunsAndEndsWithIt) {
  TempDir dir;
  BatonProcess baton(dir.path() + "/data");
  auto c = baton.Client();
  int64_t id =
      Submit(*c, R"({"command": "echo first; sleep 2; echo second", "resources": {"gpus": 1}})");
  ASSERT_GT(id, 0);
  auto follower = baton.Client();
  std::string got;
  Clock::time_point first_at{};
  Clock::time_point start = Clock::now();
  auto res = follower->Stream(
      "/v1/jobs/" + std::to_string(id) + "/logs?follow=1", [&](std::string_view piece) {
        got += piece;
        if (first_at == Clock::time_point{} && got.find("first") != std::string::npos)
          first_at = Clock::now();
      });
  Clock::time_point end = Clock::now();
  ASSERT_TRUE(res) << res.error().message();
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(got, "first\nsecond\n");
  ASSERT_NE(first_at, Clock::time_point{});
  // "first" came through about 2 s before the stream ended, with the job.
  EXPECT_GT(Seconds(end - first_at), 1.0) << "first after " << Seconds(first_at - start)
                                          << " s, end after " << Seconds(end - start) << " s";
  EXPECT_NE(JsonField(WaitForJob(*c, id, 5000), "state"), "");

  // An HTTP/1.0 client (no chunks) gets the bytes as they are, until the connection closes.
  std::string old =
      RawExchange(baton.url(), "GET /v1/jobs/" + std::to_string(id) +
                                   "/logs?follow=1 HTTP/1.0\r\nAuthorization: Bearer " +
                                   baton.token() + "\r\n\r\n");
  EXPECT_EQ(old.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << old;
  EXPECT_EQ(old.find("chunked"), std::string::npos) << old;
  EXPECT_NE(old.find("\r\n\r\nfirst\nsecond\n"), std::string::npos) << old;
  // The command line follows the same way; a finished job's log is printed whole at once.
  CliResult cli = RunCli(baton, {"logs", "-f", std::to_string(id)});
  EXPECT_EQ(cli.exit_code, 0);
  EXPECT_EQ(cli.out, "first\nsecond\n");
  CliResult missing = RunCli(baton, {"logs", "-f", "999"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.out.find("job 999 does not exist"), std::string::npos) << missing.out;
}

TEST(Streams, EventsComeAsServerSentEventsAndResumeAfterTheLastId) {
  TempDir dir;
  BatonProcess baton(dir.path() + "/data");
  auto c = baton.Client();
  auto listener = baton.Client();
  std::mutex mu;
  std::string stream;
  std::thread reader([&] {
    (void)listener->Stream("/v1/events",
                           [&](std::string_view piece) {
                             std::lock_guard lock(mu);
                             stream += piece;
                           },
                           {{"Accept", "text/event-stream"}});
  });
  auto seen = [&](const std::string& s) {
    std::lock_guard lock(mu);
    return stream.find(s) != std::string::npos;
  };
  // Existing events first (the node joined), then one as it happens: a failed job is an alert.
  EXPECT_TRUE(Within(std::chrono::seconds(10), [&] { return seen("event: node_joined\n"); }));
  int64_t id = Submit(*c, R"({"command": ["false"], "name": "doomed"})");
  ASSERT_GT(id, 0);
  EXPECT_TRUE(Within(std::chrono::seconds(15), [&] { return seen("event: job_failed\n"); }));
  listener->Cancel();
  reader.join();
  {
    std::lock_guard lock(mu);
    EXPECT_NE(stream.find("id: 1\nevent: node_joined\ndata: {\"seq\":1,"), std::string::npos)
        << stream;
    EXPECT_NE(stream.find("\"job\":" + std::to_string(id)), std::string::npos) << stream;
  }
  // A reconnecting client says the last id it saw and gets only what came after; it can leave
  // at any time (here: the read times out), and the server goes on serving.
  std::string raw =
      RawExchange(baton.url(),
                  "GET /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + baton.token() +
                      "\r\nAccept: text/event-stream\r\nLast-Event-ID: 1\r\n\r\n",
                  1500);
  EXPECT_EQ(RawStatus(raw), 200) << raw;
  EXPECT_NE(raw.find("Content-Type: text/event-stream"), std::string::npos) << raw;
  EXPECT_NE(raw.find("Transfer-Encoding: chunked"), std::string::npos) << raw;
  EXPECT_EQ(raw.find("event: node_joined"), std::string::npos) << raw;
  EXPECT_NE(raw.find("event: job_failed"), std::string::npos) << raw;
  std::string bad = RawExchange(
      baton.url(), "GET /v1/events?stream=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                       baton.token() + "\r\nLast-Event-ID: soon\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(RawStatus(bad), 400) << bad;
  EXPECT_NE(bad.find("Last-Event-ID: must be a whole number"), std::string::npos) << bad;
  // Without asking for a stream, the same route answers one JSON page.
  auto page = c->Request("GET", "/v1/events?after=1");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->body.find("\"kind\":\"job_failed\""), std::string::npos) << page->body;
  auto health = c->Request("GET", "/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

void WriteFile(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

// 3600 a GPU-hour is 1 a GPU-second: costs in these tests are GPU-seconds, easy to bound.
constexpr const char* kCatalog = R"(
gpu_catalog:
  currency: EUR
  prices:
    H100: {on_demand: 3600, spot: 1800}
)";

TEST(Costs, AJobIsPricedFromTheCatalogAndItsGpusReadingsAreShown) {
  TempDir dir;
  std::string config = dir.path() + "/baton.yaml";
  WriteFile(config, kCatalog);
  BatonProcess baton(dir.path() + "/data", {"--config", config, "--gpus", "2xH100-80GB"});
  auto c = baton.Client();
  int64_t id = Submit(*c, R"({"command": ["sleep", "3"], "resources": {"gpus": 1}})");
  int64_t half =
      Submit(*c, R"({"command": ["sleep", "1"], "resources": {"gpus": 0.5}, "preemptible": true})");
  ASSERT_GT(id, 0);
  std::string running;
  ASSERT_TRUE(Within(std::chrono::seconds(10), [&] {
    auto r = c->Request("GET", "/v1/jobs/" + std::to_string(id) + "/metrics");
    running = r ? r->body : "";
    return r && r->status == 200 && running.find("\"utilization_pct\":null") == std::string::npos &&
           running.find("\"state\":\"running\"") != std::string::npos;
  })) << running;
  EXPECT_NE(running.find("\"model\":\"H100-80GB\""), std::string::npos) << running;
  EXPECT_NE(running.find("\"currency\":\"EUR\""), std::string::npos) << running;
  EXPECT_EQ(JsonField(running, "cost_per_hour"), "3.6E3") << running;
  WaitForJob(*c, id);
  auto done = c->Request("GET", "/v1/jobs/" + std::to_string(id) + "/metrics");
  ASSERT_TRUE(done);
  double cost = std::stod(JsonField(done->body, "cost"));
  double gpu_seconds = std::stod(JsonField(done->body, "gpu_seconds"));
  EXPECT_GE(cost, 2.9) << done->body;
  EXPECT_LT(cost, 4.5) << done->body;
  EXPECT_NEAR(cost, gpu_seconds, 0.01) << done->body;
  EXPECT_NE(JsonField(done->body, "mean_utilization_pct"), "null") << done->body;
  // Half a GPU pays half the price: the on-demand price, this node not being a spot node, though
  // the job is preemptible (spot nodes: Preemptible.ASpotNodeTakesOnlyPreemptibleJobs...).
  std::string half_job = WaitForJob(*c, half);
  EXPECT_EQ(JsonField(half_job, "cost_per_hour"), "1.8E3") << half_job;
  auto usage = c->Request("GET", "/v1/usage");
  ASSERT_TRUE(usage);
  EXPECT_NE(usage->body.find("\"currency\":\"EUR\""), std::string::npos) << usage->body;
  auto missing = c->Request("GET", "/v1/jobs/999/metrics");
  ASSERT_TRUE(missing) << missing.error().message();
  EXPECT_EQ(missing->status, 404) << missing->body;
  EXPECT_NE(missing->body.find("job 999 does not exist"), std::string::npos) << missing->body;
}

// Issue 15: the loop used to answer with the stored record after a batch, which dropped the
// running attempt's cost that GET computes: a running job showed the cost of its ended
// attempts only (none).
TEST(Costs, GetOfARunningPricedJobShowsItsCostSoFar) {
  TempDir dir;
  std::string config = dir.path() + "/baton.yaml";
  WriteFile(config, kCatalog);
  BatonProcess baton(dir.path() + "/data", {"--config", config, "--gpus", "1xH100-80GB"});
  auto c = baton.Client();
  int64_t id = Submit(*c, R"({"command": ["sleep", "30"], "resources": {"gpus": 1}})");
  ASSERT_GT(id, 0);
  auto cost_of = [&](std::string* body) {
    auto r = c->Request("GET", "/v1/jobs/" + std::to_string(id));
    *body = r ? r->body : "";
    if (!r || r->status != 200 || body->find("\"state\":\"running\"") == std::string::npos)
      return -1.0;
    std::string cost = JsonField(*body, "cost");
    return cost.empty() || cost == "null" ? -1.0 : std::stod(cost);
  };
  std::string job;
  double first = -1;
  // 1 a GPU-second: after a second of running the job has cost about 1.
  ASSERT_TRUE(Within(std::chrono::seconds(15), [&] {
    first = cost_of(&job);
    return first >= 1.0;
  })) << job;
  EXPECT_LT(first, 15.0) << job;
  double later = -1;
  ASSERT_TRUE(Within(std::chrono::seconds(10),
                     [&] {
                       later = cost_of(&job);
                       return later >= first + 1.0;
                     }))
      << "first " << first << ", then " << job;
  // The list shows the same running cost.
  auto list = c->Request("GET", "/v1/jobs");
  ASSERT_TRUE(list);
  size_t at = list->body.find("\"cost\":");
  ASSERT_NE(at, std::string::npos) << list->body;
  EXPECT_GE(std::stod(list->body.substr(at + 7)), first) << list->body;
  auto cancel = c->Request("POST", "/v1/jobs/" + std::to_string(id) + "/cancel");
  ASSERT_TRUE(cancel);
}

TEST(Costs, ABudgetAlertsAt80And100PercentAndAHardStopRefusesNewJobsUntilRaised) {
  TempDir dir;
  std::string config = dir.path() + "/baton.yaml";
  WriteFile(config,
            std::string(kCatalog) +
                "projects:\n  vision: {budget: {amount: 10, period: month, hard_stop: true}}\n");
  BatonProcess baton(dir.path() + "/data", {"--config", config});
  auto c = baton.Client();
  // 1 EUR a second: 80 % after 8 s, 100 % after 10 s (the controller looks twice a second:
  // a 2 s window for the 80 % alert, even on a loaded machine).
  int64_t id =
      Submit(*c, R"({"command": ["sleep", "11"], "resources": {"gpus": 1}, "project": "vision"})");
  ASSERT_GT(id, 0);
  std::string events;
  ASSERT_TRUE(Within(std::chrono::seconds(25), [&] {
    auto r = c->Request("GET", "/v1/events");
    events = r ? r->body : "";
    return events.find("(100 %)") != std::string::npos;
  })) << events;
  EXPECT_NE(events.find("\"kind\":\"budget\",\"severity\":\"alert\""), std::string::npos) << events;
  EXPECT_NE(events.find("\"project\":\"vision\""), std::string::npos) << events;
  EXPECT_NE(events.find("of its budget of 10.00 EUR this month (80 %)"), std::string::npos)
      << events;
  auto refused = c->Request("POST", "/v1/jobs", R"({"command": ["true"], "project": "vision"})");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 403) << refused->body;
  EXPECT_NE(refused->body.find("project vision has spent its budget"), std::string::npos)
      << refused->body;
  EXPECT_NE(refused->body.find("new jobs are refused until "), std::string::npos) << refused->body;
  // Other projects are not affected, and the usage report says where vision stands.
  EXPECT_GT(Submit(*c, R"({"command": ["true"], "project": "nlp"})"), 0);
  auto usage = c->Request("GET", "/v1/usage");
  ASSERT_TRUE(usage);
  EXPECT_NE(usage->body.find("\"budget\":1E1,\"budget_period\":\"month\""), std::string::npos)
      << usage->body;
  // An admin raises the budget; after the reload the project submits again.
  WriteFile(config, std::string(kCatalog) +
                        "projects:\n  vision: {budget: {amount: 1000, hard_stop: true}}\n");
  baton.Signal(SIGHUP);
  EXPECT_TRUE(Within(std::chrono::seconds(10), [&] {
    auto r = c->Request("POST", "/v1/jobs", R"({"command": ["true"], "project": "vision"})");
    return r && r->status == 201;
  }));
}

TEST(OpenApi, TheServedDocumentIsValidByARealValidatorAndNamesEveryRoute) {
  TempDir dir;
  BatonProcess baton(dir.path() + "/data");
  // No token needed.
  std::string raw = RawExchange(
      baton.url(), "GET /v1/openapi.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  ASSERT_EQ(RawStatus(raw), 200) << raw.substr(0, 300);
  for (const char* path : {"\"/v1/jobs\"",
                           "\"/v1/jobs/batch\"",
                           "\"/v1/jobs/{id}\"",
                           "\"/v1/jobs/{id}/logs\"",
                           "\"/v1/jobs/{id}/metrics\"",
                           "\"/v1/jobs/{id}/cancel\"",
                           "\"/v1/queue\"",
                           "\"/v1/crons\"",
                           "\"/v1/crons/{id}\"",
                           "\"/v1/nodes\"",
                           "\"/v1/nodes/{name}/drain\"",
                           "\"/v1/usage\"",
                           "\"/v1/events\"",
                           "\"/v1/tokens\"",
                           "\"/metrics\"",
                           "\"/healthz\"",
                           "\"/v1/openapi.json\"",
                           "\"/v1/jobs/{id}/attach\"",
                           "\"/v1/jobs/{id}/forward\"",
                           "\"/v1/agent/tunnels/{tunnel}\"",
                           "\"/v1/jobs/{id}/resubmit\"",
                           "\"/v1/jobs/{id}/metrics/lines\"",
                           "\"/v1/reports\"",
                           "\"/v1/reports/{name}/{file}\""}) {
    EXPECT_NE(raw.find(path), std::string::npos) << path;
  }
  std::string script = std::string(BATON_SOURCE_DIR) + "/scripts/openapi-validate";
  std::string cmd = "command -v node >/dev/null || " + std::string(BATON_SOURCE_DIR) +
                    "/scripts/install-test-server nodejs; " +
                    // The script's node trusts the server's own CA as any client is told to
                    // (npm keeps this machine's NODE_EXTRA_CA_CERTS, a proxy's CA perhaps).
                    "BATON_TLS_CA=" + baton.ca_file() + " " + script + " " + baton.url() +
                    "/v1/openapi.json 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  int rc = pclose(p);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("openapi: valid"), std::string::npos) << out;
}

}  // namespace
}  // namespace baton::testing
