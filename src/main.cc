// The `batond` executable: the only place where real implementations are built and wired
// together. Server-side commands (up, server, agent, sim) are here; the client commands are in
// cli/: `baton` (client_main.cc) runs those itself and hands the rest to this program.
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "agent/agent.h"
#include "agent/executor.h"
#include "agent/host_topology.h"
#include "agent/nvml_backend.h"
#include "agent/posix_env.h"
#include "agent/simulated_gpu_backend.h"
#include "api/auth.h"
#include "api/http_server.h"
#include "api/log_store.h"
#include "api/service.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/parser.h"
#include "codec/json_codec.h"
#include "control/clock.h"
#include "control/controller.h"
#include "control/controller_loop.h"
#include "core/file_util.h"
#include "core/log.h"
#include "core/quantity.h"
#include "host.h"
#include "leadership.h"
#include "logging.h"
#include "net/http_client.h"
#include "net/tls.h"
#include "net/webhook_sender.h"
#include "serve_flags.h"
#include "serve_tls.h"
#include "sim/command.h"
#include "store/postgres_lease.h"
#include "store/postgres_store.h"
#include "store/sqlite_store.h"
#include "store_choice.h"

namespace baton {
namespace {
namespace fs = std::filesystem;

void Log(const std::string& msg) { LogInfo(msg); }

int Fail(const Status& st) {
  LogError(st.message());
  return 1;
}

struct ServeOptions {
  std::string data;
  std::string listen = "127.0.0.1:8470";
  bool local_agent = false;
  std::string gpus = "auto";
  std::string pool = "default";
  int http_threads = 1;
  Policy policy;
  HealthFlags health;
  std::string node_timeout = "60s";
  int drain_after_launch_failures = 3;
  std::vector<std::string> webhooks;  // alerts.webhooks of the configuration file
  int webhook_attempts = 5;
  std::string store_path;        // store.path of the configuration file; "" = DATA/baton.db
  std::string store_url;         // store.url: PostgreSQL's, or "" for SQLite
  std::string store_flag;        // --store: a SQLite file or a postgres:// URL; wins over the file
  std::string advertise;         // --advertise: this controller's URL for the others (PostgreSQL)
  std::string lease_ttl = "3s";  // --lease-ttl: how long a leader's lease lasts unrenewed
  std::string shared_dir;        // --shared-dir: logs and code snapshots ("" = in the data dir)
  std::string disk_reserve = "512MiB";  // --disk-reserve: free space job logs leave the store
  TlsFlags tls;                         // --tls-cert, --tls-key, --insecure-http
  std::string code_quota = "10GiB";     // --code-quota: each user's code snapshots
  std::string code_retention = "7d";    // --code-retention: an unused snapshot kept so long
  bool new_store = false;               // --new-store: an empty store where there was one
  bool restore_store = false;           // --restore-store: a store behind its data directory
};

struct AgentFlags {
  std::string server, token, token_file, name, gpus = "auto", data, pool = "default", address,
                                               tls_ca;
  HealthFlags health;
};

// Serves with `o`, after reading `config` (if given) into it; a bad file is a usage error.
int ServeWithConfig(ServeOptions& o, const std::string& config, const CLI::App& cmd);

// Reads `--config FILE` into `o`; flags given on the command line win over the file.
Status LoadConfig(const std::string& path, const CLI::App& cmd, ServeOptions* o) {
  std::ifstream in(path);
  if (!in) return NotFound(path + ": cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  auto cfg = codec::DecodeServerConfig(ss.str(), path);
  if (!cfg) return cfg.error();
  if (!cfg->listen.empty() && cmd.count("--listen") == 0) o->listen = cfg->listen;
  if (!cfg->data.empty() && cmd.count("--data") == 0) o->data = cfg->data;
  if (!cfg->shared_dir.empty() && cmd.count("--shared-dir") == 0) o->shared_dir = cfg->shared_dir;
  o->policy = std::move(cfg->policy);
  o->webhooks = std::move(cfg->webhooks);
  o->webhook_attempts = cfg->webhook_attempts;
  o->store_path = cfg->store_path;
  o->store_url = cfg->store_url;
  if (!cfg->tls_cert.empty() && cmd.count("--tls-cert") == 0 && cmd.count("--tls-key") == 0) {
    o->tls.cert = cfg->tls_cert;
    o->tls.key = cfg->tls_key;
  }
  if (cfg->insecure_http) o->tls.insecure_http = true;
  return Status::Ok();
}

// `--gpus`: "auto" (NVML's GPUs when the library loads and finds any, else 8 simulated H100s),
// "nvml" (NVML's GPUs, or an error saying why not), or a SPEC of simulated GPUs.
std::unique_ptr<agent::GpuBackend> MakeBackend(const std::string& gpus, const std::string& node,
                                               Status* error) {
  std::string spec_text = gpus;
  if (gpus == "auto" || gpus == "nvml") {
    std::string why;
    if (auto nvml = agent::NvmlGpuBackend::Open()) {
      if (!(*nvml)->Discover().empty()) return std::move(*nvml);
      why = "NVML found no GPU";
    } else {
      why = nvml.error().message();
    }
    if (gpus == "nvml") {
      *error = Unavailable("--gpus nvml: " + why);
      return nullptr;
    }
    Log("no NVIDIA GPUs here (" + why + "): simulating 8 H100s");
    spec_text = "8xH100-80GB";
  }
  auto spec = ParseGpuSpec(spec_text);
  if (!spec) {
    *error = spec.error();
    return nullptr;
  }
  return std::make_unique<agent::SimulatedGpuBackend>(*spec, node);
}

// SIGHUP: reads the configuration file again and hands its policy (scheduling, projects,
// users, pools) to the controller through the loop, so that nothing in flight is dropped. A
// file that does not read or check keeps the running configuration, and says why.
void Reload(const std::string& path, const ServeOptions& running, control::ControllerLoop& loop) {
  if (path.empty()) {
    Log("SIGHUP: started without --config: there is no file to reload");
    return;
  }
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) {
    Log("SIGHUP: " + path + ": cannot be read; the running configuration stays");
    return;
  }
  auto cfg = codec::DecodeServerConfig(text.str(), path);
  if (!cfg) {
    Log("SIGHUP: " + cfg.error().message() + "; the running configuration stays");
    return;
  }
  std::promise<Status> applied;
  loop.Post(control::SetPolicy{cfg->policy},
            [&applied](control::Reply r) { applied.set_value(r.status); });
  Status st = applied.get_future().get();
  if (!st.ok()) {
    Log("SIGHUP: " + st.message() + "; the running configuration stays");
    return;
  }
  Log("SIGHUP: reloaded " + path +
      ": its scheduling policy, projects, users and pools are in force");
  if ((!cfg->listen.empty() && cfg->listen != running.listen) ||
      (!cfg->data.empty() && cfg->data != running.data) || cfg->webhooks != running.webhooks ||
      cfg->webhook_attempts != running.webhook_attempts || cfg->store_path != running.store_path ||
      cfg->store_url != running.store_url) {
    Log("SIGHUP: `listen`, `data`, `store` and `alerts` take effect at the next start only");
  }
}

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
    bool alert = e.severity == "alert";
    Log(alert ? LogLevel::kWarn : LogLevel::kInfo,
        std::string(alert ? "ALERT " : "") + e.kind + ": " + e.message,
        LogContext{.component = "events",
                   .node = e.node,
                   .job = e.job,
                   .gpu = e.gpu,
                   .project = e.project,
                   .kind = e.kind});
    if (e.severity == "alert") sender->Send(codec::EncodeEvent(e));
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
    for (const Job& job : batch.jobs) news.jobs.Notify(job.id.value);
  };
  return loop_options;
}

// The loop's answer to a batch the store failed to commit.
[[noreturn]] void StopOnStoreFailure(const Status& st) {
  Log("fatal: " + st.message() + "; stopping so that nothing unacknowledged is lost");
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
  Log("local agent " + s.node_name + ": " + model + " (" + deps.backend.name() + " GPUs)");
  return Status::Ok();
}

// Waits for SIGINT or SIGTERM, reloading `config` on each SIGHUP until then.
void WaitForStop(const sigset_t& signals, const std::string& config, const ServeOptions& o,
                 control::ControllerLoop& loop) {
  int sig;
  while ((sig = WaitForShutdown(signals)) == SIGHUP) Reload(config, o, loop);
  Log(std::string("stopping on ") + (sig == SIGINT ? "SIGINT" : "SIGTERM") +
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
  Status backend_error;
  s.node_name = HostName();
  if (o.local_agent) {
    s.backend = MakeBackend(o.gpus, s.node_name, &backend_error);
    if (!s.backend) return Err(backend_error);
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
    Log("code snapshots: deleted " + std::to_string(gone) + " that no job used for " +
        FormatDuration(code_limits->retention));
  }
  controller.Restore(std::move(setup->snapshot), clock.Now());
  auto webhooks = MakeWebhookSender(o);
  if (!webhooks) return Fail(webhooks.error());
  control::ControllerLoop loop(
      controller, *setup->store, clock,
      MakeLoopOptions(webhooks->get(), news, tokens, **marker, placements, code),
      StopOnStoreFailure);

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
  Log("serving " + *url + " (data " + dir + ", " + std::to_string(restored) + " jobs restored)");
  Log(DescribeServerTls(setup->tls));
  Log(DescribeDashboard(setup->tls, *url, setup->listen.first, dir));
  if (Status st = server.unix_socket_status(); !st.ok())
    Log(st.message() + "; commands on this machine use " + *url);

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
  loop.Stop();
  server.Stop();
  if (leading.keeper) leading.keeper->Release();  // a standby takes over at once
  return 0;
}

int ServeWithConfig(ServeOptions& o, const std::string& config, const CLI::App& cmd) {
  if (!config.empty()) {
    if (Status st = LoadConfig(config, cmd, &o); !st.ok()) {
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

int RunAgent(const AgentFlags& f) {
  sigset_t signals = BlockShutdownSignals();
  std::string name = f.name.empty() ? HostName() : f.name;
  std::string dir = f.data.empty() ? cli::DefaultDataDir() + "/agent-" + name : f.data;
  std::string token = f.token;
  auto tls_ca = AgentTlsCa(f.tls_ca);
  if (!tls_ca) return Fail(tls_ca.error());
  if (!f.token_file.empty()) {
    if (Status st = CheckPrivate(f.token_file, "a join token"); !st.ok()) return Fail(st);
    token = ReadTrimmed(f.token_file);
    if (token.empty()) return Fail(NotFound("--token-file " + f.token_file + ": no token in it"));
  }
  if (Status st = LockDir(dir, "runs the agent of"); !st.ok()) return Fail(st);
  if (token.empty() && !fs::exists(dir + "/credential")) {
    Log("agent: node " + name + " has not joined yet (no " + dir +
        "/credential): give it a join token with --token or --token-file (the server's "
        "agent.token, or one from `baton node join-token`)");
    return 2;
  }
  if (!IsValidNodeName(name))
    return Fail(InvalidArgument("--name: 1-64 of letters, digits, '.', '_', '-'"));
  Status err;
  auto backend = MakeBackend(f.gpus, name, &err);
  if (!backend) return Fail(err);
  agent::PosixEnv env;
  RealClock clock;
  agent::ProcessExecutor executor(env);
  if (Status ok = executor.Check(); !ok.ok()) return Fail(ok);
  if (!IsValidNodeName(f.pool))
    return Fail(InvalidArgument("--pool: 1-64 of letters, digits, '.', '_', '-'"));
  auto limits = HealthLimitsOf(f.health);
  if (!limits) return Fail(limits.error());
  agent::AgentOptions ao{.name = name,
                         .data_dir = dir,
                         .server = f.server,
                         .tls = {.ca_file = *tls_ca},
                         .token = token,
                         .pool = f.pool,
                         .address = f.address,
                         .topology = HostTopologyOrNone(),
                         .health = *limits};
  ApplyAgentFlags(f.health, &ao);
  agent::Agent a(std::move(ao),
                 {.backend = *backend, .executor = executor, .env = env, .clock = clock});
  Status st = a.Start();
  if (!st.ok()) return Fail(st);
  Log("agent " + name + " joined " + f.server + " with " + f.gpus + " (" + backend->name() +
      " GPUs)");
  while (WaitForShutdown(signals) == SIGHUP)
    Log("agent " + name + ": SIGHUP: an agent has no configuration file to reload");
  a.Stop();
  return 0;
}

// The subcommands `up`, `server`, `agent` and `sim`. CLI11 writes each one's flags while
// parsing and then runs its callback, which sets *exit_code: the flags live in main, and a
// command's struct must outlive the parse.

struct ServeCommand {
  ServeOptions options;
  std::string config;
  LogFlags log;
};

void AddLaunchFailureFlag(CLI::App* cmd, ServeOptions& o) {
  cmd->add_option("--drain-after-launch-failures", o.drain_after_launch_failures,
                  "drain a node where this many jobs in a row could not start and then started "
                  "elsewhere (default 3; 0: never)")
      ->check(CLI::Range(0, 1000));
}

void AddStoreFlag(CLI::App* cmd, ServeOptions& o) {
  cmd->add_option("--store", o.store_flag,
                  "where jobs are kept: a postgres:// URL (several controllers may share it: "
                  "one leads), or a SQLite file (default DATA/baton.db); over the configuration "
                  "file's store");
  cmd->add_option("--advertise", o.advertise,
                  "with PostgreSQL: this controller's URL as agents, clients and the other "
                  "controllers reach it (default https://HOST:PORT of --listen)");
  cmd->add_option("--shared-dir", o.shared_dir,
                  "where job logs and code snapshots are kept (default: the data directory); "
                  "with several controllers, a file system they all mount");
  cmd->add_option("--disk-reserve", o.disk_reserve,
                  "free space that job output never takes from the disk of the logs (and the "
                  "store): past it, output is dropped with a log_dropped alert (default 512MiB)");
  cmd->add_option("--code-quota", o.code_quota,
                  "what each user's code snapshots (--code DIR) may take on the controller's "
                  "disk (default 10GiB)");
  cmd->add_option("--code-retention", o.code_retention,
                  "how long a code snapshot no queued or running job uses is kept after its "
                  "last use (default 7d)");
  auto* fresh = cmd->add_flag(
      "--new-store", o.new_store,
      "start an empty store in a data directory that had one (refused without it: an emptied "
      "or lost store is never taken for a new one); job ids go on past every id it saw");
  cmd->add_flag("--restore-store", o.restore_store,
                "go on from a store behind this data directory (a restored backup, a lost "
                "write-ahead log; refused without it): what it lacks is lost, job ids go on "
                "past every id the directory saw")
      ->excludes(fresh);
  cmd->add_option("--lease-ttl", o.lease_ttl,
                  "with PostgreSQL: how long the leader's lease lasts unrenewed, the longest a "
                  "failover waits (default 3s; renewed every third of it)");
}

void AddUpCommand(CLI::App& app, ServeCommand& c, int* exit_code) {
  ServeOptions& up = c.options;
  up.local_agent = true;
  CLI::App* up_cmd = app.add_subcommand("up", "controller and a local agent in one process");
  up_cmd->add_option("--data", up.data, "data directory (default $BATON_HOME, else ~/.baton)");
  up_cmd->add_option("--listen", up.listen, "HOST:PORT to serve (port 0 picks a free one)");
  up_cmd->add_option("--gpus", up.gpus,
                     "auto (NVML's GPUs, else 8 simulated H100s), nvml, or simulated GPUs: "
                     "COUNTxTYPE[:topo=nvswitch|pairs|cubemesh|pcie]");
  up_cmd->add_option("--http-threads", up.http_threads, "threads serving HTTP")
      ->check(CLI::Range(1, 64));
  up_cmd->add_option("--pool", up.pool, "pool (partition) of the local node");
  AddHealthFlags(up_cmd, up.health);
  up_cmd->add_option("--node-timeout", up.node_timeout,
                     "how long an agent may stay silent before its node is lost and its jobs "
                     "requeued (default 60s)");
  AddLaunchFailureFlag(up_cmd, up);
  AddStoreFlag(up_cmd, up);
  AddTlsFlags(up_cmd, up.tls);
  up_cmd->add_option("--config", c.config,
                     "YAML configuration: listen, data, scheduling, projects, users, pools");
  AddLogFlags(up_cmd, c.log);
  up_cmd->callback([&c, up_cmd, exit_code] {
    if (Status st = SetUpLogging(c.log.level, c.log.format); !st.ok()) {
      *exit_code = Fail(st);
      return;
    }
    if (!IsValidNodeName(c.options.pool)) {
      *exit_code = Fail(InvalidArgument("--pool: 1-64 of letters, digits, '.', '_', '-'"));
      return;
    }
    *exit_code = ServeWithConfig(c.options, c.config, *up_cmd);
  });
}

void AddServerCommand(CLI::App& app, ServeCommand& c, int* exit_code) {
  CLI::App* srv_cmd = app.add_subcommand("server", "the controller alone; agents join it");
  srv_cmd->add_option("--config", c.config,
                      "YAML configuration: listen, data, scheduling, projects, users, pools");
  srv_cmd->add_option("--data", c.options.data, "data directory");
  srv_cmd->add_option("--listen", c.options.listen, "HOST:PORT to serve");
  srv_cmd->add_option("--node-timeout", c.options.node_timeout,
                      "how long an agent may stay silent before its node is lost and its jobs "
                      "requeued (default 60s)");
  AddLaunchFailureFlag(srv_cmd, c.options);
  AddStoreFlag(srv_cmd, c.options);
  AddTlsFlags(srv_cmd, c.options.tls);
  AddLogFlags(srv_cmd, c.log);
  srv_cmd->callback([&c, srv_cmd, exit_code] {
    Status st = SetUpLogging(c.log.level, c.log.format);
    *exit_code = st.ok() ? ServeWithConfig(c.options, c.config, *srv_cmd) : Fail(st);
  });
}

struct AgentCommand {
  AgentFlags flags;
  LogFlags log;
};

void AddAgentCommand(CLI::App& app, AgentCommand& c, int* exit_code) {
  AgentFlags& f = c.flags;
  CLI::App* agent_cmd = app.add_subcommand("agent", "a node agent joining a controller");
  agent_cmd->add_option("--server", f.server, "controller URL, or every controller's: URL1,URL2")
      ->required();
  agent_cmd->add_option("--token", f.token,
                        "join token: the server's agent.token, or one of `baton node join-token`; "
                        "needed until the node has joined (its credential is in DATA/credential)");
  agent_cmd->add_option("--token-file", f.token_file,
                        "the join token from a file (mode 0600), not on the command line where "
                        "every user of the machine can read it");
  agent_cmd->add_option("--tls-ca", f.tls_ca,
                        "CA certificates (PEM) an https:// controller's certificate is checked "
                        "against, e.g. its DATA/tls/ca.crt (default: $BATON_TLS_CA, else the "
                        "system's CAs)");
  agent_cmd->add_option("--name", f.name, "node name (default: host name)");
  agent_cmd->add_option("--gpus", f.gpus, "auto, nvml, or simulated GPUs: COUNTxTYPE[:topo=...]");
  agent_cmd->add_option("--data", f.data, "agent state directory");
  agent_cmd->add_option("--pool", f.pool, "pool (partition) this node serves");
  agent_cmd->add_option(
      "--address", f.address,
      "host or IP other nodes reach this node's jobs at (MASTER_ADDR; default: the node name)");
  AddHealthFlags(agent_cmd, f.health);
  AddLogFlags(agent_cmd, c.log);
  agent_cmd->callback([&c, exit_code] {
    Status st = SetUpLogging(c.log.level, c.log.format);
    *exit_code = st.ok() ? RunAgent(c.flags) : Fail(st);
  });
}

void AddSimCommand(CLI::App& app, sim::SimFlags& f, int* exit_code) {
  CLI::App* sim_cmd = app.add_subcommand(
      "sim", "replay a workload trace on a described cluster (docs/scheduling.md)");
  sim_cmd->add_option("--cluster", f.cluster,
                      "cluster YAML (nodes, and the policy keys of the server's file) or an "
                      "Alibaba openb node list");
  sim_cmd
      ->add_option(
          "--trace", f.trace,
          "trace: the CSV of docs/scheduling.md, Philly, Alibaba openb pods, or sacct --parsable2")
      ->required();
  sim_cmd->add_option(
      "--policy", f.policy,
      "fifo, priority, fairshare, backfill, las or default; several, comma-separated, to compare");
  sim_cmd->add_option("--report", f.report,
                      "directory for jobs.csv, summary.json and SVG pictures");
  sim_cmd->add_option("--convert", f.convert,
                      "write the trace as the plain CSV to this file and stop");
  sim_cmd->add_flag("--json", f.json,
                    "print each policy's summary as one JSON object (a line each)");
  sim_cmd->callback([&f, exit_code] { *exit_code = sim::RunSim(f, std::cout, std::cerr); });
}

}  // namespace
}  // namespace baton

int main(int argc, char** argv) {
  using namespace baton;
  net::InitTls();
  CLI::App app;
  cli::SetUpRoot(app);
  int exit_code = 0;

  cli::CommandLine line = cli::ReadCommandLine(argc, argv);
  const std::string& named = line.command;

  // Only the command named is built where it is known: building every command's flags is a good
  // part of a short command's start. All of them for help, for no command or an unknown one.
  ServeCommand up, srv;
  AgentCommand agent_cmd;
  sim::SimFlags sim_flags;
  const bool is_client = cli::IsClientCommand(named);
  const bool is_serving = named == "up" || named == "server" || named == "agent" || named == "sim";
  const bool all = !is_client && !is_serving && named != "--version";
  if (all || named == "up") AddUpCommand(app, up, &exit_code);
  if (all || named == "server") AddServerCommand(app, srv, &exit_code);
  if (all || named == "agent") AddAgentCommand(app, agent_cmd, &exit_code);
  if (all || named == "sim") AddSimCommand(app, sim_flags, &exit_code);
  if (all || is_client) cli::AddClientCommands(app, &exit_code, line.tail, is_client ? named : "");
  if (std::optional<int> unknown = cli::RejectUnknownCommand(app, line.head)) return *unknown;
  if (std::optional<int> early = cli::ParseCommandLine(app, std::move(line.head))) return *early;
  return exit_code;
}
