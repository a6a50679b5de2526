// The host's NUMA nodes and their CPUs (from /sys/devices/system/node), so that a job runs on
// the CPUs, and prefers the memory, of the NUMA node its GPUs hang off.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

namespace baton::agent {

class HostNuma {
 public:
  // Reads `root`/node<N>/cpulist for every NUMA node there.
  static HostNuma Read(const std::string& root = "/sys/devices/system/node");
  explicit HostNuma(std::map<int, std::string> cpulists = {}) : cpulists_(std::move(cpulists)) {}

  // The CPUs of these NUMA nodes as one cpulist ("0-15,32-47"); nullopt when a node is not
  // one of this host's (simulated GPUs numbered beyond the host's nodes).
  std::optional<std::string> CpusOf(const std::set<int>& nodes) const;
  bool Has(int node) const { return cpulists_.count(node) > 0; }
  size_t size() const { return cpulists_.size(); }

 private:
  std::map<int, std::string> cpulists_;
};

}  // namespace baton::agent
