// `baton agent`, and the GPUs an agent uses (also `baton up`'s local one).
#pragma once

#include <memory>
#include <string>

#include "agent/gpu_backend.h"
#include "core/status.h"
#include "server/options.h"

namespace baton::server {

// `--gpus`: "auto" (NVML's GPUs when the library loads and finds any, else 8 simulated H100s),
// "nvml" (NVML's GPUs, or an error saying why not), or a SPEC of simulated GPUs.
Result<std::unique_ptr<agent::GpuBackend>> MakeBackend(const std::string& gpus,
                                                       const std::string& node);

// `baton agent`: joins the controller and runs until SIGINT or SIGTERM; the exit code.
int RunAgent(const AgentFlags& f);

}  // namespace baton::server
