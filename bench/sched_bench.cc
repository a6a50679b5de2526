// Benchmarks of the scheduling core and the controller state machine, without I/O.
//   build/release/bench/baton_bench_sched
#include <benchmark/benchmark.h>

#include "control/controller.h"
#include "sched/scheduler.h"
#include "store/memory_store.h"

namespace baton {
namespace {

sched::ClusterView Cluster(int nodes, int gpus) {
  sched::ClusterView v;
  for (int n = 0; n < nodes; ++n) {
    sched::NodeSlots s;
    s.name = "n" + std::to_string(n);
    for (int g = 0; g < gpus; ++g) {
      s.gpus.push_back(sched::GpuSlot{.index = g, .model = "H100-80GB", .memory_bytes = 80LL << 30,
                                      .free_milli = 1000, .free_memory_bytes = 80LL << 30});
    }
    s.total_cpus = s.free_cpus = 128;
    s.total_memory_bytes = s.free_memory_bytes = 1LL << 40;
    v.nodes.push_back(std::move(s));
  }
  return v;
}

const std::string kProject = "p", kUser = "u", kPool = "default";

std::vector<sched::PendingJob> Queue(const std::vector<Resources>& shapes) {
  std::vector<sched::PendingJob> q;
  q.reserve(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    q.push_back(sched::PendingJob{.id = JobId{static_cast<int64_t>(i + 1)}, .resources = &shapes[i],
                                  .project = &kProject, .user = &kUser, .pool = &kPool,
                                  .time_limit = std::chrono::hours(1 + static_cast<int>(i % 4))});
  }
  return q;
}

// A full pass over a queue of state.range(0) jobs of mixed shapes on 64 nodes x 8 GPUs.
void BM_FullPass(benchmark::State& state) {
  sched::ClusterView view = Cluster(64, 8);
  std::vector<Resources> shapes(static_cast<size_t>(state.range(0)));
  for (size_t i = 0; i < shapes.size(); ++i) {
    static const int64_t kMilli[] = {1000, 2000, 8000, 500, 4000, 16000};
    shapes[i].milli_gpus = kMilli[i % 6];
    shapes[i].nodes = shapes[i].milli_gpus == 16000 ? 2 : 1;
  }
  std::vector<sched::PendingJob> queue = Queue(shapes);
  for (auto _ : state) {
    sched::PassInput in;
    in.view = view;
    in.pending = queue;
    in.now = FromMillis(1'790'000'000'000);
    sched::PassResult r = sched::RunPass(std::move(in));
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_FullPass)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMicrosecond);

// Submits through the controller, one batch of state.range(0) submits per EndBatch, with
// 10,000 jobs already waiting on a full cluster (the incremental pass looks only at new jobs).
void BM_ControllerSubmit(benchmark::State& state) {
  control::Controller c;
  store::MemoryStore store;
  TimePoint now = FromMillis(1'790'000'000'000);
  c.Restore(*store.Load(), now);
  NodeInfo info;
  info.name = "n1";
  for (int i = 0; i < 8; ++i) info.gpus.push_back(Gpu{.index = i, .model = "H100-80GB", .memory_bytes = 80LL << 30});
  (void)c.Apply(control::AgentRegister{RegisterRequest{.node = info}}, now);
  JobSpec spec;
  spec.command = {"true"};
  spec.resources.milli_gpus = 1000;
  for (int i = 0; i < 10000; ++i) (void)c.Apply(control::SubmitJobs{.caller = {"u", false}, .specs = {spec}}, now);
  (void)c.EndBatch(now);
  for (auto _ : state) {
    for (int i = 0; i < state.range(0); ++i) {
      benchmark::DoNotOptimize(c.Apply(control::SubmitJobs{.caller = {"u", false}, .specs = {spec}}, now));
    }
    control::Effects fx = c.EndBatch(now);
    benchmark::DoNotOptimize(fx);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_ControllerSubmit)->Arg(1)->Arg(64)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace baton
