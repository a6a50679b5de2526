#include "server/agent_run.h"

#include <unistd.h>

#include <filesystem>

#include "agent/agent.h"
#include "agent/executor.h"
#include "agent/nvml_backend.h"
#include "agent/posix_env.h"
#include "agent/simulated_gpu_backend.h"
#include "cli/client.h"
#include "control/clock.h"
#include "core/file_util.h"
#include "core/log.h"
#include "server/host.h"
#include "server/logging.h"
#include "server/serve_tls.h"

namespace baton::server {

namespace fs = std::filesystem;

Result<std::unique_ptr<agent::GpuBackend>> MakeBackend(const std::string& gpus,
                                                       const std::string& node) {
  std::string spec_text = gpus;
  if (gpus == "auto" || gpus == "nvml") {
    std::string why;
    if (auto nvml = agent::NvmlGpuBackend::Open()) {
      if (!(*nvml)->Discover().empty()) return std::unique_ptr<agent::GpuBackend>(std::move(*nvml));
      why = "NVML found no GPU";
    } else {
      why = nvml.error().message();
    }
    if (gpus == "nvml") return Err(Unavailable("--gpus nvml: " + why));
    LogInfo("no NVIDIA GPUs here (" + why + "): simulating 8 H100s");
    spec_text = "8xH100-80GB";
  }
  ASSIGN_OR_RETURN(auto spec, ParseGpuSpec(spec_text));
  return std::unique_ptr<agent::GpuBackend>(
      std::make_unique<agent::SimulatedGpuBackend>(spec, node));
}

int RunAgent(const AgentFlags& f) {
  sigset_t signals = BlockShutdownSignals();
  std::optional<agent::ReclaimSource> reclaim;
  if (!f.reclaim_notice.empty()) {
    auto source = agent::ParseReclaimSource(f.reclaim_notice);
    if (!source) return Fail(source.error());
    reclaim = std::move(*source);
    if (!f.spot)
      return Fail(
          InvalidArgument("--reclaim-notice: only a spot node gets reclaim notices (--spot)"));
  }
  auto reclaim_poll = ParseDuration(f.reclaim_poll, "--reclaim-poll");
  if (!reclaim_poll) return Fail(reclaim_poll.error());
  if (*reclaim_poll < std::chrono::milliseconds(100) || *reclaim_poll > std::chrono::minutes(10))
    return Fail(InvalidArgument("--reclaim-poll: between 100ms and 10m"));
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
    LogInfo("agent: node " + name + " has not joined yet (no " + dir +
            "/credential): give it a join token with --token or --token-file (the server's "
            "agent.token, or one from `baton node join-token`)");
    return 2;
  }
  if (!IsValidNodeName(name))
    return Fail(InvalidArgument("--name: 1-64 of letters, digits, '.', '_', '-'"));
  auto backend = MakeBackend(f.gpus, name);
  if (!backend) return Fail(backend.error());
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
                         .health = *limits,
                         .spot = f.spot,
                         .reclaim = std::move(reclaim),
                         .reclaim_poll = *reclaim_poll};
  ApplyAgentFlags(f.health, &ao);
  agent::Agent a(std::move(ao),
                 {.backend = **backend, .executor = executor, .env = env, .clock = clock});
  Status st = a.Start();
  if (!st.ok()) return Fail(st);
  LogInfo("agent " + name + " joined " + f.server + " with " + f.gpus + " (" +
          std::string(GpuBackendName((*backend)->kind())) + " GPUs)");
  while (WaitForShutdown(signals) == SIGHUP)
    LogInfo("agent " + name + ": SIGHUP: an agent has no configuration file to reload");
  a.Stop();
  return 0;
}

}  // namespace baton::server
