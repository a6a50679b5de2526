#include "server/serve_flags.h"

#include <CLI/CLI.hpp>

#include "core/time.h"

namespace baton::server {

void AddLogFlags(CLI::App* cmd, LogFlags& f) {
  cmd->add_option("--log-level", f.level, "debug, info, warn or error (default info)")
      ->envname("BATON_LOG_LEVEL");
  cmd->add_option("--log-format", f.format,
                  "text (\"baton: ...\") or json (a JSON object a line, with context)")
      ->envname("BATON_LOG_FORMAT");
}

void AddHealthFlags(CLI::App* cmd, HealthFlags& f) {
  cmd->add_option("--max-gpu-temperature", f.max_temperature_c,
                  "degrees Celsius at which a GPU leaves service until it cools (default 90)")
      ->check(CLI::Range(30, 150));
  cmd->add_option("--gpu-readmit-after", f.readmit_after,
                  "how long a failed GPU must stay quiet before its health check may bring it back "
                  "(default 30s)");
  cmd->add_flag("--allow-root-jobs", f.allow_root_jobs,
                "an agent running as root may run root's jobs as root");
  cmd->add_flag("--no-cgroups", f.no_cgroups,
                "no cgroup per job (no memory, CPU or process limits)");
  cmd->add_option(
      "--cgroup-root", f.cgroup_root,
      "cgroup v2 directory for job groups (default: the agent's own group + /baton-jobs)");
  cmd->add_option("--job-pids-max", f.job_pids_max,
                  "most processes one job may have; 0 = no limit (default 16384)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 22));
  cmd->add_option("--mps-control", f.mps_control,
                  "NVIDIA MPS's control program, run as a daemon for each GPU that holds "
                  "fractional jobs; off: none (default nvidia-cuda-mps-control, from PATH)")
      ->check([](const std::string& v) -> std::string {
        if (v.empty() || v.size() > 4096)
          return "a program's name or path (at most 4096 bytes), or off";
        return "";
      });
  cmd->add_flag("--mig-reconfigure", f.mig_reconfigure,
                "the controller may destroy and create the MIG instances of GPUs in MIG mode to "
                "fit what its queue asks for (MIG mode stays as the operator set it)");
}

void ApplyAgentFlags(const HealthFlags& f, agent::AgentOptions* o) {
  o->allow_root_jobs = f.allow_root_jobs;
  o->cgroups = !f.no_cgroups;
  o->cgroup_root = f.cgroup_root;
  o->job_pids_max = f.job_pids_max;
  o->mps_control = f.mps_control == "off" ? "" : f.mps_control;
  o->mig_reconfigure = f.mig_reconfigure;
}

Result<agent::HealthLimits> HealthLimitsOf(const HealthFlags& f) {
  ASSIGN_OR_RETURN(Duration quiet, ParseDuration(f.readmit_after, "--gpu-readmit-after"));
  return agent::HealthLimits{.max_temperature_c = f.max_temperature_c, .readmit_after = quiet};
}

void AddTlsFlags(CLI::App* cmd, TlsFlags& tls) {
  cmd->add_option("--tls-cert", tls.cert,
                  "the server's certificate chain, PEM (default: one its own CA signs, made in "
                  "DATA/tls on first start)");
  cmd->add_option("--tls-key", tls.key, "the certificate's private key, PEM (mode 0600)");
  cmd->add_flag("--insecure-http", tls.insecure_http,
                "answer plain HTTP from other machines too (default: from loopback only; "
                "HTTPS is served on the same port)");
}

}  // namespace baton::server
