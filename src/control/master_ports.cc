#include "control/master_ports.h"

#include <algorithm>
#include <charconv>
#include <optional>

namespace baton::control {
namespace {

// The MASTER_PORT the job's own env sets, if it is a port (1-65535: anything else the job
// cannot listen on, and a record must hold only ports).
std::optional<int> OwnMasterPort(const Job& job) {
  for (const auto& [key, value] : job.spec.env) {
    if (key != "MASTER_PORT") continue;
    int port = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), port);
    if (ec == std::errc() && end == value.data() + value.size() && port >= 1 && port <= 65535)
      return port;
  }
  return std::nullopt;
}

}  // namespace

int DefaultMasterPort(JobId id) {
  return kFirstMasterPort + static_cast<int>(id.value % kMasterPorts);
}

bool MeetsOverNetwork(const Job& job) {
  // An allocation serves `baton run --in` at its step port, on one node too.
  if (job.allocation.size() > 1 || job.spec.alloc) return true;
  return job.spec.process_per_gpu && !job.allocation.empty() &&
         job.allocation.front().gpus.size() > 1;
}

PortsByNode MasterPortsInUse(const RunningJobs& running) {
  PortsByNode ports;
  for (const auto& [id, job] : running) {
    if (!MeetsOverNetwork(*job)) continue;
    // A job started before master_port was kept met at its own port, else at the default.
    int port = job->master_port > 0 ? job->master_port
                                    : OwnMasterPort(*job).value_or(DefaultMasterPort(id));
    ports[job->allocation.front().node].insert(port);
    // A batch script's step servers listen on every node of the job.
    if (job->step_port > 0) {
      for (const NodeAllocation& part : job->allocation) ports[part.node].insert(job->step_port);
    }
  }
  return ports;
}

int TakeMasterPort(const Job& job, std::set<int>& used) {
  if (std::optional<int> own = OwnMasterPort(job)) {
    used.insert(*own);
    return *own;
  }
  int preferred = DefaultMasterPort(job.id);
  for (int i = 0; i < kMasterPorts; ++i) {
    int port = kFirstMasterPort + (preferred - kFirstMasterPort + i) % kMasterPorts;
    if (used.insert(port).second) return port;
  }
  return preferred;  // 10,000 gangs meeting on one node: share
}

int TakeStepPort(const Job& job, PortsByNode& ports) {
  for (int i = 1; i < kMasterPorts; ++i) {
    int port = job.master_port + i;
    if (port > 65535) port -= 65535 - kFirstMasterPort + 1;
    bool free =
        std::none_of(job.allocation.begin(), job.allocation.end(),
                     [&](const NodeAllocation& p) { return ports[p.node].count(port) > 0; });
    if (!free) continue;
    for (const NodeAllocation& p : job.allocation) ports[p.node].insert(port);
    return port;
  }
  return job.master_port + 1;  // every port of the range in use on its nodes: share
}

}  // namespace baton::control
