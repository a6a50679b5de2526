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

}  // namespace baton::sim
