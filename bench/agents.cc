// baton_agents: a thousand (or ten thousand) simulated nodes in one process against a running
// controller, over the real agent protocol on loopback (bench/agent_fleet.h), and what the
// controller spends on them (issues 20 and 41). In order, each step skipped when its option is 0:
//
//   register  every agent registers at once: wall time, round trip p50/p99, and the server's
//             RSS per node (its RSS with the agents connected minus before, over N)
//   idle      --idle-s S: nothing changes; agents report GPU readings every 2 s (or as often as
//             the controller's answers ask) and keep a long poll open: server CPU, reports/s
//             and their round trip p50/p99, polls/s
//   backlog   --backlog N: N held jobs through POST /v1/jobs/batch: submits/s, RSS per job
//   idle      again, with the backlog held
//   latency   --latency-runs N: one-GPU jobs one at a time while GPUs are free: submit -> its
//             201 (committed), -> the launch order at the simulated agent, and -> its start
//             report acknowledged; --latency-csv FILE writes each job's three times and when
//             it was submitted (seconds into the step), to see where the slow ones fall
//   churn     --churn-s S: every GPU busy, jobs ending and starting all the time (each runs
//             about --run-ms), --churn-queue more waiting: server CPU, starts/s, reports/s and
//             their round trip, and how many GPUs the controller keeps running jobs
//   verify    the latency jobs went pending -> running -> succeeded
//
//   baton_agents [--agents 1000] [--gpus 8xH100-80GB] [--run-ms 30000] [--backlog 100000]
//                [--idle-s 20] [--latency-runs 200] [--latency-csv FILE] [--churn-s 30]
//                [--churn-queue 2000]
//                [--report-threads R] [--poll-threads 2] [--join 1] [--prefix sim] [--user bench]
//                [--server-pid PID]
//
// Start the controller alone, so that these are its only nodes:
//   D=$(mktemp -d); baton server --data $D --listen 127.0.0.1:0 &
//   BATON_HOME=$D baton_agents
// Server, token and CA as for baton_load (--server/--token/--tls-ca, $BATON_SERVER,
// $BATON_TOKEN, $BATON_HOME's server.url, admin.token and tls/ca.crt). The server's process is
// --server-pid, else the process listening on the server's port. --join 1: each agent joins
// with $BATON_HOME/agent.token first and uses its own credential (only once per node name:
// use a new --prefix or data directory to join again). Agents use the admin token otherwise,
// which the node protocol accepts. Each agent has a connection of its own for its long polls,
// from a loopback address of its own, all on --poll-threads threads (2); --report-threads R
// threads (default min(N, 64)) send every agent's reports, each over a connection of its own
// (bench/agent_fleet.h). The soft limit on open files is raised to the hard one; a run that
// needs more descriptors than that (N + 4 R + a few) stops before it starts. Jobs are
// submitted as --user (default bench, with a user token made for it); --user "" submits them
// with the admin token, as the server's own user.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "agent_fleet.h"
#include "bench_util.h"

namespace {

using baton::bench::Percentile;
using baton::bench::ReadFirstLine;

namespace json = boost::json;
namespace fs = std::filesystem;
using baton::Duration;
using baton::bench::AgentFleet;
using baton::bench::FleetWindow;
using baton::bench::SteadyClock;

constexpr const char* kLatencyName = "baton-agents-lat";
constexpr const char* kFillName = "baton-agents-fill";
constexpr const char* kChurnName = "baton-agents-churn";

struct Options {
  std::string server, token, home;
  // Jobs are submitted as this user, with a user token made for it; "" submits them with the
  // admin token, as the server's own user (root's jobs, if the server runs as root).
  std::string user = "bench";
  std::string submit_token;
  baton::net::TlsClientOptions tls;
  int agents = 1000;
  std::string gpus = "8xH100-80GB";
  std::string prefix = "sim";
  int64_t run_ms = 30'000;
  int backlog = 100'000;
  int batch = 1000;
  int idle_s = 20;
  int latency_runs = 200;
  int latency_gap_ms = 20;
  std::string latency_csv;  // each latency job's times, one line each ("" = none)
  int churn_s = 30;
  int churn_queue = 2000;
  int report_threads = 0;  // min(agents, 64)
  int poll_threads = 2;
  bool join = false;
  int server_pid = 0;
};

// Ends the run at once, from any thread: with the agents' threads running, exit()'s destructors
// would pull their state from under them.
[[noreturn]] void Die(const std::string& msg) {
  std::fflush(stdout);
  std::cerr << "baton_agents: " << msg << std::endl;
  std::_Exit(1);
}

double Ms(SteadyClock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }
double Secs(SteadyClock::duration d) { return std::chrono::duration<double>(d).count(); }

std::string Quantiles(const std::vector<double>& v) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "p50 %.2f ms, p99 %.2f ms, max %.2f ms (%zu)", Percentile(v, 0.5),
                Percentile(v, 0.99), Percentile(v, 1.0), v.size());
  return buf;
}

// A job's run time from its id: the same on every poll thread, no shared generator.
double Unit(int64_t id) {
  uint64_t z = static_cast<uint64_t>(id) + 0x9e3779b97f4a7c15ULL;  // splitmix64
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return static_cast<double>((z ^ (z >> 31)) >> 11) / 9007199254740992.0;  // [0, 1)
}

// ---- the server's process, from /proc ----

// The process with a listening TCP socket on `port`: its socket's inode in /proc/net/tcp*, then
// the process holding that inode among its descriptors.
int FindPidByPort(int port) {
  std::string inode;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (inode.empty() && std::getline(in, line)) {
      std::istringstream f(line);
      std::string sl, local, remote, st, queues, timer, retr, uid, timeout, ino;
      f >> sl >> local >> remote >> st >> queues >> timer >> retr >> uid >> timeout >> ino;
      size_t colon = local.rfind(':');
      if (st != "0A" || colon == std::string::npos) continue;  // 0A: LISTEN
      if (std::strtol(local.c_str() + colon + 1, nullptr, 16) == port) inode = ino;
    }
  }
  if (inode.empty()) return 0;
  const std::string want = "socket:[" + inode + "]";
  std::error_code ec;
  for (const auto& p : fs::directory_iterator("/proc", ec)) {
    const std::string pid = p.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code fd_ec;
    for (const auto& fd : fs::directory_iterator(p.path() / "fd", fd_ec)) {
      std::error_code link_ec;
      if (fs::read_symlink(fd.path(), link_ec).string() == want) return std::atoi(pid.c_str());
    }
  }
  return 0;
}

struct ProcSample {
  SteadyClock::time_point at;
  double cpu_s = 0;               // utime + stime, all threads
  int64_t rss_bytes = 0;          // VmRSS
  std::map<int, double> threads;  // tid -> CPU seconds
};

// utime + stime of a /proc/.../stat line, in seconds.
double CpuOfStat(const std::string& stat) {
  size_t paren = stat.rfind(')');  // the command may hold spaces
  if (paren == std::string::npos) return 0;
  std::istringstream f(stat.substr(paren + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && f >> field; ++i) {
    if (i == 14 || i == 15) ticks += std::strtod(field.c_str(), nullptr);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

ProcSample SampleProcess(int pid) {
  ProcSample s;
  s.at = SteadyClock::now();
  const std::string dir = "/proc/" + std::to_string(pid);
  s.cpu_s = CpuOfStat(ReadFirstLine(dir + "/stat"));
  std::ifstream status(dir + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with("VmRSS:")) s.rss_bytes = std::atoll(line.c_str() + 6) * 1024;
  }
  std::error_code ec;
  for (const auto& t : fs::directory_iterator(dir + "/task", ec)) {
    s.threads[std::atoi(t.path().filename().c_str())] = CpuOfStat(ReadFirstLine(t.path() / "stat"));
  }
  return s;
}

double SelfCpu() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// Raises the soft limit on open files to the hard one; dies when `fleet` descriptors (and a
// margin for this tool's own clients, /proc reads and standard streams) do not fit under it.
void RaiseFileLimit(int64_t fleet) {
  constexpr int64_t kMargin = 64;
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) Die("getrlimit(RLIMIT_NOFILE) failed");
  if (r.rlim_cur != r.rlim_max) {
    rlimit raised = r;
    raised.rlim_cur = r.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) r = raised;
  }
  if (r.rlim_cur == RLIM_INFINITY || static_cast<int64_t>(r.rlim_cur) >= fleet + kMargin) return;
  Die("this run needs " + std::to_string(fleet + kMargin) + " open files (" +
      std::to_string(fleet) + " for the agents' connections and report clients, " +
      std::to_string(kMargin) + " more for this tool), but the limit is " +
      std::to_string(r.rlim_cur) + " (hard limit " + std::to_string(r.rlim_max) +
      "): pass fewer --agents or --report-threads, or raise `ulimit -Hn`");
}

// ---- the controller's own counters (GET /metrics) ----

struct Counters {
  double commands = 0, commits = 0, batches = 0, end_batch_s = 0;
};

Counters ReadCounters(baton::net::HttpClient& client) {
  Counters c;
  auto r = client.Request("GET", "/metrics");
  if (!r || r->status != 200) return c;
  std::istringstream in(r->body);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string name;
    double v = 0;
    if (!(f >> name >> v)) continue;
    if (name == "baton_controller_commands_total") c.commands = v;
    if (name == "baton_store_commits_total") c.commits = v;
    if (name == "baton_scheduling_cycle_duration_seconds_count") c.batches = v;
    if (name == "baton_scheduling_cycle_duration_seconds_sum") c.end_batch_s = v;
  }
  return c;
}

// ---- a measured window ----

struct Mark {
  ProcSample server;
  double self_cpu = 0;
  Counters counters;
};

class Bench {
 public:
  Bench(Options o, int pid, std::unique_ptr<AgentFleet> fleet,
        std::unique_ptr<baton::net::HttpClient> client)
      : o_(std::move(o)), pid_(pid), fleet_(std::move(fleet)), client_(std::move(client)) {}

  int Run();

 private:
  Mark Begin();
  // Prints what the server did between `begin` and now, with the fleet's window.
  void End(const std::string& what, const Mark& begin);
  void Register();
  void Idle(const std::string& what);
  void Backlog();
  void Latency();
  void Churn();
  void Verify();
  // Submits `n` jobs named `name` in one batch (held or not); their ids.
  std::vector<int64_t> SubmitBatch(baton::net::HttpClient& client, int n, const char* name,
                                   bool held);

  Options o_;
  int pid_;
  std::unique_ptr<AgentFleet> fleet_;
  std::unique_ptr<baton::net::HttpClient> client_;
  int gpus_per_node_ = 0;
  std::vector<int64_t> latency_jobs_;
};

Mark Bench::Begin() {
  Mark m;
  m.counters = ReadCounters(*client_);  // before the CPU sample: GET /metrics is not the load's
  (void)fleet_->TakeWindow();
  m.server = SampleProcess(pid_);
  m.self_cpu = SelfCpu();
  return m;
}

void Bench::End(const std::string& what, const Mark& begin) {
  ProcSample now = SampleProcess(pid_);
  double self = SelfCpu();
  FleetWindow w = fleet_->TakeWindow();
  Counters c = ReadCounters(*client_);
  double secs = Secs(now.at - begin.server.at);
  double cpu = now.cpu_s - begin.server.cpu_s;
  std::printf(
      "%s: %.1f s; server CPU %.1f%% of one core (%.3f s), RSS %.1f MiB; this tool %.1f%%\n",
      what.c_str(), secs, 100 * cpu / secs, cpu, static_cast<double>(now.rss_bytes) / (1 << 20),
      100 * (self - begin.self_cpu) / secs);
  // The busiest threads of the server: the controller loop and the HTTP thread, mostly.
  std::vector<std::pair<double, int>> threads;
  for (const auto& [tid, s] : now.threads) {
    auto it = begin.server.threads.find(tid);
    threads.emplace_back(s - (it == begin.server.threads.end() ? 0 : it->second), tid);
  }
  std::sort(threads.rbegin(), threads.rend());
  std::printf("  busiest server threads:");
  for (size_t i = 0; i < std::min<size_t>(3, threads.size()); ++i)
    std::printf(" tid %d %.1f%%", threads[i].second, 100 * threads[i].first / secs);
  std::printf("\n");
  double batches = c.batches - begin.counters.batches;
  std::printf(
      "  controller: %.0f commands/s, %.0f batches/s (EndBatch mean %.3f ms), %.0f commits/s\n",
      (c.commands - begin.counters.commands) / secs, batches / secs,
      batches > 0 ? 1000 * (c.end_batch_s - begin.counters.end_batch_s) / batches : 0.0,
      (c.commits - begin.counters.commits) / secs);
  std::printf(
      "  agents: %.0f reports/s (%s), %.1f polls/s answered (%.1f empty after the long "
      "wait, %.1f with orders)\n",
      static_cast<double>(w.reports) / secs, Quantiles(w.report_ms).c_str(),
      static_cast<double>(w.polls_empty + w.polls_orders) / secs,
      static_cast<double>(w.polls_empty) / secs, static_cast<double>(w.polls_orders) / secs);
  if (w.launches + w.exits_acked + w.stops > 0)
    std::printf("  jobs: %.1f launches/s, %.1f exits acknowledged/s, %" PRId64 " stops\n",
                static_cast<double>(w.launches) / secs, static_cast<double>(w.exits_acked) / secs,
                w.stops);
  if (w.report_errors + w.poll_errors + w.conflicts > 0)
    std::printf("  errors: %" PRId64 " reports, %" PRId64 " polls, %" PRId64
                " sessions lost (409); first: %s\n",
                w.report_errors, w.poll_errors, w.conflicts, w.first_error.c_str());
  std::fflush(stdout);
}

void Bench::Register() {
  ProcSample before = SampleProcess(pid_);
  auto started = fleet_->Start(std::chrono::seconds(120));
  if (!started) Die(started.error().message());
  std::printf("register: %d agents (%s each) in %.2f s; round trip %s\n", o_.agents,
              o_.gpus.c_str(), started->seconds, Quantiles(started->register_ms).c_str());
  if (!started->join_ms.empty())
    std::printf("  joins before them: %s\n", Quantiles(started->join_ms).c_str());
  // Let every agent's first readings and long poll arrive: the steady state of a connected node.
  std::this_thread::sleep_for(std::chrono::seconds(5));
  ProcSample after = SampleProcess(pid_);
  double cpu = after.cpu_s - before.cpu_s;
  std::printf(
      "  server RSS %.1f MiB -> %.1f MiB: %.1f KiB per node; server CPU %.2f s for the "
      "registrations and the first 5 s\n",
      static_cast<double>(before.rss_bytes) / (1 << 20),
      static_cast<double>(after.rss_bytes) / (1 << 20),
      static_cast<double>(after.rss_bytes - before.rss_bytes) / 1024 / o_.agents, cpu);
  std::fflush(stdout);
}

void Bench::Idle(const std::string& what) {
  Mark m = Begin();
  std::this_thread::sleep_for(std::chrono::seconds(o_.idle_s));
  End(what, m);
}

std::vector<int64_t> Bench::SubmitBatch(baton::net::HttpClient& client, int n, const char* name,
                                        bool held) {
  std::string one = std::string(R"({"name": ")") + name +
                    R"(", "command": ["true"], "resources": {"gpus": 1})" +
                    (held ? R"(, "hold": true})" : "}");
  std::string body = R"({"jobs": [)";
  for (int i = 0; i < n; ++i) body += (i ? "," : "") + one;
  body += "]}";
  auto r = client.Request("POST", "/v1/jobs/batch", body, {}, std::chrono::seconds(120));
  if (!r || r->status != 201)
    Die("batch submit failed: " +
        (r ? "HTTP " + std::to_string(r->status) + ": " + r->body : r.error().message()));
  std::vector<int64_t> ids;
  boost::system::error_code ec;
  json::value v = json::parse(r->body, ec);
  if (ec || !v.is_object() || !v.as_object().contains("jobs"))
    Die("batch submit: no jobs answered");
  for (const auto& j : v.at("jobs").as_array()) ids.push_back(j.at("id").to_number<int64_t>());
  return ids;
}

void Bench::Backlog() {
  ProcSample before = SampleProcess(pid_);
  auto t0 = SteadyClock::now();
  for (int done = 0; done < o_.backlog; done += o_.batch)
    SubmitBatch(*client_, std::min(o_.batch, o_.backlog - done), "baton-agents-held", true);
  double secs = Secs(SteadyClock::now() - t0);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  ProcSample after = SampleProcess(pid_);
  std::printf(
      "backlog: %d held jobs in batches of %d in %.2f s (%.0f jobs/s); server RSS %.1f MiB "
      "-> %.1f MiB: %.0f bytes per job\n",
      o_.backlog, o_.batch, secs, o_.backlog / secs,
      static_cast<double>(before.rss_bytes) / (1 << 20),
      static_cast<double>(after.rss_bytes) / (1 << 20),
      static_cast<double>(after.rss_bytes - before.rss_bytes) / o_.backlog);
  std::fflush(stdout);
}

void Bench::Latency() {
  Mark m = Begin();
  const auto began = SteadyClock::now();
  std::vector<double> to_ack, to_launch, to_started;
  std::FILE* csv = nullptr;
  if (!o_.latency_csv.empty()) {
    csv = std::fopen(o_.latency_csv.c_str(), "w");
    if (csv == nullptr) Die("--latency-csv " + o_.latency_csv + ": " + std::strerror(errno));
    std::fprintf(csv, "job,submitted_s,ack_ms,launch_ms,started_ms\n");
  }
  const std::string body = std::string(R"({"name": ")") + kLatencyName +
                           R"(", "command": ["true"], "resources": {"gpus": 1}})";
  for (int i = 0; i < o_.latency_runs; ++i) {
    auto t0 = SteadyClock::now();
    auto r = client_->Request("POST", "/v1/jobs", body);
    auto acked_at = SteadyClock::now();
    if (!r || r->status != 201)
      Die("submit failed: " +
          (r ? "HTTP " + std::to_string(r->status) + ": " + r->body : r.error().message()));
    boost::system::error_code ec;
    json::value v = json::parse(r->body, ec);
    if (ec || !v.is_object() || !v.as_object().contains("id")) Die("submit: no id answered");
    int64_t id = v.at("id").to_number<int64_t>();
    latency_jobs_.push_back(id);
    auto launched = fleet_->WaitLaunch(id, std::chrono::seconds(10));
    if (!launched) Die("job " + std::to_string(id) + " was not launched within 10 s");
    to_ack.push_back(Ms(acked_at - t0));
    to_launch.push_back(Ms(*launched - t0));
    // Its start report goes at once; give it a moment to be answered.
    for (int k = 0; k < 1000 && !fleet_->StartAcked(id); ++k)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    auto started = fleet_->StartAcked(id);
    if (started) to_started.push_back(Ms(*started - t0));
    if (csv != nullptr)
      std::fprintf(csv, "%" PRId64 ",%.6f,%.3f,%.3f,%.3f\n", id, Secs(t0 - began), to_ack.back(),
                   to_launch.back(), started ? to_started.back() : -1.0);
    std::this_thread::sleep_for(std::chrono::milliseconds(o_.latency_gap_ms));
  }
  std::printf("latency: %d one-GPU jobs, one at a time, GPUs free:\n", o_.latency_runs);
  if (csv != nullptr) std::fclose(csv);
  std::printf("  submit -> 201 Created (committed): %s\n", Quantiles(to_ack).c_str());
  std::printf("  submit -> launch order at the agent: %s\n", Quantiles(to_launch).c_str());
  std::printf("  submit -> its start report acknowledged (the job's started_at): %s\n",
              Quantiles(to_started).c_str());
  End("  during it", m);
}

void Bench::Churn() {
  const int64_t gpus = static_cast<int64_t>(o_.agents) * gpus_per_node_;
  const int64_t want = gpus + o_.churn_queue;  // every GPU busy, and a queue behind them
  std::atomic<int64_t> submitted{0};
  std::atomic<bool> topping{true};
  auto done = [&] { return fleet_->ExitsOf(kFillName) + fleet_->ExitsOf(kChurnName); };
  auto t0 = SteadyClock::now();
  int64_t launches_before = fleet_->launches();
  for (int64_t n = 0; n < want; n += o_.batch) {
    int k = static_cast<int>(std::min<int64_t>(o_.batch, want - n));
    SubmitBatch(*client_, k, kFillName, false);
    submitted += k;
  }
  // Jobs end as the agents say; as many new ones are submitted, a batch at a time.
  std::thread topper([&] {
    auto client = baton::net::HttpClient::Create(o_.server, o_.submit_token, o_.tls);
    if (!client) Die(client.error().message());
    while (topping) {
      int64_t missing = want - (submitted - done());
      if (missing > 0) {
        int k = static_cast<int>(std::min<int64_t>(missing, o_.batch));
        SubmitBatch(**client, k, kChurnName, false);
        submitted += k;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
  });
  // The first fill: as many launches as GPUs (less the latency jobs still running).
  while (fleet_->launches() - launches_before < gpus * 95 / 100 &&
         SteadyClock::now() - t0 < std::chrono::seconds(120))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::printf("churn: %" PRId64 " jobs submitted, %" PRId64 " launched in %.2f s (%" PRId64
              " GPUs); steady churn from here\n",
              want, fleet_->launches() - launches_before, Secs(SteadyClock::now() - t0), gpus);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  Mark m = Begin();
  // How well the controller keeps the GPUs fed: the GPUs the agents run jobs on, 4 times a second.
  double busy_sum = 0;
  int64_t busy_min = gpus, samples = 0;
  for (auto end = SteadyClock::now() + std::chrono::seconds(o_.churn_s);
       SteadyClock::now() < end;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    int64_t busy = fleet_->BusyGpus();
    busy_sum += static_cast<double>(busy);
    busy_min = std::min(busy_min, busy);
    ++samples;
  }
  End("churn", m);
  std::printf("  GPUs running jobs: mean %.0f (%.1f%%), least %" PRId64 ", of %" PRId64 "\n",
              busy_sum / static_cast<double>(samples),
              100 * busy_sum / static_cast<double>(samples * gpus), busy_min, gpus);
  topping = false;
  topper.join();
}

void Bench::Verify() {
  // Each latency job must have gone pending -> running -> succeeded: wait for the last to end.
  auto deadline =
      SteadyClock::now() + std::chrono::milliseconds(o_.run_ms) + std::chrono::seconds(30);
  std::map<std::string, int> states;
  for (;;) {
    states.clear();
    for (int64_t id : latency_jobs_) {
      auto r = client_->Request("GET", "/v1/jobs/" + std::to_string(id));
      boost::system::error_code ec;
      json::value v = r && r->status == 200 ? json::parse(r->body, ec) : json::value();
      states[v.is_object() && v.as_object().contains("state")
                 ? std::string(v.at("state").as_string())
                 : "unreadable"] += 1;
    }
    if (states["succeeded"] == static_cast<int>(latency_jobs_.size()) ||
        SteadyClock::now() > deadline)
      break;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  std::printf("verify: the %zu latency jobs:", latency_jobs_.size());
  for (const auto& [state, n] : states)
    if (n > 0) std::printf(" %d %s", n, state.c_str());
  std::printf("\n");
}

int Bench::Run() {
  double load[3] = {0, 0, 0};
  if (getloadavg(load, 3) < 0) load[0] = -1;
  std::printf(
      "baton_agents: %d agents against %s (server pid %d), jobs of %s; %ld CPUs here, load "
      "average %.2f when started\n",
      o_.agents, o_.server.c_str(), pid_, o_.user.empty() ? "the admin token" : o_.user.c_str(),
      sysconf(_SC_NPROCESSORS_ONLN), load[0]);
  auto spec = baton::ParseGpuSpec(o_.gpus);
  gpus_per_node_ = spec ? spec->count : 0;
  Register();
  if (o_.idle_s > 0) Idle("idle, " + std::to_string(o_.agents) + " agents, no jobs");
  if (o_.backlog > 0) {
    Backlog();
    if (o_.idle_s > 0) Idle("idle, " + std::to_string(o_.backlog) + " jobs held");
  }
  if (o_.latency_runs > 0) Latency();
  if (o_.churn_s > 0) Churn();
  if (!latency_jobs_.empty()) Verify();
  fleet_->Stop();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (k == "-h" || k == "--help") {
      std::printf(
          "usage: baton_agents [--agents N] [--gpus SPEC] [--run-ms MS] [--backlog N] "
          "[--batch B] [--idle-s S] [--latency-runs N] [--latency-gap-ms MS] [--latency-csv FILE] "
          "[--churn-s S] [--churn-queue N] [--report-threads R] [--poll-threads T] [--join 0|1] "
          "[--prefix P] [--user NAME] [--server-pid PID] [--server URL] [--token T] [--tls-ca "
          "FILE]\n"
          "(see the top of bench/agents.cc)\n");
      return 0;
    }
    if (i + 1 >= argc) Die("option " + k + " needs a value");
    std::string v = argv[++i];
    auto number = [&](int64_t lo, int64_t hi) {
      char* end = nullptr;
      long long n = std::strtoll(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n < lo || n > hi)
        Die(k + ": \"" + v + "\" is not a number from " + std::to_string(lo) + " to " +
            std::to_string(hi));
      return static_cast<int64_t>(n);
    };
    if (k == "--agents")
      o.agents = static_cast<int>(number(1, 100'000));
    else if (k == "--gpus")
      o.gpus = v;
    else if (k == "--prefix")
      o.prefix = v;
    else if (k == "--run-ms")
      o.run_ms = number(1, 86'400'000);
    else if (k == "--backlog")
      o.backlog = static_cast<int>(number(0, 10'000'000));
    else if (k == "--batch")
      o.batch = static_cast<int>(number(1, 10'000));
    else if (k == "--idle-s")
      o.idle_s = static_cast<int>(number(0, 86'400));
    else if (k == "--latency-runs")
      o.latency_runs = static_cast<int>(number(0, 1'000'000));
    else if (k == "--latency-gap-ms")
      o.latency_gap_ms = static_cast<int>(number(0, 60'000));
    else if (k == "--latency-csv")
      o.latency_csv = v;
    else if (k == "--churn-s")
      o.churn_s = static_cast<int>(number(0, 86'400));
    else if (k == "--churn-queue")
      o.churn_queue = static_cast<int>(number(0, 10'000'000));
    else if (k == "--report-threads")
      o.report_threads = static_cast<int>(number(0, 100'000));
    else if (k == "--poll-threads")
      o.poll_threads = static_cast<int>(number(1, 64));
    else if (k == "--join")
      o.join = number(0, 1) == 1;
    else if (k == "--user")
      o.user = v;
    else if (k == "--server-pid")
      o.server_pid = static_cast<int>(number(1, INT32_MAX));
    else if (k == "--server")
      o.server = v;
    else if (k == "--token")
      o.token = v;
    else if (k == "--tls-ca")
      o.tls.ca_file = v;
    else
      Die("unknown option " + k + " (--help lists them)");
  }
  o.home = baton::bench::BatonHome();
  baton::bench::ResolveServer(o.home, o.server, o.token, o.tls);
  if (o.server.empty())
    Die("no server: pass --server or set BATON_HOME to a `baton server`'s data");
  if (o.token.empty()) Die("no token: pass --token or set BATON_HOME");

  auto url = baton::net::ParseHttpUrl(o.server);
  if (!url) Die(url.error().message());
  int pid = o.server_pid != 0 ? o.server_pid : FindPidByPort(std::atoi(url->port.c_str()));
  if (pid == 0)
    Die("cannot find the process listening on port " + url->port + " of " + o.server +
        ": pass --server-pid");
  if (!fs::exists("/proc/" + std::to_string(pid) + "/stat"))
    Die("no process " + std::to_string(pid) + " (--server-pid)");

  baton::bench::FleetOptions f{.server = o.server, .token = o.token, .tls = o.tls};
  if (o.join) {
    f.join_token = ReadFirstLine(o.home + "/agent.token");
    if (f.join_token.empty()) Die("--join 1: no join token in " + o.home + "/agent.token");
  }
  f.agents = o.agents;
  f.prefix = o.prefix;
  f.gpus = o.gpus;
  f.report_threads = o.report_threads;
  f.poll_threads = o.poll_threads;
  const int64_t run_ms = o.run_ms;
  f.run_time = [run_ms](const baton::LaunchOrder& l) {
    double u = Unit(l.job.value);
    // The first fill ends over one run time, as if it had been running all along (the
    // residual life of a steady stream); later jobs run 0.5 to 1.5 run times.
    double ms = l.name == kFillName    ? (0.05 + 0.95 * u) * static_cast<double>(run_ms)
                : l.name == kChurnName ? (0.5 + u) * static_cast<double>(run_ms)
                                       : static_cast<double>(run_ms);
    return Duration(static_cast<int64_t>(ms));
  };
  f.watch = [](const baton::LaunchOrder& l) { return l.name == kLatencyName; };
  auto fleet = AgentFleet::Create(std::move(f));
  if (!fleet) Die(fleet.error().message());
  RaiseFileLimit((*fleet)->descriptors());
  auto admin = baton::net::HttpClient::Create(o.server, o.token, o.tls);
  if (!admin) Die(admin.error().message());
  auto who = (*admin)->Request("GET", "/v1/whoami");
  if (!who || who->status != 200)
    Die("cannot reach " + o.server + ": " +
        (who ? "HTTP " + std::to_string(who->status) + " " + who->body : who.error().message()));
  o.submit_token = o.token;
  if (!o.user.empty()) {
    // A user's jobs, as most are: the server's own user may be root, whose jobs the scheduler
    // treats apart (nodes may refuse them).
    json::object body{{"user", o.user}, {"role", "user"}, {"name", "baton_agents"}};
    auto r = (*admin)->Request("POST", "/v1/tokens", json::serialize(body));
    boost::system::error_code ec;
    json::value v = r && r->status == 201 ? json::parse(r->body, ec) : json::value();
    if (!v.is_object() || !v.as_object().contains("token") || !v.at("token").is_string())
      Die("cannot make a user token for --user " + o.user + ": " +
          (r ? "HTTP " + std::to_string(r->status) + " " + r->body : r.error().message()));
    o.submit_token = std::string(v.at("token").as_string());
  }
  auto client = baton::net::HttpClient::Create(o.server, o.submit_token, o.tls);
  if (!client) Die(client.error().message());
  Bench bench(std::move(o), pid, std::move(*fleet), std::move(*client));
  return bench.Run();
}
