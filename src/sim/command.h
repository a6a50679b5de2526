// `baton sim`: reads the cluster and the trace, replays the trace under one or more policies,
// prints the summaries and writes the report (PRODUCT.md §6).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "core/policy.h"
#include "core/status.h"
#include "sim/simulator.h"

namespace baton::sim {

struct SimCluster {
  std::vector<SimNode> nodes;
  Policy policy;                                  // the file's policy keys (a node list has none)
  Duration boot_delay = std::chrono::minutes(2);  // with autoscaling: a resumed node's boot
};

// The cluster YAML of PRODUCT.md §6, or an Alibaba openb node list (told by its header).
Result<SimCluster> LoadCluster(const std::string& path);

struct SimFlags {
  std::string cluster;             // cluster YAML, or an Alibaba openb node list (CSV)
  std::string trace;               // any trace ParseTrace knows
  std::string policy = "default";  // a name, or several separated by commas
  std::string report;              // directory: jobs.csv, summary.json and the pictures
  std::string convert;             // write the trace as the §6 CSV here, and replay nothing
  bool json = false;
};

// Exit status: 0 done, 2 bad input (files, flags), 1 when the report cannot be written.
// Summaries go to `out`, errors (prefixed "baton: ") to `err`.
int RunSim(const SimFlags& flags, std::ostream& out, std::ostream& err);

}  // namespace baton::sim
