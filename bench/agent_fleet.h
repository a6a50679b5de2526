// A fleet of simulated agents in one process for baton_agents (bench/agents.cc): each joins
// (optionally), registers, keeps a long poll for orders open, runs the jobs it is launched as
// timers and reports their start and end, and reports its GPUs' readings at the production
// agent's cadence (AgentOptions::sample_interval, 2 s, or as often as each report's answer
// asks: a large cluster's controller spreads them out), over the real agent protocol
// (codec/json_codec.h), as `baton agent` does. Nothing runs on the machine: a job is a start
// event, a wait, and an exit event with code 0.
//
// Connections and threads. Each agent has a keep-alive connection of its own for its join,
// registrations and long polls (TLS when the URL says https), from an address of its own when
// the server is on loopback: agent i from 127.1.(i/250).(1+i%250), since the server caps the
// connections of one peer address at half of all, and real nodes each have their own. These
// connections are asynchronous (bench/async_link.h), on FleetOptions::poll_threads shared
// threads: a poll waiting 20 s costs a descriptor and no thread, so ten thousand agents fit in
// one process under a 20,000-descriptor limit. Reports go over report_threads blocking clients
// (net::HttpClient: a thread and four descriptors each, from 127.0.0.1), each serving its share
// of the agents in turn, by default min(agents, 64): a report due while its thread sends
// another's waits, as it would not on a real node, and its round trip counts that wait.
// descriptors() says what the fleet holds.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "async_link.h"
#include "core/protocol.h"
#include "net/http_client.h"

namespace baton::bench {

using SteadyClock = std::chrono::steady_clock;

struct FleetOptions {
  std::string server;  // http(s)://HOST:PORT
  std::string token;   // admin: every agent may use it on the node protocol
  net::TlsClientOptions tls;
  // Not empty: each agent first joins with this join token (DATA/agent.token) and then uses
  // its node's own credential, as `baton agent` does on first start.
  std::string join_token;
  int agents = 1000;
  std::string prefix = "sim";        // node names PREFIX-0000, PREFIX-0001, ...
  std::string gpus = "8xH100-80GB";  // each node's simulated GPUs (core::ParseGpuSpec)
  int report_threads = 0;            // threads sending every agent's reports; 0: min(agents, 64)
  int poll_threads = 2;              // threads running every agent's connection
  Duration sample_interval = std::chrono::seconds(2);  // agent/agent.h's default
  // How long a job launched as `order` runs before it exits 0.
  std::function<Duration(const LaunchOrder& order)> run_time;
  // Launches whose time of arrival is kept for WaitLaunch (the latency jobs).
  std::function<bool(const LaunchOrder& order)> watch;
};

// What the fleet saw in a window of time (TakeWindow).
struct FleetWindow {
  double seconds = 0;
  int64_t reports = 0;        // reports answered 200
  int64_t report_errors = 0;  // failed or not 200 (409 included)
  int64_t conflicts = 0;      // 409: the session was not the node's (registered again)
  int64_t polls_empty = 0;    // long polls answered with no order (20 s passed)
  int64_t polls_orders = 0;   // long polls answered with orders
  int64_t poll_errors = 0;
  int64_t launches = 0;           // launch orders received (first time for a job's attempt)
  int64_t stops = 0;              // stop orders received
  int64_t exits_acked = 0;        // exits the controller acknowledged
  std::vector<double> report_ms;  // each report's round trip
  std::string first_error;
};

class AgentFleet {
 public:
  // Fails on options that cannot work (a GPU SPEC that does not parse, a bad URL).
  static Result<std::unique_ptr<AgentFleet>> Create(FleetOptions options);
  ~AgentFleet();  // Stop()
  AgentFleet(const AgentFleet&) = delete;
  AgentFleet& operator=(const AgentFleet&) = delete;

  // Starts every agent at once; returns when all have registered, or an error naming how many
  // did not within `timeout` (and the first failure). Each registration's round trip (its
  // join excluded) is in `register_ms`, the join's in `join_ms`.
  struct Started {
    double seconds = 0;  // from the start to the last registration answered
    std::vector<double> register_ms;
    std::vector<double> join_ms;
  };
  Result<Started> Start(Duration timeout);
  // Stops every thread; polls and reports in flight are cut.
  void Stop();

  // Descriptors the fleet holds at most: a connection per agent, four per report thread, and
  // the poll threads' io_context.
  int64_t descriptors() const;

  // The counters since the previous call, which starts the next window.
  FleetWindow TakeWindow();
  // When a watched launch of `job` arrived; waits for it up to `timeout`.
  std::optional<SteadyClock::time_point> WaitLaunch(int64_t job, Duration timeout);
  // When the report that told the controller `job` started was answered 200, if it was.
  std::optional<SteadyClock::time_point> StartAcked(int64_t job);
  // GPUs that jobs hold now, over all the agents.
  int64_t BusyGpus();
  // Exits acknowledged of jobs named `name`, since the start.
  int64_t ExitsOf(const std::string& name);
  int64_t launches() const { return launches_total_.load(); }

 private:
  AgentFleet(FleetOptions options, GpuSpec spec, std::unique_ptr<LinkPool> pool);

  struct RunningJob {
    JobId job;
    int attempt = 0;
    std::string name;
    std::vector<int> gpus;
    SteadyClock::time_point ends;
  };
  struct Agent {
    std::string name;
    size_t index = 0;   // in agents_
    size_t worker = 0;  // the report thread that sends its reports
    // Its join, registrations and long polls, one at a time; `after` is the last order seen,
    // touched only by the callbacks of `link` (which never overlap).
    std::unique_ptr<Link> link;
    uint64_t after = 0;
    std::mutex mu;  // guards what follows
    std::string credential;
    uint64_t session = 0;
    std::vector<RunningJob> running;
    std::vector<JobEvent> events;          // not yet acknowledged, oldest first
    std::vector<std::string> event_names;  // each event's job's name (ExitsOf)
    std::set<std::pair<int64_t, int>> launched;
    SteadyClock::time_point next_sample{};
    Duration asked_sample_interval{};    // the last report's answer (sample_interval_ms)
    SteadyClock::time_point retry_at{};  // after a failed report: production waits 100 ms
  };
  struct Worker {
    std::unique_ptr<net::HttpClient> client;
    std::mutex mu;
    std::condition_variable cv;
    bool kicked = false;
    std::vector<Agent*> agents;
  };

  // One agent's loop, as `baton agent`'s poll thread, in callbacks on its link: Step joins
  // when it has no credential, registers when it has no session, and polls otherwise; each
  // answer's handler calls Step again, at once or after the agent's wait.
  void Step(Agent& a);
  void Join(Agent& a);
  bool Joined(Agent& a, const Result<net::HttpResponse>& res, double ms);
  void Register(Agent& a);
  bool Registered(Agent& a, const Result<net::HttpResponse>& res, double ms, int64_t exits);
  void Poll(Agent& a, uint64_t session);
  void Polled(Agent& a, uint64_t session, Result<net::HttpResponse> res);
  void HandleOrders(Agent& a, std::vector<Order> orders, uint64_t* after);
  void ReportLoop(Worker& w);
  // Builds `a`'s report if one is due by `now` (events, or readings every sample_interval);
  // `next` is lowered to when the next one will be.
  std::optional<ReportRequest> DueReport(Agent& a, SteadyClock::time_point now,
                                         SteadyClock::time_point* next, bool* with_samples);
  void Send(Worker& w, Agent& a, ReportRequest rep, bool with_samples);
  void Kick(const Agent& a);
  void NoteError(const std::string& what);
  // A refusal during the first join or registration: 4xx answers say the same every time.
  void NoteFatal(const std::string& what);

  FleetOptions options_;
  GpuSpec spec_;
  std::unique_ptr<LinkPool> pool_;  // before agents_: their links go first
  std::vector<std::unique_ptr<Agent>> agents_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stopping_{false};
  std::atomic<int64_t> launches_total_{0};

  std::mutex reg_mu_;  // registration: Start waits on it
  std::condition_variable reg_cv_;
  bool go_ = false;
  int registered_ = 0;
  std::vector<double> register_ms_, join_ms_;
  std::string first_error_;  // since the start (under stats_mu_)
  // An answer that trying again cannot change (a join refused, a token not accepted): Start
  // gives up at once with it (under reg_mu_).
  std::string fatal_;

  std::mutex stats_mu_;  // the window, and the watched launches
  std::condition_variable launch_cv_;
  FleetWindow window_;
  SteadyClock::time_point window_start_ = SteadyClock::now();
  std::unordered_map<int64_t, SteadyClock::time_point> launched_at_, start_acked_;
  std::map<std::string, int64_t> exits_by_name_;
};

}  // namespace baton::bench
