#include "control/model_sizing.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "core/node.h"
#include "core/quantity.h"
#include "core/sizing.h"

namespace baton::control {
namespace {

std::string Gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fGiB", static_cast<double>(bytes) / (1LL << 30));
  return buf;
}

// Fills in the gpus and gpu_memory `spec` does not give from its model's estimate on its pool's
// GPU models; `note` says how.
Status SizeByModel(JobSpec& spec, const Policy& policy, const std::vector<sched::KnownNode>& known,
                   std::string* note);

}  // namespace

Status SizeModels(const std::vector<JobSpec>& specs, const Policy& policy,
                  const std::vector<sched::KnownNode>& known, std::vector<JobSpec>* own,
                  std::vector<std::string>* sized) {
  if (std::none_of(specs.begin(), specs.end(), [](const JobSpec& s) { return s.model; }))
    return Status::Ok();
  *own = specs;
  sized->resize(specs.size());
  for (size_t i = 0; i < own->size(); ++i) {
    JobSpec& spec = (*own)[i];
    if (!spec.model) continue;
    Status st = ValidateJobSpec(spec);
    if (st.ok()) st = SizeByModel(spec, policy, known, &(*sized)[i]);
    if (!st.ok()) {
      std::string where = own->size() > 1 ? "jobs[" + std::to_string(i) + "]." : "";
      return InvalidArgument(where + st.message());
    }
  }
  return Status::Ok();
}

namespace {

Status SizeByModel(JobSpec& spec, const Policy& policy, const std::vector<sched::KnownNode>& known,
                   std::string* note) {
  const ModelSizing& m = *spec.model;
  SizingRequest r;
  if (!m.name.empty()) {
    const ModelShape* shape = FindModel(m.name, policy.models);
    if (shape == nullptr) {
      return InvalidArgument("model.name: no model \"" + m.name +
                             "\" in the catalog (baton size --list); params: 7B sizes any model");
    }
    r = SizingRequestOf(m, *shape);
  } else {
    r = SizingRequestOf(m, ShapeFor(m.params));
  }
  RETURN_IF_ERROR(ValidateSizing(r));
  Resources& res = spec.resources;
  const std::string what = (m.name.empty() ? FormatParams(m.params) : r.model.name) + " " +
                           std::string(ModelTaskName(m.task)) + " in " +
                           std::string(PrecisionName(m.precision));
  if (res.milli_gpus > 0) {
    // The GPUs are given: each must hold a share.
    int gpus = static_cast<int>(std::max<int64_t>(1, res.milli_gpus / 1000));
    int64_t need = EstimateMemory(r, gpus).total();
    if (res.gpu_memory_bytes == 0) res.gpu_memory_bytes = need;
    *note = what + ": " + Gib(need) + " a GPU on the " + std::to_string(gpus) + " given";
    return Status::Ok();
  }
  // The GPU models of the pool's nodes (of the type asked for, if any).
  std::vector<const NodeInfo*> pool;
  for (const sched::KnownNode& k : known) {
    if (k.registered && k.info->pool == spec.pool) pool.push_back(k.info);
  }
  const std::map<std::string, GpuModelCount> kinds = CountGpuModels(pool, res.gpu_type);
  if (kinds.empty()) {
    return InvalidArgument("model: pool " + spec.pool + " has no " +
                           (res.gpu_type.empty() ? "" : res.gpu_type + " ") +
                           "GPUs known to size " + what + " for; give the GPUs (--gpus)");
  }
  // The fewest GPUs; of those, the smallest GPUs that hold them (the large stay free).
  std::optional<int> best;
  std::string best_model;
  std::string largest;
  for (const auto& [model, kind] : kinds) {
    std::optional<int> n = FewestGpus(r, kind.memory, kind.per_node, kind.total);
    if (largest.empty() || kind.memory > kinds.at(largest).memory) largest = model;
    if (n && (!best || *n < *best || (*n == *best && kind.memory < kinds.at(best_model).memory))) {
      best = n;
      best_model = model;
    }
  }
  if (!best) {
    const GpuModelCount& big = kinds.at(largest);
    std::optional<int> anywhere = FewestGpus(r, big.memory, big.per_node);
    return InvalidArgument("model: " + what + " needs " +
                           (anywhere ? std::to_string(*anywhere) + " " + largest + " GPUs"
                                     : "more memory than any number of " + largest + " GPUs hold") +
                           "; pool " + spec.pool + " has " + std::to_string(big.total));
  }
  int64_t need = EstimateMemory(r, *best).total();
  res.milli_gpus = int64_t{*best} * 1000;
  if (res.gpu_memory_bytes == 0) res.gpu_memory_bytes = need;
  *note = what + ": " + std::to_string(*best) + " GPU" + (*best == 1 ? "" : "s") + " of " +
          Gib(need) + " (fewest on " + best_model + ")";
  return Status::Ok();
}

}  // namespace
}  // namespace baton::control
