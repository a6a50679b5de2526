// GET /metrics through the real binary: the series PRODUCT §5 names, checked by promtool, and
// scraped by a real Prometheus server on loopback whose query API reads one back.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "harness.h"

namespace baton::testing {
namespace {

std::string Scrape(net::HttpClient& c) {
  auto r = c.Request("GET", "/metrics");
  EXPECT_TRUE(r.has_value());
  if (!r) return "";
  EXPECT_EQ(r->status, 200) << r->body;
  return r->body;
}

// Runs a shell command, giving it `input` on stdin; its exit code and output.
int Shell(const std::string& command, const std::string& input, std::string* output) {
  std::string in = "/tmp/baton-metrics-in-" + std::to_string(getpid());
  std::ofstream(in) << input;
  FILE* p = popen((command + " < " + in + " 2>&1").c_str(), "r");
  char buf[4096];
  size_t n;
  while (p != nullptr && (n = fread(buf, 1, sizeof buf, p)) > 0) output->append(buf, n);
  int status = p != nullptr ? pclose(p) : -1;
  std::remove(in.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Prometheus (and promtool) from Debian's package, installed on first use.
void NeedPrometheus() {
  if (access("/usr/bin/prometheus", X_OK) == 0 && access("/usr/bin/promtool", X_OK) == 0) return;
  std::string out;
  int rc =
      Shell(std::string(BATON_SOURCE_DIR) + "/scripts/install-test-server prometheus", "", &out);
  ASSERT_EQ(rc, 0) << out;
}

TEST(Metrics, ThePromisedSeriesArePresentAndPromtoolAcceptsThem) {
  NeedPrometheus();
  TempDir dir;
  BatonProcess baton(dir.path(), {"--gpus", "2xH100-80GB"});
  auto c = baton.Client();
  int64_t ok =
      Submit(*c, R"({"command": ["true"], "resources": {"gpus": 1}, "project": "vision"})");
  int64_t bad = Submit(*c, R"({"command": ["false"], "resources": {"gpus": 1}})");
  WaitForJob(*c, ok);
  WaitForJob(*c, bad);
  std::string m;
  // Samples reach the controller every 2 s.
  Within(std::chrono::seconds(10), [&] {
    m = Scrape(*c);
    return m.find("baton_gpu_temperature_celsius{") != std::string::npos;
  });
  for (const char* line :
       {"baton_jobs{state=\"succeeded\"} 1\n", "baton_jobs{state=\"failed\"} 1\n",
        "baton_jobs_submitted_total 2\n", "baton_jobs_finished_total{state=\"succeeded\"} 1\n",
        "baton_job_wait_seconds_count 2\n", "baton_gpus{state=\"idle\"} 2\n",
        "baton_nodes{state=\"ready\"} 1\n",
        "# TYPE baton_scheduling_cycle_duration_seconds histogram\n",
        "baton_gpu_memory_total_bytes{node=\"", "baton_gpu_utilization_ratio{node=\"",
        "baton_gpu_power_watts{node=\"", "baton_project_gpu_seconds_total{project=\"vision\"} ",
        "baton_project_cost_total{project=\"vision\"} "}) {
    EXPECT_NE(m.find(line), std::string::npos) << line << "\n" << m;
  }
  std::string out;
  EXPECT_EQ(Shell("promtool check metrics", m, &out), 0) << out;
  // The same usage as JSON, by project and by user.
  auto usage = c->Request("GET", "/v1/usage");
  ASSERT_TRUE(usage.has_value());
  EXPECT_EQ(usage->status, 200);
  EXPECT_NE(usage->body.find("{\"project\":\"vision\",\"jobs\":1,\"running\":0,\"gpu_seconds\":"),
            std::string::npos)
      << usage->body;
  EXPECT_NE(usage->body.find("\"users\":[{\"project\":\"default\",\"user\":"), std::string::npos)
      << usage->body;
  // Without a token: 401, as every route but /healthz.
  EXPECT_EQ(baton.Client("nope")->Request("GET", "/metrics")->status, 401);
}

TEST(Metrics, ARealPrometheusScrapesBatonAndAnswersAQuery) {
  NeedPrometheus();
  TempDir dir;
  BatonProcess baton(dir.path() + "/baton", {"--gpus", "2xH100-80GB"});
  auto c = baton.Client();
  for (int i = 0; i < 3; ++i) Submit(*c, R"({"command": ["true"]})");
  // A token for Prometheus alone, as an admin would make one.
  CliResult made = RunCli(baton, {"token", "create", "--user", "prometheus", "--name", "scrape"});
  ASSERT_EQ(made.exit_code, 0) << made.out;
  std::string token_file = dir.path() + "/scrape.token";
  std::ofstream(token_file) << made.out.substr(0, made.out.find('\n'));
  std::string target = baton.url().substr(baton.url().find("//") + 2);
  std::string config = dir.path() + "/prometheus.yml";
  std::ofstream(config) << "global: {scrape_interval: 1s}\n"
                           "scrape_configs:\n"
                           "  - job_name: baton\n"
                           // Over HTTPS, trusting the server's own CA, as in production.
                           "    scheme: https\n"
                           "    tls_config: {ca_file: "
                        << baton.ca_file()
                        << "}\n"
                           "    authorization: {credentials_file: "
                        << token_file
                        << "}\n"
                           "    static_configs: [{targets: ['"
                        << target << "']}]\n";
  // Prometheus on a free loopback port, its data in the test's directory.
  int port = FreePort();
  ASSERT_GT(port, 0);
  pid_t prom = fork();
  if (prom == 0) {
    std::string log = dir.path() + "/prometheus.log";
    FILE* f = std::freopen(log.c_str(), "w", stdout);
    (void)f;
    dup2(1, 2);
    std::string listen = "--web.listen-address=127.0.0.1:" + std::to_string(port);
    std::string cfg = "--config.file=" + config;
    std::string tsdb = "--storage.tsdb.path=" + dir.path() + "/tsdb";
    execl("/usr/bin/prometheus", "prometheus", cfg.c_str(), tsdb.c_str(), listen.c_str(), nullptr);
    _exit(127);
  }
  auto prometheus = net::HttpClient::Create("http://127.0.0.1:" + std::to_string(port), "");
  ASSERT_TRUE(prometheus.has_value());
  std::string answer;
  bool found = Within(std::chrono::seconds(60), [&] {
    auto r = (*prometheus)->Request("GET", "/api/v1/query?query=baton_jobs_submitted_total");
    if (!r || r->status != 200) return false;
    answer = r->body;
    return answer.find("\"value\":[") != std::string::npos &&
           answer.find(",\"3\"]") != std::string::npos;
  });
  kill(prom, SIGTERM);
  waitpid(prom, nullptr, 0);
  EXPECT_TRUE(found) << answer << "\n"
                     << [&] {
                          std::ifstream in(dir.path() + "/prometheus.log");
                          std::stringstream ss;
                          ss << in.rdbuf();
                          return ss.str().substr(0, 4000);
                        }();
}

}  // namespace
}  // namespace baton::testing
