// Benchmarks of the scheduling core and the controller state machine, without I/O.
//   build/release/bench/baton_bench_sched
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <deque>
#include <memory>

#include "control/autoscale_plan.h"
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
      s.gpus.push_back(sched::GpuSlot{.index = g,
                                      .model = "H100-80GB",
                                      .memory_bytes = 80LL << 30,
                                      .free_milli = 1000,
                                      .free_memory_bytes = 80LL << 30});
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
    q.push_back(sched::PendingJob{.id = JobId{static_cast<int64_t>(i + 1)},
                                  .resources = &shapes[i],
                                  .project = &kProject,
                                  .user = &kUser,
                                  .pool = &kPool,
                                  .time_limit = std::chrono::hours(1 + static_cast<int>(i % 4))});
  }
  return q;
}

// One full pass of `queue` on a copy of `view`, nothing running.
sched::PassResult PassOnce(const sched::ClusterView& view,
                           const std::vector<sched::PendingJob>& queue) {
  sched::PassInput in;
  in.view = view;
  in.pending = queue;
  in.now = FromMillis(1'790'000'000'000);
  return sched::RunPass(std::move(in));
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
    sched::PassResult r = PassOnce(view, queue);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_FullPass)->Arg(1000)->Arg(10000)->Arg(100000)->Unit(benchmark::kMicrosecond);

// The target: one full pass over 100,000 pending jobs on 10,000 GPUs (1,250 nodes x 8,
// NVSwitch). state.range(0) = 0: the cluster is busy (10,000 one-GPU jobs running with time
// limits, all of class low, so high jobs search for victims); 1: the cluster starts empty.
void BM_FullPass100kOn10kGpus(benchmark::State& state) {
  const bool empty = state.range(0) == 1;  // 2: busy, preemption switched off
  sched::ClusterView view = Cluster(1250, 8);
  for (auto& n : view.nodes) {
    for (auto& g : n.gpus) {
      g.pcie_switch = g.index / 2;
      g.numa_node = g.index / 4;
    }
  }
  static const std::string kProjects[] = {"vision", "nlp", "speech", "rl"};
  static const std::string kUsers[] = {"u0", "u1", "u2", "u3", "u4", "u5", "u6", "u7"};
  std::vector<Resources> shapes(100'000);
  std::vector<sched::PendingJob> pending;
  const TimePoint now = FromMillis(1'790'000'000'000);
  for (size_t i = 0; i < shapes.size(); ++i) {
    static const int64_t kMilli[] = {1000, 1000, 2000, 4000, 8000, 500, 16000, 64000};
    shapes[i].milli_gpus = kMilli[i % 8];
    shapes[i].nodes =
        shapes[i].milli_gpus > 8000 ? static_cast<int>(shapes[i].milli_gpus / 8000) : 1;
    pending.push_back(
        sched::PendingJob{.id = JobId{static_cast<int64_t>(i + 100'000)},
                          .resources = &shapes[i],
                          .priority = static_cast<Priority>(i % 3),
                          .project = &kProjects[i % 4],
                          .user = &kUsers[i % 8],
                          .pool = &kPool,
                          .submitted = now - std::chrono::seconds(static_cast<int64_t>(i % 3600)),
                          .time_limit = std::chrono::hours(1 + static_cast<int>(i % 4))});
  }
  Resources one;
  one.milli_gpus = 1000;
  std::deque<std::vector<NodeAllocation>> allocations;
  std::vector<sched::RunningJob> running;
  if (!empty) {
    for (int n = 0; n < 1250; ++n) {
      for (int g = 0; g < 8; ++g) {
        allocations.push_back({NodeAllocation{.node = "n" + std::to_string(n), .gpus = {g}}});
        view.Apply(allocations.back(), one, +1);
        int64_t k = n * 8 + g;
        running.push_back(
            sched::RunningJob{.id = JobId{k + 1},
                              .resources = &one,
                              .allocation = &allocations.back(),
                              .priority = Priority::kLow,
                              .project = &kProjects[k % 4],
                              .user = &kUsers[k % 8],
                              .pool = &kPool,
                              .started = now - std::chrono::minutes(k % 50),
                              .expected_end = now + std::chrono::minutes(10 + k % 50)});
      }
    }
  }
  sched::UsageLedger usage;
  usage.Advance(now - std::chrono::hours(1));
  for (int i = 0; i < 4; ++i) usage.AddRate(kProjects[i], kUsers[i], 1000 * (i + 1));
  usage.Advance(now);
  Policy policy;
  policy.preemption = state.range(0) != 2;
  size_t starts = 0, reservations = 0, preemptions = 0;
  for (auto _ : state) {
    sched::PassInput in;
    in.view = view;
    in.pending = pending;
    in.running = running;
    in.usage = &usage;
    in.policy = &policy;
    in.now = now;
    sched::PassResult r = sched::RunPass(std::move(in));
    starts = r.starts.size();
    reservations = r.reservations.size();
    preemptions = r.preemptions.size();
    benchmark::DoNotOptimize(r);
  }
  state.counters["starts"] = static_cast<double>(starts);
  state.counters["reservations"] = static_cast<double>(reservations);
  state.counters["preemptions"] = static_cast<double>(preemptions);
}
BENCHMARK(BM_FullPass100kOn10kGpus)->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond);

// 1,000 gang jobs of 8-64 GPUs (1-8 whole nodes) placed topology-aware by one pass on a
// cluster that holds them all (5,000 nodes x 8 GPUs).
void BM_GangPlacement(benchmark::State& state) {
  sched::ClusterView view = Cluster(5000, 8);
  std::vector<Resources> shapes(1000);
  for (size_t i = 0; i < shapes.size(); ++i) {
    int nodes = 1 + static_cast<int>(i % 8);
    shapes[i].milli_gpus = 8000LL * nodes;
    shapes[i].nodes = nodes;
  }
  std::vector<sched::PendingJob> queue = Queue(shapes);
  size_t placed = 0;
  for (auto _ : state) {
    sched::PassResult r = PassOnce(view, queue);
    placed = r.starts.size();
    benchmark::DoNotOptimize(r);
  }
  state.counters["gangs_placed"] = static_cast<double>(placed);
  state.counters["gangs_per_s"] = benchmark::Counter(static_cast<double>(placed),
                                                     benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_GangPlacement)->Unit(benchmark::kMillisecond);

// Controller memory per pending job: 100,000 jobs with a realistic spec (a 6-word command,
// two environment variables, a name), waiting on a cluster with no room.
void BM_ControllerMemoryPerPendingJob(benchmark::State& state) {
  for (auto _ : state) {
    state.PauseTiming();
    size_t before = mallinfo2().uordblks;
    state.ResumeTiming();
    auto c = std::make_unique<control::Controller>();
    store::MemoryStore store;
    TimePoint now = FromMillis(1'790'000'000'000);
    c->Restore(*store.Load(), now);
    JobSpec spec;
    spec.name = "sweep-lr-0.0003";
    spec.command = {"python", "train.py", "--config", "configs/vit-b16.yaml", "--lr", "3e-4"};
    spec.env = {{"WANDB_PROJECT", "vision"}, {"SEED", "17"}};
    spec.project = "vision";
    spec.resources.milli_gpus = 8000;
    spec.time_limit = std::chrono::hours(4);
    const int n = static_cast<int>(state.range(0));
    for (int i = 0; i < n; ++i) {
      (void)c->Apply(control::SubmitJobs{.caller = {"researcher", false}, .specs = {spec}}, now);
      if (i % 1000 == 999) (void)c->EndBatch(now);
    }
    (void)c->EndBatch(now);
    state.PauseTiming();
    size_t after = mallinfo2().uordblks;
    state.counters["bytes_per_pending_job"] = static_cast<double>(after - before) / n;
    state.counters["pending"] = static_cast<double>(c->queue_length());
    c.reset();
    state.ResumeTiming();
  }
}
BENCHMARK(BM_ControllerMemoryPerPendingJob)
    ->Arg(100'000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

// Submits through the controller, one batch of state.range(0) submits per EndBatch, with
// 10,000 jobs already waiting on a full cluster (the incremental pass looks only at new jobs).
void BM_ControllerSubmit(benchmark::State& state) {
  control::Controller c;
  store::MemoryStore store;
  TimePoint now = FromMillis(1'790'000'000'000);
  c.Restore(*store.Load(), now);
  NodeInfo info;
  info.name = "n1";
  for (int i = 0; i < 8; ++i)
    info.gpus.push_back(Gpu{.index = i, .model = "H100-80GB", .memory_bytes = 80LL << 30});
  (void)c.Apply(control::AgentRegister{RegisterRequest{.node = info}}, now);
  JobSpec spec;
  spec.command = {"true"};
  spec.resources.milli_gpus = 1000;
  for (int i = 0; i < 10000; ++i)
    (void)c.Apply(control::SubmitJobs{.caller = {"u", false}, .specs = {spec}}, now);
  (void)c.EndBatch(now);
  for (auto _ : state) {
    for (int i = 0; i < state.range(0); ++i) {
      benchmark::DoNotOptimize(
          c.Apply(control::SubmitJobs{.caller = {"u", false}, .specs = {spec}}, now));
    }
    control::Effects fx = c.EndBatch(now);
    benchmark::DoNotOptimize(fx);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_ControllerSubmit)->Arg(1)->Arg(64)->Unit(benchmark::kMicrosecond);

// One job submitted and started per batch on a controller of 10,000 nodes x 8 GPUs (most of
// them free): what a pass costs where the cluster, not the queue, is large (submit -> launch
// order at ten thousand agents, docs/performance.md).
void BM_ControllerSubmitOn10kNodes(benchmark::State& state) {
  control::Controller c;
  store::MemoryStore store;
  TimePoint now = FromMillis(1'790'000'000'000);
  c.Restore(*store.Load(), now);
  for (int n = 0; n < 10000; ++n) {
    NodeInfo info;
    info.name = "n" + std::to_string(n);
    info.cpus = 128;
    info.memory_bytes = 1LL << 40;
    for (int i = 0; i < 8; ++i)
      info.gpus.push_back(Gpu{.index = i, .model = "H100-80GB", .memory_bytes = 80LL << 30});
    (void)c.Apply(control::AgentRegister{RegisterRequest{.node = info}}, now);
  }
  (void)c.EndBatch(now);
  JobSpec spec;
  spec.command = {"true"};
  spec.resources.milli_gpus = 1000;
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        c.Apply(control::SubmitJobs{.caller = {"u", false}, .specs = {spec}}, now));
    control::Effects fx = c.EndBatch(now);
    benchmark::DoNotOptimize(fx);
    now += std::chrono::milliseconds(1);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ControllerSubmitOn10kNodes)->Unit(benchmark::kMicrosecond)->Iterations(2000);

// One autoscaling decision (control/autoscale_plan.h) over `nodes` autoscaled nodes of four
// templates (a tenth resuming, the rest ready: half busy, half idle, some for longer than the
// idle time) and as many waiting jobs of mixed shapes (1, 2, 4 and 8 GPUs, gangs of 2 and 4
// nodes, some not preemptible): what the controller spends at each scan.
void BM_AutoscalePlan(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const TimePoint now = FromMillis(1'790'000'000'000);
  std::vector<NodeTemplate> templates;
  for (const char* name : {"h100", "h100-spot", "a100", "a100-spot"}) {
    const bool spot = std::string(name).ends_with("spot");
    const bool h100 = std::string(name).starts_with("h100");
    templates.push_back(NodeTemplate{.name = name,
                                     .gpu_spec = h100 ? "8xH100-80GB" : "8xA100-80GB",
                                     .gpus = 8,
                                     .gpu_model = h100 ? "H100-80GB" : "A100-80GB",
                                     .gpu_memory_bytes = 80LL << 30,
                                     .cpus = 96,
                                     .memory_bytes = 1LL << 40,
                                     .price_per_hour = (h100 ? 98.0 : 40.0) * (spot ? 0.35 : 1),
                                     .spot = spot,
                                     .min = 2,
                                     .max = n});
  }
  std::vector<control::ScaledNode> nodes;
  for (int i = 0; i < n; ++i) {
    control::ScaledNode node{.name = templates[i % 4].name + "-" + std::to_string(i / 4 + 1),
                             .template_name = templates[i % 4].name,
                             .since = now - std::chrono::minutes(i % 30)};
    if (i % 10 == 0) {
      node.state = control::ScaledNode::State::kResuming;
    } else {
      node.state = control::ScaledNode::State::kReady;
      node.busy = i % 2 == 0;
      if (!node.busy) node.idle_since = now - std::chrono::minutes(i % 20);
    }
    nodes.push_back(std::move(node));
  }
  std::vector<control::ScaleDemand> waiting;
  const int64_t gpus[] = {1000, 2000, 4000, 8000, 16000, 32000};
  for (int i = 0; i < n; ++i) {
    Resources r{.milli_gpus = gpus[i % 6], .nodes = i % 6 >= 4 ? (i % 6 == 4 ? 2 : 4) : 1};
    r.gpu_type = i % 3 == 0 ? "H100" : "";
    waiting.push_back(control::ScaleDemand{
        .job = JobId{i + 1}, .pool = "default", .resources = r, .preemptible = i % 5 != 0});
  }
  const control::ScaleRules rules;
  for (auto _ : state) {
    control::ScalePlan plan = control::PlanScaling(templates, nodes, waiting, rules, now);
    benchmark::DoNotOptimize(plan);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AutoscalePlan)->Arg(100)->Arg(1000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace baton
