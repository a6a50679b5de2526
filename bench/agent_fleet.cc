#include "agent_fleet.h"

#include <algorithm>
#include <csignal>
#include <cstdio>

#include "codec/json_codec.h"

namespace baton::bench {
namespace {

double Ms(SteadyClock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

TimePoint WallNow() {
  return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
}

// Readings as a simulated GPU gives them (agent/simulated_gpu_backend.cc's idea of busy and
// idle); the controller keeps the latest per node and counts utilisation towards jobs.
std::vector<GpuSample> Samples(size_t gpus, const std::vector<bool>& busy) {
  std::vector<GpuSample> out(gpus);
  for (size_t g = 0; g < gpus; ++g) {
    bool b = busy[g];
    out[g] = GpuSample{.index = static_cast<int>(g),
                       .utilization_pct = b ? 97 : 0,
                       .memory_used_bytes = b ? int64_t{60} << 30 : 0,
                       .temperature_c = b ? 68 : 34,
                       .power_w = b ? 610 : 72};
  }
  return out;
}

// Agent i's own loopback address: 127.1.0.1 to 127.1.0.250, then 127.1.1.1, ... (62,500 to a
// /16, then the next /16).
std::string SourceAddress(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "127.%d.%d.%d", 1 + i / 62'500, i / 250 % 250, 1 + i % 250);
  return buf;
}

}  // namespace

Result<std::unique_ptr<AgentFleet>> AgentFleet::Create(FleetOptions options) {
  ASSIGN_OR_RETURN(GpuSpec spec, ParseGpuSpec(options.gpus));
  if (options.agents < 1) return Err(InvalidArgument("--agents: at least 1"));
  if (!options.run_time) options.run_time = [](const LaunchOrder&) { return Duration(30'000); };
  if (!options.watch) options.watch = [](const LaunchOrder&) { return false; };
  if (options.report_threads <= 0) options.report_threads = std::min(options.agents, 64);
  options.report_threads = std::min(options.report_threads, options.agents);
  options.poll_threads = std::max(1, options.poll_threads);
  ASSIGN_OR_RETURN(std::unique_ptr<LinkPool> pool,
                   LinkPool::Create(options.server, options.tls, options.poll_threads));
  return std::unique_ptr<AgentFleet>(
      new AgentFleet(std::move(options), std::move(spec), std::move(pool)));
}

AgentFleet::AgentFleet(FleetOptions options, GpuSpec spec, std::unique_ptr<LinkPool> pool)
    : options_(std::move(options)), spec_(std::move(spec)), pool_(std::move(pool)) {}

AgentFleet::~AgentFleet() { Stop(); }

void AgentFleet::NoteError(const std::string& what) {
  std::lock_guard lock(stats_mu_);
  if (window_.first_error.empty()) window_.first_error = what;
  if (first_error_.empty()) first_error_ = what;
}

void AgentFleet::NoteFatal(const std::string& what) {
  NoteError(what);
  std::lock_guard lock(reg_mu_);
  if (fatal_.empty()) fatal_ = what;
  reg_cv_.notify_all();
}

int64_t AgentFleet::descriptors() const {
  return options_.agents + int64_t{4} * options_.report_threads + LinkPool::kOwnDescriptors;
}

Result<AgentFleet::Started> AgentFleet::Start(Duration timeout) {
  for (int w = 0; w < options_.report_threads; ++w) {
    auto worker = std::make_unique<Worker>();
    ASSIGN_OR_RETURN(worker->client,
                     net::HttpClient::Create(options_.server, options_.token, options_.tls));
    workers_.push_back(std::move(worker));
  }
  for (int i = 0; i < options_.agents; ++i) {
    auto a = std::make_unique<Agent>();
    char name[80];
    std::snprintf(name, sizeof name, "%s-%04d", options_.prefix.c_str(), i);
    a->name = name;
    if (!IsValidNodeName(a->name))
      return Err(InvalidArgument("--prefix: " + a->name + " is not a valid node name"));
    a->index = static_cast<size_t>(i);
    a->worker = a->index % workers_.size();
    ASSIGN_OR_RETURN(a->link, pool_->NewLink(pool_->loopback() ? SourceAddress(i) : ""));
    workers_[a->worker]->agents.push_back(a.get());
    agents_.push_back(std::move(a));
  }
  for (auto& w : workers_) threads_.emplace_back([this, &w] { ReportLoop(*w); });
  pool_->Start();

  // Every agent at once, as after a controller restart or a power cut of the whole cluster.
  auto start = SteadyClock::now();
  std::unique_lock lock(reg_mu_);
  go_ = true;
  reg_cv_.notify_all();
  for (auto& a : agents_) a->link->After(Duration(0), [this, &agent = *a] { Step(agent); });
  bool all = reg_cv_.wait_for(lock, timeout,
                              [&] { return registered_ == options_.agents || !fatal_.empty(); });
  if (!fatal_.empty()) return Err(Unavailable(fatal_));
  Started out{.seconds = std::chrono::duration<double>(SteadyClock::now() - start).count(),
              .register_ms = register_ms_,
              .join_ms = join_ms_};
  if (!all) {
    int n = registered_;
    lock.unlock();
    std::lock_guard stats(stats_mu_);
    return Err(Unavailable(std::to_string(n) + " of " + std::to_string(options_.agents) +
                           " agents registered within " + FormatDuration(timeout) +
                           (first_error_.empty() ? "" : "; first failure: " + first_error_)));
  }
  return out;
}

void AgentFleet::Stop() {
  if (stopping_.exchange(true)) return;
  {
    std::lock_guard lock(reg_mu_);
    reg_cv_.notify_all();
  }
  pool_->Stop();
  for (auto& w : workers_) {
    w->client->Cancel();
    std::lock_guard lock(w->mu);
    w->cv.notify_all();
  }
  for (auto& t : threads_) t.join();
  threads_.clear();
}

FleetWindow AgentFleet::TakeWindow() {
  std::lock_guard lock(stats_mu_);
  FleetWindow out = std::move(window_);
  window_ = FleetWindow{};
  auto now = SteadyClock::now();
  out.seconds = std::chrono::duration<double>(now - window_start_).count();
  window_start_ = now;
  return out;
}

std::optional<SteadyClock::time_point> AgentFleet::WaitLaunch(int64_t job, Duration timeout) {
  std::unique_lock lock(stats_mu_);
  if (!launch_cv_.wait_for(lock, timeout, [&] { return launched_at_.count(job) != 0; }))
    return std::nullopt;
  return launched_at_.at(job);
}

std::optional<SteadyClock::time_point> AgentFleet::StartAcked(int64_t job) {
  std::lock_guard lock(stats_mu_);
  auto it = start_acked_.find(job);
  if (it == start_acked_.end()) return std::nullopt;
  return it->second;
}

int64_t AgentFleet::BusyGpus() {
  int64_t n = 0;
  for (auto& a : agents_) {
    std::lock_guard lock(a->mu);
    for (const RunningJob& r : a->running) n += static_cast<int64_t>(r.gpus.size());
  }
  return n;
}

int64_t AgentFleet::ExitsOf(const std::string& name) {
  std::lock_guard lock(stats_mu_);
  auto it = exits_by_name_.find(name);
  return it == exits_by_name_.end() ? 0 : it->second;
}

// ---- one agent's long poll (and its registrations) ----

void AgentFleet::Step(Agent& a) {
  if (stopping_) return;
  uint64_t session;
  bool joined;
  {
    std::lock_guard lock(a.mu);
    session = a.session;
    joined = !a.credential.empty();
  }
  if (session != 0) return Poll(a, session);
  // As the agent: a join when it has no credential, then a registration, once a second until
  // they work.
  a.after = 0;
  if (!options_.join_token.empty() && !joined) return Join(a);
  Register(a);
}

void AgentFleet::Join(Agent& a) {
  const auto t0 = SteadyClock::now();
  a.link->Request("POST", "/v1/agent/join", codec::EncodeJoin(a.name), options_.join_token,
                  std::chrono::seconds(30), [this, &a, t0](Result<net::HttpResponse> res) {
                    if (stopping_) return;
                    if (Joined(a, res, Ms(SteadyClock::now() - t0))) return Register(a);
                    a.link->After(Duration(1000), [this, &a] { Step(a); });
                  });
}

bool AgentFleet::Joined(Agent& a, const Result<net::HttpResponse>& res, double ms) {
  if (!res) {
    NoteError("join " + a.name + ": " + res.error().message());
    return false;
  }
  auto credential = res->status == 201 ? codec::DecodeJoinReply(res->body)
                                       : Result<std::string>(Err(Internal(res->body)));
  if (!credential) {
    std::string what = "join " + a.name + " (HTTP " + std::to_string(res->status) +
                       "): " + codec::ErrorMessage(res->body) +
                       (res->status == 409 ? " (a node of this name joined before: use a new "
                                             "--prefix or a new data directory)"
                                           : "");
    if (res->status >= 400 && res->status < 500) {
      NoteFatal(what);
    } else {
      NoteError(what);
    }
    return false;
  }
  std::lock_guard lock(reg_mu_);
  join_ms_.push_back(ms);
  std::lock_guard agent(a.mu);
  a.credential = *credential;
  return true;
}

void AgentFleet::Register(Agent& a) {
  RegisterRequest req;
  req.node.name = a.name;
  req.node.gpus = SimulatedGpus(spec_, a.name);
  req.node.cpus = 128;
  req.node.memory_bytes = int64_t{2} << 40;
  req.node.gpu_backend = GpuBackendKind::kSimulated;
  req.node.topology = spec_.topology;
  req.node.pool = "default";
  int64_t exits = 0;
  std::string token;
  {
    // Everything it holds, as the agent does: running jobs started, ends not yet told.
    std::lock_guard lock(a.mu);
    token = a.credential.empty() ? options_.token : a.credential;
    for (const RunningJob& r : a.running) {
      req.jobs.push_back(JobEvent{.job = r.job, .attempt = r.attempt, .at = WallNow()});
    }
    for (const JobEvent& e : a.events) {
      if (e.kind != JobEvent::Kind::kExited) continue;
      req.jobs.push_back(e);
      ++exits;
    }
  }
  const auto t0 = SteadyClock::now();
  a.link->Request("POST", "/v1/agent/register", codec::EncodeRegister(req), std::move(token),
                  std::chrono::seconds(30), [this, &a, t0, exits](Result<net::HttpResponse> res) {
                    if (stopping_) return;
                    if (Registered(a, res, Ms(SteadyClock::now() - t0), exits)) return Step(a);
                    a.link->After(Duration(1000), [this, &a] { Step(a); });
                  });
}

bool AgentFleet::Registered(Agent& a, const Result<net::HttpResponse>& res, double ms,
                            int64_t exits) {
  if (!res) {
    NoteError("register " + a.name + ": " + res.error().message());
    return false;
  }
  auto reply = res->status == 200 ? codec::DecodeRegisterReply(res->body)
                                  : Result<RegisterReply>(Err(Internal(res->body)));
  if (!reply) {
    std::string what = "register " + a.name + " (HTTP " + std::to_string(res->status) +
                       "): " + codec::ErrorMessage(res->body);
    bool first;
    {
      std::lock_guard lock(a.mu);
      first = a.next_sample == SteadyClock::time_point{};
    }
    if (first && res->status >= 400 && res->status < 500) {
      NoteFatal(what);
    } else {
      NoteError(what);
    }
    return false;
  }
  bool first = false;
  {
    std::lock_guard lock(a.mu);
    first = a.next_sample == SteadyClock::time_point{};
    a.session = reply->session;
    // The registration told the controller everything: its exits are acknowledged.
    a.events.clear();
    a.event_names.clear();
    // Readings spread evenly over the interval, as agents started at different times are.
    a.next_sample =
        SteadyClock::now() +
        (first ? options_.sample_interval * static_cast<int64_t>(a.index) / options_.agents
               : Duration(0));
  }
  {
    std::lock_guard lock(stats_mu_);
    window_.exits_acked += exits;
  }
  if (first) {
    std::lock_guard lock(reg_mu_);
    register_ms_.push_back(ms);
    if (++registered_ == options_.agents) reg_cv_.notify_all();
  }
  Kick(a);
  return true;
}

void AgentFleet::Poll(Agent& a, uint64_t session) {
  std::string token;
  {
    std::lock_guard lock(a.mu);
    token = a.credential.empty() ? options_.token : a.credential;
  }
  std::string target = "/v1/agent/orders?node=" + a.name + "&session=" + std::to_string(session) +
                       "&after=" + std::to_string(a.after);
  a.link->Request("GET", std::move(target), {}, std::move(token), std::chrono::seconds(40),
                  [this, &a, session](Result<net::HttpResponse> res) {
                    if (stopping_) return;
                    Polled(a, session, std::move(res));
                  });
}

void AgentFleet::Polled(Agent& a, uint64_t session, Result<net::HttpResponse> res) {
  auto again = [this, &a] { Step(a); };
  if (!res || (res->status != 200 && res->status != 409)) {
    NoteError("poll " + a.name + ": " +
              (res ? "HTTP " + std::to_string(res->status) + ": " + codec::ErrorMessage(res->body)
                   : res.error().message()));
    {
      std::lock_guard lock(stats_mu_);
      window_.poll_errors += 1;
    }
    return a.link->After(Duration(300), again);  // as the agent after a failed poll
  }
  if (res->status == 409) {  // the node's session ended (lost, or the controller restarted)
    {
      std::lock_guard lock(a.mu);
      if (a.session == session) a.session = 0;
      std::lock_guard stats(stats_mu_);
      window_.conflicts += 1;
    }
    return Step(a);
  }
  auto orders = codec::DecodeOrders(res->body);
  if (!orders) {
    NoteError("poll " + a.name + ": cannot read the orders: " + orders.error().message());
    return a.link->After(Duration(300), again);
  }
  HandleOrders(a, std::move(*orders), &a.after);
  Step(a);
}

void AgentFleet::HandleOrders(Agent& a, std::vector<Order> orders, uint64_t* after) {
  const auto now = SteadyClock::now();
  const TimePoint wall = WallNow();
  std::vector<int64_t> watched;
  int64_t launches = 0, stops = 0;
  bool any = !orders.empty();
  {
    std::lock_guard lock(a.mu);
    for (Order& o : orders) {
      if (o.seq <= *after) continue;  // at least once: seen already
      *after = o.seq;
      if (o.kind == Order::Kind::kLaunch) {
        const LaunchOrder& l = o.launch;
        if (!a.launched.insert({l.job.value, l.attempt}).second) continue;  // launched once
        a.running.push_back(RunningJob{.job = l.job,
                                       .attempt = l.attempt,
                                       .name = l.name,
                                       .gpus = l.gpus,
                                       .ends = now + options_.run_time(l)});
        a.events.push_back(JobEvent{.job = l.job, .attempt = l.attempt, .at = wall});
        a.event_names.push_back(l.name);
        ++launches;
        if (options_.watch(l)) watched.push_back(l.job.value);
      } else if (o.kind == Order::Kind::kStop) {
        auto it = std::find_if(a.running.begin(), a.running.end(), [&](const RunningJob& r) {
          return r.job == o.stop.job && r.attempt == o.stop.attempt;
        });
        if (it == a.running.end()) continue;  // ended already; its exit tells the controller
        a.events.push_back(JobEvent{.job = it->job,
                                    .attempt = it->attempt,
                                    .kind = JobEvent::Kind::kExited,
                                    .at = wall,
                                    .signal = SIGTERM});
        a.event_names.push_back(it->name);
        a.running.erase(it);
        ++stops;
      }
      // inject, readmit, tunnel, note: nothing to simulate here.
    }
  }
  {
    std::lock_guard lock(stats_mu_);
    (any ? window_.polls_orders : window_.polls_empty) += 1;
    window_.launches += launches;
    window_.stops += stops;
    for (int64_t id : watched) launched_at_[id] = now;
  }
  launches_total_ += launches;
  if (!watched.empty()) launch_cv_.notify_all();
  if (launches + stops > 0) Kick(a);  // the agent reports a start or an end at once
}

// ---- reports ----

void AgentFleet::Kick(const Agent& a) {
  Worker& w = *workers_[a.worker];
  std::lock_guard lock(w.mu);
  w.kicked = true;
  w.cv.notify_one();
}

std::optional<ReportRequest> AgentFleet::DueReport(Agent& a, SteadyClock::time_point now,
                                                   SteadyClock::time_point* next,
                                                   bool* with_samples) {
  if (a.session == 0) return std::nullopt;
  if (now < a.retry_at) {
    *next = std::min(*next, a.retry_at);
    return std::nullopt;
  }
  const TimePoint wall = WallNow();
  std::vector<bool> busy(spec_.count, false);
  for (auto it = a.running.begin(); it != a.running.end();) {
    if (it->ends <= now) {
      a.events.push_back(JobEvent{.job = it->job,
                                  .attempt = it->attempt,
                                  .kind = JobEvent::Kind::kExited,
                                  .at = wall,
                                  .exit_code = 0});
      a.event_names.push_back(it->name);
      it = a.running.erase(it);
      continue;
    }
    *next = std::min(*next, it->ends);
    for (int g : it->gpus) {
      if (g >= 0 && static_cast<size_t>(g) < busy.size()) busy[g] = true;
    }
    ++it;
  }
  *with_samples = now >= a.next_sample;
  if (!*with_samples) *next = std::min(*next, a.next_sample);
  if (a.events.empty() && !*with_samples) return std::nullopt;
  ReportRequest rep;
  rep.node = a.name;
  rep.session = a.session;
  rep.events = a.events;
  if (*with_samples) rep.gpus = Samples(busy.size(), busy);
  return rep;
}

void AgentFleet::Send(Worker& w, Agent& a, ReportRequest rep, bool with_samples) {
  {
    std::lock_guard lock(a.mu);
    w.client->SetToken(a.credential.empty() ? options_.token : a.credential);
  }
  const auto sent = SteadyClock::now();
  auto res = w.client->Request("POST", "/v1/agent/report", codec::EncodeReport(rep));
  const auto answered = SteadyClock::now();
  if (stopping_) return;
  const bool ok = res && res->status == 200;
  std::map<std::string, int64_t> exits;  // by job name
  std::vector<int64_t> started;
  {
    std::lock_guard lock(a.mu);
    if (!ok) {
      a.retry_at = answered + Duration(100);  // as the agent after a failed report
      if (res && res->status == 409 && a.session == rep.session) a.session = 0;
    } else if (a.session == rep.session) {
      // Those events are told; any that came meanwhile stay, after them.
      size_t n = std::min(rep.events.size(), a.events.size());
      for (size_t i = 0; i < n; ++i) {
        if (a.events[i].kind == JobEvent::Kind::kExited) exits[a.event_names[i]] += 1;
        if (a.events[i].kind == JobEvent::Kind::kStarted) started.push_back(a.events[i].job.value);
      }
      a.events.erase(a.events.begin(), a.events.begin() + static_cast<std::ptrdiff_t>(n));
      a.event_names.erase(a.event_names.begin(),
                          a.event_names.begin() + static_cast<std::ptrdiff_t>(n));
      // As the agent: readings no more often than the controller's answer asks.
      if (auto asked = codec::DecodeReportReply(res->body)) a.asked_sample_interval = *asked;
      if (with_samples)
        a.next_sample = answered + std::max(options_.sample_interval, a.asked_sample_interval);
    }
  }
  if (!ok) {
    NoteError("report " + a.name + ": " +
              (res ? "HTTP " + std::to_string(res->status) + ": " + codec::ErrorMessage(res->body)
                   : res.error().message()));
  }
  std::lock_guard lock(stats_mu_);
  if (!ok) {
    window_.report_errors += 1;
    if (res && res->status == 409) window_.conflicts += 1;
    return;
  }
  window_.reports += 1;
  window_.report_ms.push_back(Ms(answered - sent));
  for (const auto& [name, n] : exits) {
    window_.exits_acked += n;
    exits_by_name_[name] += n;
  }
  for (int64_t id : started) {
    if (launched_at_.count(id)) start_acked_[id] = answered;
  }
}

void AgentFleet::ReportLoop(Worker& w) {
  {
    std::unique_lock lock(reg_mu_);
    reg_cv_.wait(lock, [&] { return go_ || stopping_.load(); });
  }
  while (!stopping_) {
    auto next = SteadyClock::now() + std::chrono::seconds(1);
    bool sent_any = false;
    for (Agent* a : w.agents) {
      if (stopping_) return;
      bool with_samples = false;
      std::optional<ReportRequest> rep;
      {
        std::lock_guard lock(a->mu);
        rep = DueReport(*a, SteadyClock::now(), &next, &with_samples);
      }
      if (!rep) continue;
      Send(w, *a, std::move(*rep), with_samples);
      sent_any = true;
    }
    if (sent_any) continue;  // look again: what was sent moved each agent's next time
    std::unique_lock lock(w.mu);
    w.cv.wait_until(lock, next, [&] { return w.kicked || stopping_.load(); });
    w.kicked = false;
  }
}

}  // namespace baton::bench
