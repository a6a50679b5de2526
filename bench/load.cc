// baton_load: drives a running baton over HTTP and reports what a user would measure.
//
//   baton_load submit  --jobs N --conns C [--held 1]  durable submits/s, p50/p99 ack latency
//                                               (--held 1: submitted held, so none runs)
//   baton_load latency --runs N                submit -> the job's process running, p50/p99
//   baton_load e2e     --jobs N                one-GPU `true` jobs/s, from first submit to last end
//   baton_load spawn   --jobs N --conns C -- PROGRAM [ARG...]
//                                              this machine's bound: PROGRAM started with
//                                              posix_spawn N times, C at once, no baton involved
//
// Server and token as for the CLI: --server/--token, else $BATON_SERVER/$BATON_TOKEN, else the
// server.url and admin.token of $BATON_HOME (default ~/.baton); an https:// server's CA as
// for the CLI too (--tls-ca, $BATON_TLS_CA, $BATON_HOME/tls/ca.crt).
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "net/http_client.h"

namespace {

using baton::bench::Percentile;
using baton::bench::ReadFirstLine;

namespace json = boost::json;
using Clock = std::chrono::steady_clock;

struct Options {
  std::string mode;
  std::string server, token;
  baton::net::TlsClientOptions tls;  // --tls-ca, else $BATON_TLS_CA, else $BATON_HOME/tls/ca.crt
  int jobs = 10000;
  int conns = 16;
  int runs = 50;
  int batch = 100;
  bool held = false;
};

[[noreturn]] void Die(const std::string& msg) {
  std::cerr << "baton_load: " << msg << "\n";
  std::exit(1);
}

std::unique_ptr<baton::net::HttpClient> Connect(const Options& o) {
  auto c = baton::net::HttpClient::Create(o.server, o.token, o.tls);
  if (!c) Die(c.error().message());
  return std::move(*c);
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

int64_t IdOf(const std::string& body) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec || !v.is_object() || !v.get_object().contains("id")) return 0;
  return v.get_object().at("id").to_number<int64_t>();
}

// C connections, each submitting its share of N jobs one after another over keep-alive.
int Submit(const Options& o) {
  std::vector<std::vector<double>> latencies(static_cast<size_t>(o.conns));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  auto start = Clock::now();
  for (int c = 0; c < o.conns; ++c) {
    threads.emplace_back([&, c] {
      auto client = Connect(o);
      int mine = o.jobs / o.conns + (c < o.jobs % o.conns ? 1 : 0);
      auto& lat = latencies[static_cast<size_t>(c)];
      lat.reserve(static_cast<size_t>(mine));
      const std::string body =
          std::string(R"({"name": "load", "command": ["true"], "resources": {"gpus": 1})") +
          (o.held ? R"(, "hold": true})" : "}");
      for (int i = 0; i < mine; ++i) {
        auto t0 = Clock::now();
        auto r = client->Request("POST", "/v1/jobs", body);
        lat.push_back(Ms(Clock::now() - t0));
        if (!r || r->status != 201) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  double secs = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::printf(
      "submit: %d jobs over %d connections in %.2f s: %.0f durable submits/s; "
      "ack latency p50 %.2f ms, p99 %.2f ms; failures %d\n",
      o.jobs, o.conns, secs, o.jobs / secs, Percentile(all, 0.5), Percentile(all, 0.99),
      failures.load());
  return failures == 0 ? 0 : 1;
}

// One job at a time on an idle cluster: time from sending the submit to the job's own first
// instruction (it writes the wall clock to a file).
int Latency(const Options& o) {
  auto client = Connect(o);
  std::string dir =
      std::filesystem::temp_directory_path() / ("baton-load-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::vector<double> lat;
  for (int i = 0; i < o.runs; ++i) {
    std::string file = dir + "/" + std::to_string(i);
    std::string body = R"({"name": "latency", "command": ["/bin/sh", "-c", "date +%s%N > )" + file +
                       R"("], "resources": {"gpus": 1}})";
    auto sent = std::chrono::system_clock::now();
    auto r = client->Request("POST", "/v1/jobs", body);
    if (!r || r->status != 201) Die("submit failed: " + (r ? r->body : r.error().message()));
    std::string stamp;
    for (int k = 0; k < 5000 && stamp.empty(); ++k) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      stamp = ReadFirstLine(file);
    }
    if (stamp.empty()) Die("job " + std::to_string(IdOf(r->body)) + " did not start within 5 s");
    int64_t ran_ns = std::stoll(stamp);
    int64_t sent_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(sent.time_since_epoch()).count();
    lat.push_back(static_cast<double>(ran_ns - sent_ns) / 1e6);
    std::this_thread::sleep_for(
        std::chrono::milliseconds(20));  // let it end: the GPU is idle again
  }
  std::filesystem::remove_all(dir);
  std::printf(
      "latency: submit -> job running, %d runs on an idle GPU: p50 %.2f ms, p99 %.2f ms, max %.2f "
      "ms\n",
      o.runs, Percentile(lat, 0.5), Percentile(lat, 0.99), Percentile(lat, 1.0));
  return 0;
}

// N one-GPU `true` jobs, submitted in batches; jobs/s from the first submit to the last end.
int EndToEnd(const Options& o) {
  auto client = Connect(o);
  auto start = Clock::now();
  int64_t first = 0, last = 0;
  for (int done = 0; done < o.jobs;) {
    int n = std::min(o.batch, o.jobs - done);
    std::string body = R"({"jobs": [)";
    for (int i = 0; i < n; ++i)
      body += std::string(i ? "," : "") +
              R"({"name": "e2e", "command": ["true"], "resources": {"gpus": 1}})";
    body += "]}";
    auto r = client->Request("POST", "/v1/jobs/batch", body);
    if (!r || r->status != 201) Die("batch submit failed: " + (r ? r->body : r.error().message()));
    json::value v = json::parse(r->body);
    for (const auto& j : v.at("jobs").as_array()) {
      int64_t id = j.at("id").to_number<int64_t>();
      if (first == 0) first = id;
      last = id;
    }
    done += n;
  }
  double submitted = std::chrono::duration<double>(Clock::now() - start).count();
  // Wait until none of them is pending or running.
  for (;;) {
    auto r = client->Request("GET", "/v1/jobs?state=pending,running&limit=1");
    if (!r || r->status != 200) Die("list failed");
    if (json::parse(r->body).at("jobs").as_array().empty()) break;
    // Not faster: the poll itself costs the server CPU the jobs would otherwise get.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  double secs = std::chrono::duration<double>(Clock::now() - start).count();
  int failed = 0;
  auto r = client->Request("GET", "/v1/jobs?state=failed,cancelled,timed_out&limit=1000");
  if (r && r->status == 200)
    failed = static_cast<int>(json::parse(r->body).at("jobs").as_array().size());
  std::printf(
      "e2e: %d one-GPU `true` jobs (ids %lld..%lld) in %.2f s (submitted in %.2f s): %.0f jobs/s; "
      "not succeeded: %d\n",
      o.jobs, static_cast<long long>(first), static_cast<long long>(last), secs, submitted,
      o.jobs / secs, failed);
  return failed == 0 ? 0 : 1;
}

// Processes started per second with posix_spawn, C at a time: what the machine allows any
// scheduler that runs one process per job.
int Spawn(const Options& o, char** program) {
  auto start = Clock::now();
  int running = 0, started = 0, failed = 0;
  while (started < o.jobs || running > 0) {
    while (running < o.conns && started < o.jobs) {
      pid_t pid = 0;
      if (posix_spawn(&pid, program[0], nullptr, nullptr, program, environ) != 0)
        Die(std::string("cannot start ") + program[0]);
      ++running;
      ++started;
    }
    int status = 0;
    if (wait(&status) > 0) {
      --running;
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
    }
  }
  double secs = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("spawn: %d runs of %s, %d at a time, in %.2f s: %.0f/s; failed %d\n", o.jobs,
              program[0], o.conns, secs, o.jobs / secs, failed);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (argc < 2)
    Die("usage: baton_load submit|latency|e2e|spawn [--jobs N] [--conns C] [--runs N] [--batch B] "
        "[--server URL] [--token T]");
  o.mode = argv[1];
  char** program = nullptr;
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]) == "--") {
      program = argv + i + 1;
      argc = i;
      break;
    }
  }
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--jobs")
      o.jobs = std::max(1, std::atoi(v.c_str()));
    else if (k == "--conns")
      o.conns = std::max(1, std::atoi(v.c_str()));
    else if (k == "--runs")
      o.runs = std::max(1, std::atoi(v.c_str()));
    else if (k == "--batch")
      o.batch = std::max(1, std::atoi(v.c_str()));
    else if (k == "--held")
      o.held = v == "1" || v == "true";
    else if (k == "--server")
      o.server = v;
    else if (k == "--token")
      o.token = v;
    else if (k == "--tls-ca")
      o.tls.ca_file = v;
    else
      Die("unknown option " + k);
  }
  if (o.mode == "spawn") {
    if (program == nullptr || program[0] == nullptr) Die("spawn: give the program after --");
    return Spawn(o, program);
  }
  baton::bench::ResolveServer(baton::bench::BatonHome(), o.server, o.token, o.tls);
  if (o.server.empty()) Die("no server: pass --server or start `baton up`");
  if (o.mode == "submit") return Submit(o);
  if (o.mode == "latency") return Latency(o);
  if (o.mode == "e2e") return EndToEnd(o);
  Die("unknown mode " + o.mode);
}
