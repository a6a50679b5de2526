#include "server/serve.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "agent/agent.h"
#include "agent/executor.h"
#include "agent/posix_env.h"
#include "api/auth.h"
#include "api/http_server.h"
#include "api/log_store.h"
#include "api/service.h"
#include "cli/client.h"
#include "codec/json_codec.h"
#include "control/clock.h"
#include "control/controller.h"
#include "control/controller_loop.h"
#include "core/file_util.h"
#include "core/log.h"
#include "core/quantity.h"
#include "net/http_client.h"
#include "net/webhook_sender.h"
#include "server/agent_run.h"
#include "server/config.h"
#include "server/host.h"
#include "server/leadership.h"
#include "server/logging.h"
#include "server/provider_runner.h"
#include "server/serve_tls.h"
#include "server/store_choice.h"
#include "store/postgres_store.h"

namespace baton::server {
namespace {

namespace fs = std::filesystem;

// The steps of Serve, in the order it takes them.

// The data directory, made private to this user and locked: one baton serves it at a time. The
// lock is held until the process ends. Under root with a local agent it is 0711 instead: the
// jobs of other users pass through to their own directories in agent/jobs/ (by name, listing
// nothing), and everything of the controller's inside is 0600 or in a 0700 directory.
Result<std::string> LockDataDir(const ServeOptions& o) {
  std::string dir = o.data.empty() ? cli::DefaultDataDir() : o.data;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Err(Internal("cannot create the data directory " + dir + ": " + ec.message()));
  chmod(dir.c_str(), o.local_agent && geteuid() == 0 ? 0711 : 0700);
  RETURN_IF_ERROR(LockDir(dir, "serves"));
  return dir;
}

Result<Duration> NodeTimeoutOf(const ServeOptions& o) {
  ASSIGN_OR_RETURN(Duration node_timeout, ParseDuration(o.node_timeout, "--node-timeout"));
  // Agents report every 2 s: a shorter wait would lose nodes that are only between reports.
  if (node_timeout < std::chrono::seconds(5))
    return Err(InvalidArgument("--node-timeout: at least 5s"));
  return node_timeout;
}

// --code-quota and --code-retention.
Result<api::CodeLimits> CodeLimitsOf(const ServeOptions& o) {
  ASSIGN_OR_RETURN(int64_t quota, ParseSize(o.code_quota, "--code-quota"));
  ASSIGN_OR_RETURN(Duration retention, ParseDuration(o.code_retention, "--code-retention"));
  if (quota <= 0) return Err(InvalidArgument("--code-quota: more than 0"));
  return api::CodeLimits{.per_user_bytes = quota, .retention = retention};
}

// Alerts go to the log and to the webhooks of the configuration file.
Result<std::unique_ptr<net::WebhookSender>> MakeWebhookSender(const ServeOptions& o) {
  return net::WebhookSender::Create(net::WebhookOptions{
      .urls = o.webhooks, .attempts = o.webhook_attempts, .log = [](const std::string& line) {
        LogWarn(line, {.component = "webhook"});
      }});
}

// The loop's hooks: events go to the log (alerts to the webhooks too) and wake the streams;
// each durable batch moves the data directory's store mark, updates the API's token table and
// placement book and wakes those waiting on its jobs. All must outlive the loop.
control::LoopOptions MakeLoopOptions(net::WebhookSender* sender, api::News& news,
                                     api::TokenTable& tokens, store::StoreMarker& marker,
                                     api::PlacementBook& placements, api::CodeStore& code) {
  control::LoopOptions loop_options;
  loop_options.on_event = [sender, &news](const ClusterEvent& e) {
    bool alert = e.severity == Severity::kAlert;
    Log(alert ? LogLevel::kWarn : LogLevel::kInfo,
        std::string(alert ? "ALERT " : "") + std::string(EventKindName(e.kind)) + ": " + e.message,
        LogContext{.component = "events",
                   .node = e.node,
                   .job = e.job,
                   .gpu = e.gpu,
                   .project = e.project,
                   .kind = std::string(EventKindName(e.kind))});
    if (e.severity == Severity::kAlert) sender->Send(codec::EncodeEvent(e));
    news.events.Notify();
  };
  loop_options.on_commit = [&tokens, &news, &marker, &placements,
                            &code](const store::Batch& batch) {
    marker.Committed(batch);
    placements.Apply(batch.jobs);
    if (!batch.jobs.empty()) {
      code.Track(batch.jobs,
                 std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now()));
    }
    if (!batch.tokens.empty()) tokens.Apply(batch.tokens);
    for (const Job& job : batch.jobs) {
      news.jobs.Notify(job.id.value);
      // A wait for a whole array (GET /v1/jobs/{array}/wait) hears each task that ends.
      if (job.array_id.value != 0 && job.array_id != job.id && IsTerminal(job.state))
        news.jobs.Notify(job.array_id.value);
    }
  };
  return loop_options;
}

// The loop's answer to a batch the store failed to commit.
[[noreturn]] void StopOnStoreFailure(const Status& st) {
  LogInfo("fatal: " + st.message() + "; stopping so that nothing unacknowledged is lost");
  // The failed batch's 503 answers are on their way out on the HTTP thread: give them a
  // moment to leave, but accept nothing more.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  std::_Exit(70);
}

// Starts the loop and the HTTP server and writes DATA/server.url; returns the URL served.
Result<std::string> StartServing(control::ControllerLoop& loop, api::HttpServer& server,
                                 const std::string& listen_host, const ServeTls& tls,
                                 const std::string& dir) {
  loop.Start();
  auto port = server.Start();
  if (!port) {
    loop.Stop();
    return Err(port.error());
  }
  std::string url = LocalServerUrl(tls, listen_host, *port);
  RETURN_IF_ERROR(WriteFileAtomic(dir + "/server.url", url + "\n", {.mode = 0644}));
  RETURN_IF_ERROR(
      WriteFileAtomic(dir + "/server.port", std::to_string(*port) + "\n", {.mode = 0644}));
  return url;
}

// What `baton up`'s local agent is given besides the flags.
struct LocalAgentSetup {
  std::string node_name;
  std::string data_dir;  // the server's
  std::string url;       // the server's
  std::string ca_file;   // its own CA's certificate, or ""
  std::string token;     // the server's agent token
  agent::HostTopology topology;
  agent::HealthLimits limits;
};

// Builds `baton up`'s local agent into *local, then starts it.
Status StartLocalAgent(const ServeOptions& o, LocalAgentSetup s, const agent::AgentDeps& deps,
                       std::unique_ptr<agent::Agent>* local) {
  agent::AgentOptions ao{.name = s.node_name,
                         .data_dir = s.data_dir + "/agent",
                         .server = s.url,
                         .tls = {.local_ca = s.ca_file},
                         .token = s.token,
                         .pool = o.pool,
                         .topology = std::move(s.topology),
                         .health = s.limits};
  ApplyAgentFlags(o.health, &ao);
  // `baton up` run by root: root is the admin whose jobs these are.
  if (geteuid() == 0 && LocalUser() == "root") ao.allow_root_jobs = true;
  // In the controller's own process it cannot be cut off from it: its jobs outlive a stop of
  // `baton up` however long, and the next start adopts them.
  ao.fence = false;
  RETURN_IF_ERROR(LockDir(ao.data_dir, "runs the agent of"));
  *local = std::make_unique<agent::Agent>(std::move(ao), deps);
  RETURN_IF_ERROR((*local)->Start());
  const auto& gpus = (*local)->gpus();
  std::string model = gpus.empty() ? "no GPU" : std::to_string(gpus.size()) + "x" + gpus[0].model;
  LogInfo("local agent " + s.node_name + ": " + model + " (" +
          std::string(GpuBackendName(deps.backend.kind())) + " GPUs)");
  return Status::Ok();
}

// Waits for SIGINT or SIGTERM, reloading `config` on each SIGHUP until then.
void WaitForStop(const sigset_t& signals, const std::string& config, const ServeOptions& o,
                 control::ControllerLoop& loop) {
  int sig;
  while ((sig = WaitForShutdown(signals)) == SIGHUP) Reload(config, o, loop);
  LogInfo(std::string("stopping on ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") +
          "; running jobs keep running and are re-adopted on the next start");
}

// What Serve has ready before anything runs: the data directory locked, the flags checked, the
// tokens made and the store opened and read.
struct ServeSetup {
  std::string dir;
  std::pair<std::string, uint16_t> listen;
  ServeTls tls;
  std::string node_name;
  std::unique_ptr<agent::GpuBackend> backend;  // with a local agent only
  agent::HostTopology topology;                // with a local agent only
  agent::HealthLimits limits;
  std::string admin_token;
  std::string agent_token;
  std::unique_ptr<store::Store> store;
  store::PostgresStore* postgres = nullptr;  // the same store, when it is PostgreSQL
  store::Snapshot snapshot;
};

Result<ServeSetup> PrepareToServe(const ServeOptions& o) {
  ServeSetup s;
  ASSIGN_OR_RETURN(s.dir, LockDataDir(o));
  if (!o.shared_dir.empty()) {
    // Job output and code: as private as the data directory.
    std::error_code ec;
    fs::create_directories(o.shared_dir, ec);
    if (ec || chmod(o.shared_dir.c_str(), 0700) != 0) {
      return Err(Internal("--shared-dir " + o.shared_dir + ": cannot be made (mode 0700)" +
                          (ec ? ": " + ec.message() : std::string())));
    }
  }
  ASSIGN_OR_RETURN(s.listen, ParseListen(o.listen));
  KeepPreviousPort(s.dir, s.listen);
  ASSIGN_OR_RETURN(s.tls, PrepareServerTls(o.tls, s.dir, s.listen.first, o.advertise));
  s.node_name = HostName();
  if (o.local_agent) {
    ASSIGN_OR_RETURN(s.backend, MakeBackend(o.gpus, s.node_name));
    s.topology = HostTopologyOrNone();
  }
  ASSIGN_OR_RETURN(s.limits, HealthLimitsOf(o.health));
  // Secrets: refused at start when others may read them (chmod 600 fixes it).
  RETURN_IF_ERROR(CheckPrivate(s.dir + "/admin.token", "the admin token"));
  RETURN_IF_ERROR(CheckPrivate(s.dir + "/agent.token", "the agents' join token"));
  ASSIGN_OR_RETURN(s.admin_token, EnsureToken(s.dir + "/admin.token"));
  ASSIGN_OR_RETURN(s.agent_token, EnsureToken(s.dir + "/agent.token"));
  ASSIGN_OR_RETURN(s.store, OpenStore(o.store_url, o.store_path, s.dir));
  if (!o.store_url.empty()) s.postgres = static_cast<store::PostgresStore*>(s.store.get());
  return s;
}

int Serve(const ServeOptions& o, const std::string& config) {
  sigset_t signals = BlockShutdownSignals();
  RaiseDescriptorLimit();
  auto setup = PrepareToServe(o);
  if (!setup) return Fail(setup.error());
  Leading leading;
  if (setup->postgres != nullptr) {
    auto led = Lead(LeadOptions{.store_url = o.store_url,
                                .advertise = o.advertise,
                                .lease_ttl = o.lease_ttl,
                                .data_dir = setup->dir,
                                .tls = setup->tls.files,
                                .insecure_http = o.tls.insecure_http},
                    *setup->postgres, setup->listen, signals);
    if (!led) return Fail(led.error());
    if (led->epoch == 0) return 0;  // stopped as a standby
    leading = std::move(*led);
  }
  // Read only now: a standby's view would be stale by the time it leads.
  auto snapshot = setup->store->Load();
  if (!snapshot) return Fail(snapshot.error());
  setup->snapshot = std::move(*snapshot);
  const std::string& dir = setup->dir;
  const std::string& kept = o.shared_dir.empty() ? dir : o.shared_dir;
  size_t restored = setup->snapshot.jobs.size();
  // Never an emptied store, nor one behind what this directory saw, taken for the store.
  auto marker = AdmitStore(StoreAdmission{.how = o.new_store       ? store::StoreStart::kNew
                                                 : o.restore_store ? store::StoreStart::kRestore
                                                                   : store::StoreStart::kCheck,
                                          .dir = dir,
                                          .logs_dir = kept + "/logs",
                                          .label = StoreLabel(o.store_url, o.store_path, dir)},
                           *setup->store, &setup->snapshot);
  if (!marker) return Fail(marker.error());
  if (o.local_agent && (o.new_store || o.restore_store)) {
    // A store taken deliberately may not know the local agent's credential (a new store knows
    // none): it joins again with the agent token, as a remote node must (docs/operations.md).
    bool known = std::any_of(
        setup->snapshot.tokens.begin(), setup->snapshot.tokens.end(), [&](const store::Token& t) {
          return t.role == Role::kAgent && t.user == setup->node_name && !t.revoked;
        });
    if (!known) (void)unlink((dir + "/agent/credential").c_str());
  }

  control::RealClock clock;
  auto node_timeout = NodeTimeoutOf(o);
  if (!node_timeout) return Fail(node_timeout.error());
  auto disk_reserve = ParseSize(o.disk_reserve, "--disk-reserve");
  if (!disk_reserve) return Fail(disk_reserve.error());
  control::Controller controller(
      control::ControllerOptions{.node_timeout = *node_timeout,
                                 .drain_after_launch_failures = o.drain_after_launch_failures,
                                 .policy = o.policy});
  // The controller owns the tokens; the API's table is its copy: the tokens of the store now,
  // then each durable batch's changes (on_commit), and the two made at start.
  api::TokenTable tokens;
  tokens.Apply(setup->snapshot.tokens);
  tokens.AddFixed(setup->admin_token, api::Identity{.user = LocalUser(), .role = Role::kAdmin});
  // agent.token: a join token that may be used again; each agent joining gets its node's own
  // credential (control/token_book.h).
  tokens.AddFixed(setup->agent_token, api::Identity{.user = "agent", .role = Role::kJoin});
  // What streams wait on, fed by the loop's hooks (and the agent reports that land log bytes).
  api::News news;
  api::PlacementBook placements;  // what each node's credential reaches
  placements.Apply(setup->snapshot.jobs);
  auto code_limits = CodeLimitsOf(o);
  if (!code_limits) return Fail(code_limits.error());
  api::CodeStore code(kept + "/code-snapshots", *code_limits);
  code.Track(setup->snapshot.jobs, clock.Now());
  if (int gone = code.Collect(clock.Now()); gone > 0) {
    LogInfo("code snapshots: deleted " + std::to_string(gone) + " that no job used for " +
            FormatDuration(code_limits->retention));
  }
  controller.Restore(std::move(setup->snapshot), clock.Now());
  auto webhooks = MakeWebhookSender(o);
  if (!webhooks) return Fail(webhooks.error());
  // Autoscaling's provider calls, made off the loop's thread once the URL is known (Start);
  // stopped before the loop, so that no answer is posted to a loop that is gone.
  control::ControllerLoop* loop_ptr = nullptr;
  ProviderRunner providers([&loop_ptr](control::ProviderAnswer answer) {
    loop_ptr->Post(std::move(answer), [](const control::Reply&) {});
  });
  control::LoopOptions loop_options =
      MakeLoopOptions(webhooks->get(), news, tokens, **marker, placements, code);
  loop_options.on_provider_call = [&providers](control::ProviderCall call) {
    providers.Run(std::move(call));
  };
  control::ControllerLoop loop(controller, *setup->store, clock, std::move(loop_options),
                               StopOnStoreFailure);
  loop_ptr = &loop;

  api::LogStore logs(kept + "/logs",
                     {.max_log_bytes = o.policy.max_output_limit + (int64_t{1} << 20),
                      .disk_reserve = *disk_reserve});
  WarnWithinReserve(kept, *disk_reserve);

  // Declared before the service and loop callbacks use it: it must outlive every reply the
  // loop may still send, so it is stopped last.
  api::HttpServer* server_ptr = nullptr;
  api::Service service(api::Service::Deps{
      .loop = loop,
      .tokens = tokens,
      .logs = logs,
      .news = news,
      .post_to_io = [&server_ptr](std::function<void()> fn) { server_ptr->Post(std::move(fn)); },
      .code = &code,
      .epoch = leading.epoch,
      .reports_dir = kept + "/reports",
      .placements = &placements});
  api::HttpServer server(
      api::HttpServerOptions{.host = setup->listen.first,
                             .port = setup->listen.second,
                             .large_bodies = {{"POST /v1/code", api::CodeStore::kMaxBytes}},
                             .threads = o.http_threads,
                             .tls = setup->tls.files,
                             .plain_from_anywhere = o.tls.insecure_http,
                             .unix_socket = net::ApiSocketPath(dir)},
      [&service](api::Request req, api::Respond respond) {
        service.Handle(std::move(req), std::move(respond));
      });
  server_ptr = &server;
  auto url = StartServing(loop, server, setup->listen.first, setup->tls, dir);
  if (!url) return Fail(url.error());
  LogInfo("serving " + *url + " (data " + dir + ", " + std::to_string(restored) +
          " jobs restored)");
  LogInfo(DescribeServerTls(setup->tls));
  LogInfo(DescribeDashboard(setup->tls, *url, setup->listen.first, dir));
  if (Status st = server.unix_socket_status(); !st.ok())
    LogInfo(st.message() + "; commands on this machine use " + *url);
  // What a provider needs to start agents that join this controller (docs/operations.md
  // "Elastic capacity").
  std::vector<std::string> provider_env = {"BATON_SERVER=" + *url, "BATON_DATA=" + dir,
                                           "BATON_AGENT_TOKEN_FILE=" + dir + "/agent.token"};
  if (!setup->tls.ca_file.empty()) provider_env.push_back("BATON_TLS_CA=" + setup->tls.ca_file);
  providers.Start(std::move(provider_env));

  agent::PosixEnv env;
  agent::ProcessExecutor executor(env);
  std::unique_ptr<agent::Agent> local;
  if (o.local_agent) {
    if (Status st = executor.Check(); !st.ok()) return Fail(st);
    Status st = StartLocalAgent(
        o,
        LocalAgentSetup{.node_name = setup->node_name,
                        .data_dir = dir,
                        .url = *url,
                        .ca_file = setup->tls.ca_file,
                        .token = setup->agent_token,
                        .topology = std::move(setup->topology),
                        .limits = setup->limits},
        agent::AgentDeps{
            .backend = *setup->backend, .executor = executor, .env = env, .clock = clock},
        &local);
    if (!st.ok()) return Fail(st);
  }
  WaitForStop(signals, config, o, loop);
  if (local) local->Stop();
  providers.Stop();
  loop.Stop();
  server.Stop();
  if (leading.keeper) leading.keeper->Release();  // a standby takes over at once
  return 0;
}

}  // namespace

int ServeWithConfig(ServeOptions& o, const std::string& config) {
  if (!config.empty()) {
    if (Status st = LoadConfig(config, &o); !st.ok()) {
      Fail(st);
      return 2;
    }
  }
  if (Status st = ApplyStoreFlag(o.store_flag, &o.store_url, &o.store_path); !st.ok()) {
    Fail(st);
    return 2;
  }
  return Serve(o, config);
}

}  // namespace baton::server
