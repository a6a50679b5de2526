// The `batond` executable's command line: the server-side commands (up, server, agent, sim),
// each handed to its module (server/, which builds the real implementations and wires them, and
// sim/). The client commands are in cli/: `baton` (client_main.cc) runs those itself and hands
// the rest to this program.
#include <CLI/CLI.hpp>
#include <iostream>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "cli/parser.h"
#include "core/node.h"
#include "net/tls.h"
#include "server/agent_run.h"
#include "server/logging.h"
#include "server/options.h"
#include "server/serve.h"
#include "server/serve_flags.h"
#include "sim/command.h"

namespace baton {
namespace {

using server::AddHealthFlags;
using server::AddLogFlags;
using server::AddTlsFlags;
using server::AgentFlags;
using server::Fail;
using server::LogFlags;
using server::ServeOptions;
using server::SetUpLogging;

// The flags typed on `cmd`'s command line: they win over the configuration file's.
void NoteTyped(const CLI::App& cmd, ServeOptions* o) {
  for (const CLI::Option* opt : cmd.get_options()) {
    if (opt->count() > 0) o->typed.insert("--" + opt->get_single_name());
  }
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
    NoteTyped(*up_cmd, &c.options);
    *exit_code = ServeWithConfig(c.options, c.config);
  });
}

void AddServerCommand(CLI::App& app, ServeCommand& c, int* exit_code) {
  CLI::App* srv_cmd = app.add_subcommand("server", "the controller alone; agents join it");
  srv_cmd->add_option("--config", c.config,
                      "YAML configuration: listen, data, scheduling, projects, users, pools");
  srv_cmd->add_option("--data", c.options.data, "data directory");
  srv_cmd->add_option("--listen", c.options.listen, "HOST:PORT to serve");
  srv_cmd->add_option("--http-threads", c.options.http_threads, "threads serving HTTP")
      ->check(CLI::Range(1, 64));
  srv_cmd->add_option("--node-timeout", c.options.node_timeout,
                      "how long an agent may stay silent before its node is lost and its jobs "
                      "requeued (default 60s)");
  AddLaunchFailureFlag(srv_cmd, c.options);
  AddStoreFlag(srv_cmd, c.options);
  AddTlsFlags(srv_cmd, c.options.tls);
  AddLogFlags(srv_cmd, c.log);
  srv_cmd->callback([&c, srv_cmd, exit_code] {
    Status st = SetUpLogging(c.log.level, c.log.format);
    NoteTyped(*srv_cmd, &c.options);
    *exit_code = st.ok() ? ServeWithConfig(c.options, c.config) : Fail(st);
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
  agent_cmd->add_flag("--spot", f.spot,
                      "a spot node: only preemptible jobs are placed here, and its GPUs are "
                      "charged at the catalog's spot prices");
  agent_cmd->add_option(
      "--reclaim-notice", f.reclaim_notice,
      "where a spot node's reclaim notice comes from: aws[:URL] (EC2 instance metadata), "
      "gcp[:URL] (Compute Engine metadata) or file:PATH (its existence); a notice stops the "
      "node's jobs (SIGTERM, SIGKILL at the deadline) and they are requeued elsewhere");
  agent_cmd->add_option("--reclaim-poll", f.reclaim_poll,
                        "how often the reclaim notice's source is looked at (default 5s)");
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
  const bool is_serving = cli::IsServerCommand(named);
  const bool all = !is_client && !is_serving && named != "--version";
  if (all || named == "up") AddUpCommand(app, up, &exit_code);
  if (all || named == "server") AddServerCommand(app, srv, &exit_code);
  if (all || named == "agent") AddAgentCommand(app, agent_cmd, &exit_code);
  if (all || named == "sim") AddSimCommand(app, sim_flags, &exit_code);
  if (all || is_client)
    cli::AddClientCommands(app, &exit_code, line.tail, is_client ? named : "", line.head);
  if (std::optional<int> unknown = cli::RejectUnknownCommand(app, line.head)) return *unknown;
  if (std::optional<int> early = cli::ParseCommandLine(app, std::move(line.head))) return *early;
  return exit_code;
}
