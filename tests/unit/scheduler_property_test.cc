// Properties of placement that must hold for every cluster and every sequence of requests and
// releases: no GPU share or GPU memory is ever promised twice, and a gang is placed whole or
// not at all (a failed placement changes nothing).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <map>

#include "sched/first_fit.h"

namespace baton::sched {
namespace {

struct Live {
  Resources r;
  std::vector<NodeAllocation> allocation;
};

ClusterView RandomCluster() {
  ClusterView v;
  int nodes = *rc::gen::inRange(1, 6);
  for (int n = 0; n < nodes; ++n) {
    NodeSlots s;
    s.name = "n" + std::to_string(n);
    int gpus = *rc::gen::inRange(0, 9);
    std::string model = *rc::gen::element<std::string>("H100-80GB", "A100-40GB");
    int64_t mem = model == "H100-80GB" ? 80LL << 30 : 40LL << 30;
    for (int g = 0; g < gpus; ++g) {
      s.gpus.push_back(GpuSlot{.index = g, .model = model, .memory_bytes = mem, .free_milli = 1000,
                               .free_memory_bytes = mem});
    }
    s.total_cpus = s.free_cpus = *rc::gen::inRange(1, 65);
    s.total_memory_bytes = s.free_memory_bytes = int64_t{*rc::gen::inRange(1, 512)} << 30;
    v.nodes.push_back(std::move(s));
  }
  return v;
}

Resources RandomRequest() {
  Resources r;
  int kind = *rc::gen::inRange(0, 4);
  if (kind == 0) {  // fraction
    r.milli_gpus = *rc::gen::inRange(1, 1000);
    if (*rc::gen::arbitrary<bool>()) r.gpu_memory_bytes = int64_t{*rc::gen::inRange(1, 60)} << 30;
  } else if (kind == 1) {  // gang
    r.nodes = *rc::gen::inRange(1, 4);
    r.milli_gpus = int64_t{*rc::gen::inRange(1, 9)} * 1000 * r.nodes;
  } else if (kind == 2) {
    r.milli_gpus = int64_t{*rc::gen::inRange(1, 9)} * 1000;
  } else {
    r.milli_gpus = 0;
  }
  if (*rc::gen::inRange(0, 4) == 0) r.cpus = *rc::gen::inRange(1, 32);
  if (*rc::gen::inRange(0, 4) == 0) r.memory_bytes = int64_t{*rc::gen::inRange(1, 256)} << 30;
  if (r.milli_gpus > 0 && *rc::gen::inRange(0, 5) == 0) r.gpu_type = "A100";
  return r;
}

// Checks every GPU's promised share and memory against its capacity, from the live allocations
// alone (independently of the view's own bookkeeping), and that the view agrees.
void CheckNoOversubscription(const ClusterView& initial, const ClusterView& view, const std::map<int, Live>& live) {
  std::map<std::pair<std::string, int>, int64_t> milli, memory;
  std::map<std::string, int64_t> cpus, host_memory;
  for (const auto& [id, l] : live) {
    for (const NodeAllocation& a : l.allocation) {
      for (int g : a.gpus) {
        milli[{a.node, g}] += a.milli_per_gpu;
        if (a.milli_per_gpu < 1000) memory[{a.node, g}] += l.r.gpu_memory_bytes;
      }
      cpus[a.node] += l.r.cpus;
      host_memory[a.node] += l.r.memory_bytes;
    }
  }
  for (size_t n = 0; n < initial.nodes.size(); ++n) {
    const NodeSlots& cap = initial.nodes[n];
    const NodeSlots& now = view.nodes[n];
    RC_ASSERT(cpus[cap.name] <= cap.total_cpus);
    RC_ASSERT(host_memory[cap.name] <= cap.total_memory_bytes);
    RC_ASSERT(now.free_cpus == cap.total_cpus - cpus[cap.name]);
    for (size_t g = 0; g < cap.gpus.size(); ++g) {
      std::pair<std::string, int> key(cap.name, cap.gpus[g].index);
      int64_t used = milli[key];
      RC_ASSERT(used <= 1000);
      RC_ASSERT(memory[key] <= cap.gpus[g].memory_bytes);
      RC_ASSERT(now.gpus[g].free_milli == 1000 - used);
      RC_ASSERT(now.gpus[g].free_milli >= 0);
      RC_ASSERT(now.gpus[g].free_memory_bytes >= 0);
    }
  }
}

RC_GTEST_PROP(FirstFitProperty, NeverOversubscribesAndGangsAreWhole, ()) {
  const ClusterView initial = RandomCluster();
  ClusterView view = initial;
  std::map<int, Live> live;
  int steps = *rc::gen::inRange(1, 80);
  for (int id = 0; id < steps; ++id) {
    if (!live.empty() && *rc::gen::inRange(0, 3) == 0) {  // release a random live job
      auto it = live.begin();
      std::advance(it, *rc::gen::inRange<size_t>(0, live.size()));
      view.Apply(it->second.allocation, it->second.r, -1);
      live.erase(it);
    }
    Resources r = RandomRequest();
    ClusterView before = view;
    Placement p = PlaceFirstFit(view, r);
    if (p.fit != Fit::kPlaced) {
      RC_ASSERT(p.allocation.empty());
      RC_ASSERT(view.FreeWholeGpus() == before.FreeWholeGpus());
      for (size_t n = 0; n < view.nodes.size(); ++n) {
        RC_ASSERT(view.nodes[n].free_cpus == before.nodes[n].free_cpus);
        for (size_t g = 0; g < view.nodes[n].gpus.size(); ++g) {
          RC_ASSERT(view.nodes[n].gpus[g].free_milli == before.nodes[n].gpus[g].free_milli);
        }
      }
      continue;
    }
    // Whole gang: exactly `nodes` distinct nodes, each with its even share of GPUs.
    RC_ASSERT(static_cast<int>(p.allocation.size()) == r.nodes);
    std::set<std::string> distinct;
    int64_t total = 0;
    for (const NodeAllocation& a : p.allocation) {
      distinct.insert(a.node);
      total += static_cast<int64_t>(a.gpus.size()) * a.milli_per_gpu;
      if (r.milli_gpus >= 1000) RC_ASSERT(static_cast<int64_t>(a.gpus.size()) * 1000 == r.milli_gpus / r.nodes);
      for (int g : a.gpus) {
        const NodeSlots* n = view.FindNode(a.node);
        RC_ASSERT(n != nullptr);
        if (!r.gpu_type.empty()) RC_ASSERT(n->gpus[static_cast<size_t>(g)].model.starts_with("A100"));
      }
    }
    RC_ASSERT(static_cast<int>(distinct.size()) == r.nodes);
    RC_ASSERT(total == r.milli_gpus);
    live[id] = Live{r, p.allocation};
    CheckNoOversubscription(initial, view, live);
  }
  for (auto& [id, l] : live) view.Apply(l.allocation, l.r, -1);
  RC_ASSERT(view.FreeWholeGpus() == initial.FreeWholeGpus());
}

}  // namespace
}  // namespace baton::sched
