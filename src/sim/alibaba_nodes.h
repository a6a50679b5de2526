// The node list of Alibaba's GPU cluster trace (cluster-trace-gpu-v2023, "openb"; Weng et al.,
// "Beware of Fragmentation", USENIX ATC'23) as `baton sim` nodes, so that the trace's pod lists
// replay on the cluster they came from.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sim/simulator.h"

namespace baton::sim {

// Parses openb_node_list_gpu_node.csv (or _all_node.csv): a header naming sn, gpu and model
// (the files have sn,cpu_milli,memory_mib,gpu,model), then one node a row. A row with GPUs
// becomes a SimNode named sn, gpus "<gpu>x<OpenbGpuModel(model)>", pool "default"; rows without
// GPUs are left out. cpu_milli and memory_mib are not read: a SimNode has no CPUs or memory.
// Errors name the file, line and column; a list with no GPU node is an error.
Result<std::vector<SimNode>> ParseAlibabaNodes(std::string_view text, std::string_view file);

// The Baton GPU model of an openb model name ("V100M32" -> "V100-32GB", table in the .cc);
// names it does not know, as given. The pod lists' gpu_spec uses the same names, so a pod's
// GPU type must go through this too to match the nodes ("V100M16" would match no node).
std::string OpenbGpuModel(std::string_view model);

}  // namespace baton::sim
