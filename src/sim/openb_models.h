// Alibaba's openb GPU model names as Baton's, for its node list (sim/alibaba_nodes.h) and its
// pod lists (sim/trace.h) alike.
#pragma once

#include <string>
#include <string_view>

namespace baton::sim {

// The Baton GPU model of an openb model name ("V100M32" -> "V100-32GB", table in the .cc);
// names it does not know, as given. The pod lists' gpu_spec uses the same names, so a pod's
// GPU type must go through this too to match the nodes ("V100M16" would match no node).
std::string OpenbGpuModel(std::string_view model);

}  // namespace baton::sim
