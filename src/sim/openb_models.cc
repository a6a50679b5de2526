#include "sim/openb_models.h"

namespace baton::sim {
namespace {

// openb model -> Baton model. The trace names a model by family and memory; Baton's --gpus SPEC
// takes a GPU's memory from a "-<N>GB" suffix and its NVLink topology from the family
// (core/node.h), so the memory goes into the name:
//   P100     P100-16GB   the trace does not say 12 or 16 GB; 16 GB is the common P100. Baton
//                        gives P100 no NVLink, right for the PCIe cards of the trace's 1-2 GPU
//                        nodes
//   T4       T4-16GB     T4 comes only with 16 GB
//   V100M16  V100-16GB   "M16" is the memory; 8-GPU nodes get Baton's DGX-1 cube-mesh, 4-GPU
//                        nodes NVLink pairs: the trace does not give the interconnect
//   V100M32  V100-32GB
//   A10      A10-24GB    A10 comes only with 24 GB
//   G1/G2/G3 unchanged   models the trace does not disclose: no memory is known, so no suffix
//                        (Baton then assumes 16 GiB, PCIe); the name keeps the guess visible
struct Model {
  std::string_view openb, baton;
};
constexpr Model kModels[] = {
    {"P100", "P100-16GB"},    {"T4", "T4-16GB"},   {"V100M16", "V100-16GB"},
    {"V100M32", "V100-32GB"}, {"A10", "A10-24GB"},
};

}  // namespace

std::string OpenbGpuModel(std::string_view model) {
  for (const Model& m : kModels) {
    if (m.openb == model) return std::string(m.baton);
  }
  return std::string(model);
}

}  // namespace baton::sim
