#include "server/leadership.h"

#include <unistd.h>

#include <random>

#include "api/http_server.h"
#include "codec/json_codec.h"
#include "core/file_util.h"
#include "core/log.h"
#include "core/time.h"
#include "server/host.h"

namespace baton::server {

std::string LeaseHolderId() {
  std::random_device rd;
  char random[9];
  std::snprintf(random, sizeof random, "%08x", rd());
  return HostName().substr(0, 32) + ":" + std::to_string(getpid()) + ":" + random;
}

namespace {

// The standby's answers: healthy, and pointing at the leader (307, so that a browser or
// `curl -L` follows it, with X-Baton-Leader for Baton's clients); 503 while nobody leads.
api::Response StandbyAnswer(const api::Request& req, const store::Leadership& leader) {
  std::vector<std::pair<std::string, std::string>> headers = {{"X-Baton-Role", "standby"}};
  if (leader.live) headers.emplace_back("X-Baton-Leader", leader.url);
  if (req.path == "/healthz") {
    return api::Response{.status = 200,
                         .body = R"({"status":"standby","leader":")" +
                                 (leader.live ? leader.url : std::string()) + "\"}",
                         .headers = headers};
  }
  if (!leader.live) {
    headers.emplace_back("Retry-After", "1");
    return api::Response{.status = 503,
                         .body = codec::EncodeError(Unavailable(
                             "this controller is a standby and no controller leads right now (a "
                             "failover is under way): try again shortly")),
                         .headers = headers};
  }
  headers.emplace_back("Location", leader.url + req.target);
  return api::Response{.status = 307,
                       .body = codec::EncodeError(Unavailable(
                           "this controller is a standby: the leader is " + leader.url)),
                       .headers = headers};
}

Status WriteServerFiles(const StandbyOptions& o, uint16_t port) {
  RETURN_IF_ERROR(
      WriteFileAtomic(o.data_dir + "/server.url", o.advertise_url + "\n", {.mode = 0644}));
  return WriteFileAtomic(o.data_dir + "/server.port", std::to_string(port) + "\n", {.mode = 0644});
}

}  // namespace

Result<int64_t> WaitToLead(store::PostgresLease& lease, const StandbyOptions& o,
                           const sigset_t& signals, uint16_t* port) {
  std::mutex mu;
  store::Leadership leader;  // as last read; guarded by mu
  api::HttpServer server(
      api::HttpServerOptions{
          .host = o.host, .port = o.port, .tls = o.tls, .plain_from_anywhere = o.insecure_http},
      [&](api::Request req, api::Respond respond) {
        store::Leadership now;
        {
          std::lock_guard lock(mu);
          now = leader;
        }
        respond(StandbyAnswer(req, now));
      });
  ASSIGN_OR_RETURN(*port, server.Start());
  StandbyOptions opts = o;
  if (opts.advertise_url.empty()) {
    std::string host = o.host == "0.0.0.0" || o.host == "::" ? HostName() : o.host;
    if (host.find(':') != std::string::npos) host = "[" + host + "]";
    opts.advertise_url = std::string(o.tls.cert_file.empty() ? "http://" : "https://") + host +
                         ":" + std::to_string(*port);
  }
  RETURN_IF_ERROR(WriteServerFiles(opts, *port));
  bool said = false;
  const timespec poll{.tv_sec = 0, .tv_nsec = 100'000'000};
  for (;;) {
    auto taken = lease.TryAcquire(o.holder, opts.advertise_url, o.ttl);
    if (taken && taken->has_value()) {
      server.Stop();
      return **taken;
    }
    if (auto current = lease.Current()) {
      std::lock_guard lock(mu);
      leader = *current;
    }
    if (!said) {
      LogInfo("standby on " + opts.advertise_url + ": " +
              (leader.live ? "the leader is " + leader.url : std::string("waiting for the lease")) +
              (taken ? "" : " (" + taken.error().message() + ")"));
      said = true;
    }
    siginfo_t info;
    int sig = sigtimedwait(&signals, &info, &poll);
    if (sig == SIGINT || sig == SIGTERM) {
      server.Stop();
      LogInfo("standby stopping on " + std::string(sig == SIGINT ? "SIGINT" : "SIGTERM"));
      return 0;
    }
  }
}

LeaseKeeper::LeaseKeeper(store::PostgresLease& lease, int64_t epoch, Duration ttl,
                         std::function<void(const Status&)> lost)
    : lease_(lease), epoch_(epoch), ttl_(ttl), lost_(std::move(lost)) {
  renewed_ns_ = std::chrono::steady_clock::now().time_since_epoch().count();
  thread_ = std::thread([this] { Run(); });
  watchdog_ = std::thread([this] { Watch(); });
}

LeaseKeeper::~LeaseKeeper() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
  if (thread_.joinable()) thread_.join();
}

void LeaseKeeper::Release() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
  if (thread_.joinable()) thread_.join();
  if (Status st = lease_.Release(epoch_); !st.ok())
    LogWarn("could not end the lease: " + st.message());
}

void LeaseKeeper::Run() {
  using Steady = std::chrono::steady_clock;
  // The lease was taken (or last renewed) no earlier than this, by PostgreSQL's clock: it is
  // ours until then + ttl at the least, and we stop before, a little margin early.
  Steady::time_point renewed = Steady::now();
  const Duration margin = ttl_ / 6;
  std::unique_lock lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, ttl_ / 3, [this] { return stop_; });
    if (stop_) return;
    lock.unlock();
    Steady::time_point sent = Steady::now();
    Status st = lease_.Renew(epoch_, ttl_);
    lock.lock();
    if (st.ok()) {
      renewed = sent;
      renewed_ns_ = sent.time_since_epoch().count();
      continue;
    }
    if (st.code() == Code::kConflict) return lost_(st);
    if (Steady::now() - renewed >= ttl_ - margin) {
      return lost_(Unavailable("the lease could not be renewed in time: " + st.message()));
    }
  }
}

void LeaseKeeper::Watch() {
  using Steady = std::chrono::steady_clock;
  const Duration margin = ttl_ / 6;
  std::unique_lock lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, ttl_ / 10, [this] { return stop_; });
    if (stop_) return;
    Steady::time_point renewed{Steady::duration(renewed_ns_.load())};
    if (Steady::now() - renewed < ttl_ - margin) continue;
    // Run is stuck in a renewal (a database cut off answers nothing, and a TCP connection
    // without answers lasts for minutes): the lease may be another's soon.
    lock.unlock();
    return lost_(
        Unavailable("the lease could not be renewed in time: PostgreSQL has not "
                    "answered for " +
                    FormatDuration(std::chrono::duration_cast<Duration>(Steady::now() - renewed))));
  }
}

Result<Leading> Lead(const LeadOptions& o, store::PostgresStore& store,
                     std::pair<std::string, uint16_t>& listen, const sigset_t& signals) {
  ASSIGN_OR_RETURN(Duration ttl, ParseDuration(o.lease_ttl, "--lease-ttl"));
  if (ttl < std::chrono::seconds(1) || ttl > std::chrono::minutes(5)) {
    return Err(InvalidArgument("--lease-ttl: from 1s to 5m"));
  }
  Leading l;
  std::string holder = LeaseHolderId();
  ASSIGN_OR_RETURN(l.lease, store::PostgresLease::Open(o.store_url, holder));
  uint16_t port = 0;
  ASSIGN_OR_RETURN(l.epoch, WaitToLead(*l.lease,
                                       StandbyOptions{.host = listen.first,
                                                      .port = listen.second,
                                                      .advertise_url = o.advertise,
                                                      .holder = holder,
                                                      .ttl = ttl,
                                                      .data_dir = o.data_dir,
                                                      .tls = o.tls,
                                                      .insecure_http = o.insecure_http},
                                       signals, &port));
  if (l.epoch == 0) return l;
  listen.second = port;  // the leader serves where the standby did
  store.FenceWithEpoch(l.epoch);
  l.keeper = std::make_unique<LeaseKeeper>(*l.lease, l.epoch, ttl, [](const Status& st) {
    // Another controller leads now, or soon will: stop at once. Jobs run on; the new leader
    // re-adopts them. Under systemd (Restart=always) this one comes back as a standby.
    LogError("lost the lease: " + st.message() + "; stopping");
    std::_Exit(75);
  });
  LogInfo("leading with epoch " + std::to_string(l.epoch));
  return l;
}

}  // namespace baton::server
