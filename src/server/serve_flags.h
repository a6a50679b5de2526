// The flags `baton up`, `baton server` and `baton agent` share: logging, TLS, and the local
// or remote agent's GPU health limits and job isolation. Used by server/ and main.cc.
#pragma once

#include <cstdint>
#include <string>

#include "agent/agent.h"
#include "agent/health.h"
#include "core/status.h"
#include "server/serve_tls.h"

namespace CLI {
class App;
}  // namespace CLI

namespace baton::server {

// --log-level and --log-format of the long-running commands (up, server, agent).
struct LogFlags {
  std::string level = "info";
  std::string format = "text";
};

void AddLogFlags(CLI::App* cmd, LogFlags& f);

// The agent's GPU health limits (agent/health.h) and job isolation, on `baton up` and
// `baton agent`.
struct HealthFlags {
  int max_temperature_c = 90;
  std::string readmit_after = "30s";
  bool allow_root_jobs = false;
  bool no_cgroups = false;
  std::string cgroup_root;
  int64_t job_pids_max = 16384;
  std::string mps_control = "nvidia-cuda-mps-control";  // "off": no MPS daemons
  bool mig_reconfigure = false;  // the controller may change MIG GPUs' instances
};

void AddHealthFlags(CLI::App* cmd, HealthFlags& f);

// The agent options the flags above give.
void ApplyAgentFlags(const HealthFlags& f, agent::AgentOptions* o);

Result<agent::HealthLimits> HealthLimitsOf(const HealthFlags& f);

// --tls-cert, --tls-key and --insecure-http of `baton up` and `baton server`.
void AddTlsFlags(CLI::App* cmd, TlsFlags& tls);

}  // namespace baton::server
