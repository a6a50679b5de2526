// Properties of placement that must hold for every cluster and every sequence of requests and
// releases: no GPU share or GPU memory is ever promised twice, and a gang is placed whole or
// not at all (a failed placement changes nothing).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <deque>
#include <map>

#include "core/node.h"
#include "sched/placement.h"
#include "sched_harness.h"

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
      s.gpus.push_back(GpuSlot{.index = g,
                               .model = model,
                               .memory_bytes = mem,
                               .free_milli = 1000,
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
void CheckNoOversubscription(const ClusterView& initial, const ClusterView& view,
                             const std::map<int, Live>& live) {
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

RC_GTEST_PROP(PlacementProperty, NeverOversubscribesAndGangsAreWhole, ()) {
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
    std::optional<std::vector<NodeAllocation>> placed = Placer(view).Place(r, PlaceRules{});
    if (!placed) {
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
    RC_ASSERT(static_cast<int>((*placed).size()) == r.nodes);
    std::set<std::string> distinct;
    int64_t total = 0;
    for (const NodeAllocation& a : (*placed)) {
      distinct.insert(a.node);
      total += static_cast<int64_t>(a.gpus.size()) * a.milli_per_gpu;
      if (r.milli_gpus >= 1000)
        RC_ASSERT(static_cast<int64_t>(a.gpus.size()) * 1000 == r.milli_gpus / r.nodes);
      for (int g : a.gpus) {
        const NodeSlots* n = view.FindNode(a.node);
        RC_ASSERT(n != nullptr);
        if (!r.gpu_type.empty())
          RC_ASSERT(n->gpus[static_cast<size_t>(g)].model.starts_with("A100"));
      }
    }
    RC_ASSERT(static_cast<int>(distinct.size()) == r.nodes);
    RC_ASSERT(total == r.milli_gpus);
    live[id] = Live{r, (*placed)};
    CheckNoOversubscription(initial, view, live);
  }
  for (auto& [id, l] : live) view.Apply(l.allocation, l.r, -1);
  RC_ASSERT(view.FreeWholeGpus() == initial.FreeWholeGpus());
}

// Under MPS (NodeSlots::mps) a GPU's fractions are one user's at a time, and the GPU knows whose
// (GpuSlot::sharer) exactly while fractions hold it; other nodes pack anyone's. Placements and
// releases in any order.
RC_GTEST_PROP(PlacementProperty, UnderMpsEachSharedGpuHoldsOneUsersFractions, ()) {
  ClusterView view = RandomCluster();
  for (NodeSlots& n : view.nodes) n.mps = *rc::gen::arbitrary<bool>();
  const std::vector<std::string> users = {"u0", "u1", "u2"};
  struct Held {
    Live live;
    std::string user;
  };
  std::map<int, Held> live;
  const int steps = *rc::gen::inRange(1, 80);
  for (int id = 0; id < steps; ++id) {
    if (!live.empty() && *rc::gen::inRange(0, 3) == 0) {
      auto it = live.begin();
      std::advance(it, *rc::gen::inRange<size_t>(0, live.size()));
      view.Apply(it->second.live.allocation, it->second.live.r, -1, it->second.user);
      live.erase(it);
    }
    Resources r = *rc::gen::inRange(0, 4) == 0 ? RandomRequest() : Resources{};
    if (r.milli_gpus == 0) r.milli_gpus = *rc::gen::inRange(1, 1000);
    const std::string& user = *rc::gen::elementOf(users);
    auto placed = Placer(view).Place(r, PlaceRules{.limits = NodeLimits{.user = user}});
    if (placed) live[id] = Held{Live{r, *placed}, user};
    // Who holds fractions of each GPU, from the live jobs alone.
    std::map<std::pair<std::string, int>, std::set<std::string>> sharers;
    for (const auto& [job, h] : live) {
      for (const NodeAllocation& a : h.live.allocation) {
        if (a.milli_per_gpu >= 1000) continue;
        for (int g : a.gpus) sharers[{a.node, g}].insert(h.user);
      }
    }
    for (const NodeSlots& n : view.nodes) {
      for (const GpuSlot& g : n.gpus) {
        const std::set<std::string>& who = sharers[{n.name, g.index}];
        if (n.mps) RC_ASSERT(who.size() <= 1u);
        if (who.empty()) {
          RC_ASSERT(g.sharer == 0u);
        } else if (n.mps) {
          RC_ASSERT(g.sharer == UserKey(*who.begin()));
        }
      }
    }
  }
}

// A random cluster of 8-GPU nodes, a random policy and a random finite workload whose every
// job fits the empty cluster and its project's limit.
struct World {
  ClusterView view;
  Policy policy;
  std::vector<std::pair<Duration, testing::SimJob>> arrivals;
};

World RandomWorld() {
  World w;
  int nodes = *rc::gen::inRange(2, 5);
  for (int n = 0; n < nodes; ++n) {
    std::string topo = *rc::gen::element<std::string>("nvswitch", "pairs", "cubemesh", "pcie");
    w.view.nodes.push_back(testing::MakeNode("n" + std::to_string(n), 8, "H100-80GB", topo));
  }
  // Sometimes an A100 in MIG mode: 3g.40gb + 2g.20gb + 2 x 1g.10gb instances as devices.
  const bool mig = *rc::gen::arbitrary<bool>();
  if (mig) {
    NodeSlots a100 = testing::MakeNode("mig", 0);
    const char* profiles[] = {"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"};
    for (int i = 0; i < 4; ++i) {
      a100.gpus.push_back(GpuSlot{.index = i,
                                  .model = MigModel("A100-80GB", profiles[i]),
                                  .mig_profile = profiles[i],
                                  .memory_bytes = 10LL << 30,
                                  .free_milli = 1000,
                                  .free_memory_bytes = 10LL << 30,
                                  .island = 9});
    }
    w.view.nodes.push_back(std::move(a100));
  }
  w.policy.backfill = *rc::gen::inRange(0, 4) != 0;
  w.policy.preemption = *rc::gen::inRange(0, 4) != 0;
  w.policy.reservations = *rc::gen::inRange(0, 4);
  w.policy.weights.fairshare = *rc::gen::inRange(0, 10'000);
  w.policy.weights.age = *rc::gen::inRange(0, 10'000);
  w.policy.max_age = std::chrono::hours(*rc::gen::inRange(1, 24));
  w.policy.untimed_reservation = *rc::gen::inRange(0, 4) != 0;
  if (*rc::gen::inRange(0, 3) == 0) {  // least attained service, sometimes with its preemption
    double first = 3600.0 * *rc::gen::inRange(1, 5);
    w.policy.las_thresholds = {first, first * *rc::gen::inRange(2, 6)};
    w.policy.las_preemption = *rc::gen::arbitrary<bool>();
    w.policy.weights.las = *rc::gen::inRange(0, 20'000);
  }
  const std::vector<std::string> projects = {"a", "b", "c"};
  for (const auto& p : projects) {
    ProjectPolicy& pp = w.policy.projects[p];
    pp.share = *rc::gen::inRange(1, 4);
    pp.guaranteed_milli = int64_t{*rc::gen::inRange(0, 3)} * 4000;
    if (*rc::gen::inRange(0, 3) == 0) pp.limit_milli = int64_t{*rc::gen::inRange(16, 25)} * 1000;
  }
  if (*rc::gen::inRange(0, 2) == 0) w.policy.users["u0"].max_jobs = *rc::gen::inRange(1, 4);
  int jobs = *rc::gen::inRange(1, 40);
  for (int i = 0; i < jobs; ++i) {
    testing::SimJob j;
    static const int64_t kShapes[] = {250, 500, 1000, 2000, 4000, 8000, 16000};
    j.r.milli_gpus = kShapes[*rc::gen::inRange(0, 7)];
    j.r.nodes = j.r.milli_gpus == 16000 ? 2 : 1;
    if (j.r.milli_gpus < 1000 && *rc::gen::arbitrary<bool>())
      j.r.gpu_memory_bytes = int64_t{*rc::gen::inRange(1, 40)} << 30;
    if (mig && *rc::gen::inRange(0, 5) == 0) {  // a job for a MIG slice: one or two instances
      j.r = Resources{};
      j.r.milli_gpus = *rc::gen::element<int64_t>(1000, 2000, 500);
      j.r.gpu_type = "1g.10gb";
    }
    j.priority = static_cast<Priority>(*rc::gen::inRange(0, 4));
    j.project = projects[*rc::gen::inRange<size_t>(0, projects.size())];
    j.user = "u" + std::to_string(*rc::gen::inRange(0, 3));
    j.duration = std::chrono::minutes(*rc::gen::inRange(1, 240));
    if (*rc::gen::inRange(0, 3) != 0)
      j.limit = j.duration + std::chrono::minutes(*rc::gen::inRange(0, 60));
    Duration at = std::chrono::minutes(*rc::gen::inRange(0, 600));
    w.arrivals.emplace_back(at, std::move(j));
  }
  return w;
}

struct Outcome {
  std::vector<std::tuple<int64_t, int64_t, int64_t, int>> jobs;  // id, start, end, restarts
  std::vector<std::pair<JobId, JobId>> preemptions;
  std::vector<int> epochs;
  std::vector<std::pair<PreemptReason, TimePoint>> reasons;
  bool operator==(const Outcome&) const = default;
};

Outcome Replay(const World& w, bool check, int explained = kExplainedWaits, bool grouped = false) {
  testing::MiniSim sim(w.view, w.policy);
  sim.explained = explained;
  sim.grouped = grouped;
  if (check) {
    int id = 0;
    for (const auto& [at, j] : w.arrivals) {
      RC_LOG() << "job " << ++id << ": at +" << at.count() / 1000 << "s " << j.r.milli_gpus << "m x"
               << j.r.nodes << " " << j.r.gpu_type << " prio " << static_cast<int>(j.priority)
               << " " << j.project << "/" << j.user << " runs " << j.duration.count() / 1000
               << "s limit " << j.limit.count() / 1000 << "s\n";
    }
  }
  for (const auto& [at, j] : w.arrivals) sim.SubmitAt(sim.now() + at, j);
  bool ended = sim.RunToEnd(20'000, [&](const PassResult& r) {
    if (!check) return;
    // Never oversubscribed: every GPU's share adds up.
    RC_ASSERT(sim.Consistent());
    // Gangs whole: every start has exactly its nodes, each with its even share.
    for (const auto& s : r.starts) {
      const testing::SimJob& j = sim.job(s.id);
      RC_ASSERT(static_cast<int>(s.allocation.size()) == j.r.nodes);
      int64_t total = 0;
      for (const auto& part : s.allocation)
        total += part.milli_per_gpu * static_cast<int64_t>(part.gpus.size());
      if (j.r.milli_gpus > 0) RC_ASSERT(total == j.r.milli_gpus);
    }
    // Limits held.
    std::map<std::string, int64_t> project_milli;
    std::map<std::string, int> user_jobs;
    for (const auto& [id, j] : sim.jobs()) {
      if (!j.started || j.ended) continue;
      project_milli[j.project] += j.r.milli_gpus;
      user_jobs[j.user] += 1;
    }
    for (const auto& [p, milli] : project_milli) {
      int64_t limit = w.policy.Project(p).limit_milli;
      if (limit != kNoLimit) RC_ASSERT(milli <= limit);
    }
    for (const auto& [u, n] : user_jobs) {
      int max = w.policy.User(u).max_jobs;
      if (max >= 0) RC_ASSERT(n <= max);
    }
    for (const auto& p : r.preemptions) {
      const auto& by = sim.job(p.for_job);
      const auto& v = sim.job(p.victim);
      RC_LOG() << "t=" << ToMillis(sim.now()) << " " << PreemptReasonName(p.reason) << ": job "
               << p.for_job.value << " (prio " << static_cast<int>(by.priority) << ", "
               << by.project << ", " << by.r.milli_gpus << ") preempts job " << p.victim.value
               << " (prio " << static_cast<int>(v.priority) << ", " << v.project << ", "
               << v.r.milli_gpus << "); held:";
      for (const auto& [proj, milli] : project_milli) RC_LOG() << " " << proj << "=" << milli;
      RC_LOG() << "\n";
    }
    // A priority preemption always goes down in class; a least-attained-service one goes to a
    // job that has had more GPU-time, by a level at least, and never up in class.
    for (const auto& p : r.preemptions) {
      if (p.reason == PreemptReason::kPriority)
        RC_ASSERT(sim.job(p.victim).priority < sim.job(p.for_job).priority);
      if (p.reason == PreemptReason::kService) {
        RC_ASSERT(w.policy.las_preemption);
        RC_ASSERT(sim.job(p.victim).priority <= sim.job(p.for_job).priority);
        RC_ASSERT(LasLevel(w.policy, sim.Service(sim.job(p.victim))) >
                  LasLevel(w.policy, sim.Service(sim.job(p.for_job))));
      }
    }
  });
  // Every job of a finite workload starts and ends (aging, no deadlock, no livelock).
  if (check) RC_ASSERT(ended);
  Outcome o;
  for (const auto& [id, j] : sim.jobs()) {
    o.jobs.emplace_back(id.value, j.started ? ToMillis(*j.started) : -1,
                        j.ended ? ToMillis(*j.ended) : -1, j.restarts);
  }
  o.preemptions = sim.preemptions();
  o.epochs = sim.preemption_epochs();
  o.reasons = sim.preemption_reasons();
  return o;
}

RC_GTEST_PROP(SchedulerProperty, InvariantsHoldOverWholeWorkloads, ()) {
  World w = RandomWorld();
  Outcome o = Replay(w, true);
  // No preemption cycles: without an outside event in between (a job arriving or ending on
  // its own), never A preempts B and then B preempts A. (Across such events the cluster has
  // changed and the opposite decision may be right; the workload still ends, checked above.)
  // Two exceptions, never in one instant and never both by quota: least attained service
  // time-shares by design (A takes B's GPUs; once A has run past a threshold, B takes A's);
  // and a job that reclaimed its project's guarantee from B becomes a borrower when a higher
  // class job of its own project takes more GPUs, and B, of a higher class, may take them back.
  // Neither repeats: service grows, and the project is now beyond its guarantee.
  std::map<std::tuple<int, JobId, JobId>, std::vector<size_t>> seen;
  for (size_t i = 0; i < o.preemptions.size(); ++i) {
    seen[{o.epochs[i], o.preemptions[i].first, o.preemptions[i].second}].push_back(i);
  }
  for (const auto& [key, ours] : seen) {
    auto [epoch, by, victim] = key;
    auto back = seen.find({epoch, victim, by});
    if (back == seen.end()) continue;
    for (size_t i : ours) {
      for (size_t j : back->second) {
        RC_ASSERT(o.reasons[i].second != o.reasons[j].second);
        PreemptReason a = o.reasons[i].first;
        PreemptReason b = o.reasons[j].first;
        RC_ASSERT((a == PreemptReason::kService && b == PreemptReason::kService) ||
                  (a == PreemptReason::kQuota && b == PreemptReason::kPriority) ||
                  (a == PreemptReason::kPriority && b == PreemptReason::kQuota));
      }
    }
  }
}

RC_GTEST_PROP(SchedulerProperty, SameInputsGiveTheSameDecisions, ()) {
  World w = RandomWorld();
  RC_ASSERT(Replay(w, false) == Replay(w, false));
}

// Reasons are words only: passes that explain fewer waiting jobs, or none (as the simulator's
// full passes), and so stop walking sooner, start, stop and preempt the same jobs at the same
// instants as passes that explain them all.
RC_GTEST_PROP(SchedulerProperty, ExplainingFewerWaitsChangesNoDecision, ()) {
  World w = RandomWorld();
  const int explained = *rc::gen::inRange(0, 6);
  RC_ASSERT(Replay(w, false, explained) == Replay(w, false));
}

// A pass that is not full (the controller's head passes, between full ones) keeps the last full
// pass's reservations in its view. Explaining no waiting job (the simulator's), it stops walking
// as soon as no job left could start: it must still start the same jobs as one that explains
// them all, the jobs that GPUs held from now on are for among them.
RC_GTEST_PROP(SchedulerProperty, APassThatIsNotFullStartsTheSameExplainingNoWait, ()) {
  World w = RandomWorld();
  testing::MiniSim sim(w.view, w.policy);
  for (const auto& [at, j] : w.arrivals) sim.SubmitAt(sim.now() + at, j);
  sim.RunToEnd(*rc::gen::inRange(1, 30));  // full passes, then time to the next event
  testing::MiniSim quiet = sim;
  quiet.explained = 0;
  PassResult said = sim.Pass(false);
  PassResult unsaid = quiet.Pass(false);
  RC_ASSERT(said.starts.size() == unsaid.starts.size());
  for (size_t i = 0; i < said.starts.size(); ++i) {
    RC_ASSERT(said.starts[i].id == unsaid.starts[i].id);
    RC_ASSERT(said.starts[i].allocation == unsaid.starts[i].allocation);
  }
}

// Two passes started the same jobs on the same GPUs and left the same jobs waiting, for the
// same reasons in the same words.
void AssertSameStartsAndWaits(const PassResult& a, const PassResult& b, TimePoint now) {
  RC_ASSERT(a.starts.size() == b.starts.size());
  for (size_t i = 0; i < a.starts.size(); ++i) {
    RC_ASSERT(a.starts[i].id == b.starts[i].id);
    RC_ASSERT(a.starts[i].allocation == b.starts[i].allocation);
  }
  RC_ASSERT(a.waits.size() == b.waits.size());
  for (size_t i = 0; i < a.waits.size(); ++i) {
    RC_ASSERT(a.waits[i].id == b.waits[i].id);
    RC_ASSERT(a.waits[i].reason == b.waits[i].reason);
    RC_ASSERT(a.Detail(a.waits[i], now) == b.Detail(b.waits[i], now));
  }
}

// A full pass given the queue, which merges its groups' heads as far as it walks, decides as
// one given every waiting job and ordering them all, over whole workloads (fair share, age,
// least-attained-service levels that requeued jobs change, claims by preemption).
RC_GTEST_PROP(SchedulerProperty, APassGivenTheQueuesGroupsDecidesAsOneGivenEveryJob, ()) {
  World w = RandomWorld();
  const int explained = *rc::gen::element(0, 3, kExplainedWaits);
  RC_ASSERT(Replay(w, false, explained, true) == Replay(w, false, explained, false));
}

// A queue of many kinds of job whose submit times need not rise with their ids (a clock set
// back), on nodes partly held by running jobs (with and without time limits, of every class
// and level): a full pass given the queue, which also drops the groups whose jobs left would
// only be counted, decides and explains as one given every job; and the order the queue then
// makes of the rest is the whole order of the latter, jobs that left since (started,
// cancelled) included. Some waiting jobs have time limits, some avoid a node, some are root's
// where a node refuses root's jobs.
RC_GTEST_PROP(SchedulerProperty, AGroupedPassAndTheOrderItLeavesAreThoseOfTheWholeQueue, ()) {
  const TimePoint now = testing::kPassNow;
  Policy policy;
  policy.backfill = *rc::gen::arbitrary<bool>();
  policy.preemption = *rc::gen::arbitrary<bool>();
  policy.untimed_reservation = *rc::gen::inRange(0, 4) != 0;
  policy.reservations = *rc::gen::inRange(0, 4);
  policy.weights = Weights{.priority = static_cast<double>(*rc::gen::inRange(0, 3)) * 5'000,
                           .fairshare = static_cast<double>(*rc::gen::inRange(0, 3)) * 5'000,
                           .age = static_cast<double>(*rc::gen::inRange(0, 3)) * 500,
                           .size = static_cast<double>(*rc::gen::inRange(0, 2)) * 1'000,
                           .las = 0};
  policy.max_age = std::chrono::hours(*rc::gen::inRange(1, 48));
  if (*rc::gen::arbitrary<bool>()) {
    policy.las_thresholds = {3600, 36'000};
    policy.weights.las = 1'000;
    policy.las_preemption = *rc::gen::arbitrary<bool>();
  }
  if (*rc::gen::arbitrary<bool>()) policy.projects["b"].guaranteed_milli = 8000;
  ClusterView view;
  for (int n = 0; n < *rc::gen::inRange(1, 4); ++n) {
    view.nodes.push_back(testing::MakeNode("n" + std::to_string(n), 8, "H100-80GB", "nvswitch",
                                           n % 2 == 0 ? "default" : "p2"));
    view.nodes.back().refuses_root_jobs = *rc::gen::inRange(0, 4) == 0;
  }
  // Running jobs: on each node, a few runs of its GPUs.
  const std::vector<std::string> projects = {"a", "b"}, users = {"u0", "u1", "root"},
                                 pools = {"default", "p2"};
  std::deque<Resources> held;
  std::deque<std::vector<NodeAllocation>> allocations;
  std::vector<RunningJob> running;
  for (const NodeSlots& node : view.nodes) {
    for (int first = 0; first < 8;) {
      const int count = *rc::gen::inRange(1, 9 - first);
      if (*rc::gen::arbitrary<bool>()) {
        held.push_back(Resources{.milli_gpus = count * 1000});
        NodeAllocation part{.node = node.name};
        for (int g = first; g < first + count; ++g) part.gpus.push_back(g);
        allocations.push_back({part});
        const TimePoint started = now - std::chrono::minutes(*rc::gen::inRange(1, 600));
        running.push_back(RunningJob{
            .id = JobId{10'000 + static_cast<int64_t>(running.size())},
            .resources = &held.back(),
            .allocation = &allocations.back(),
            .priority = static_cast<Priority>(*rc::gen::inRange(0, 4)),
            .project = &projects[*rc::gen::inRange<size_t>(0, projects.size())],
            .user = &users[*rc::gen::inRange(0, 2)],
            .pool = &node.pool,
            .started = started,
            .expected_end = *rc::gen::arbitrary<bool>()
                                ? started + std::chrono::minutes(*rc::gen::inRange(600, 900))
                                : kNever,
            .last_checkpoint = started,
            .service = *rc::gen::element(0.0, 3600.0, 50'000.0)});
        view.Apply(allocations.back(), held.back(), +1);
      }
      first += count;
    }
  }
  UsageLedger usage;
  usage.Advance(now - std::chrono::hours(2));
  usage.AddPast("a", "u0", *rc::gen::inRange(0, 8000), now - std::chrono::hours(2),
                now - std::chrono::hours(1));
  usage.AddPast("b", "u1", *rc::gen::inRange(0, 8000), now - std::chrono::hours(2),
                now - std::chrono::hours(1));
  usage.Advance(now);

  const int n = *rc::gen::inRange(1, 300);
  std::map<int64_t, Job> jobs;
  std::vector<PendingJob> records;
  for (int64_t id = 1; id <= n; ++id) {
    Job& j = jobs[id];
    j.id = JobId{id};
    j.spec.priority = static_cast<Priority>(*rc::gen::inRange(0, 4));
    j.spec.project = *rc::gen::elementOf(projects);
    j.user = users[*rc::gen::inRange(0, 10) == 0 ? 2 : *rc::gen::inRange(0, 2)];
    if (*rc::gen::inRange(0, 4) == 0)
      j.spec.time_limit = std::chrono::minutes(*rc::gen::inRange(1, 900));
    if (*rc::gen::inRange(0, 10) == 0) j.launch_failed_on = {"n0"};
    j.spec.pool = *rc::gen::elementOf(pools);
    j.spec.resources.milli_gpus = *rc::gen::element<int64_t>(500, 1000, 2000, 8000, 16000);
    j.spec.resources.nodes = j.spec.resources.milli_gpus == 16000 ? 2 : 1;
    // Mostly in submit order, sometimes not.
    j.submitted_at = now - std::chrono::minutes(*rc::gen::inRange(0, 3) == 0
                                                    ? *rc::gen::inRange(0, 3000)
                                                    : 3000 - id * 10 + *rc::gen::inRange(0, 3));
    j.gpu_seconds = *rc::gen::element(0.0, 3600.0, 50'000.0);
    records.push_back(JobQueue::PendingRecord(j));
  }
  JobQueue queue;
  queue.SetLevels(policy.las_thresholds);
  for (const PendingJob& r : records) queue.Add(jobs.at(r.id.value), r);
  // Some leave before the pass: blanks in their groups.
  std::vector<PendingJob> waiting;
  for (const PendingJob& r : records) {
    if (*rc::gen::inRange(0, 5) == 0) {
      queue.Remove(jobs.at(r.id.value));
    } else {
      waiting.push_back(r);
    }
  }
  const int explained = *rc::gen::element(0, 5, kExplainedWaits);
  auto pass = [&](bool grouped) {
    PassInput in{.view = view, .running = running, .usage = &usage, .policy = &policy, .now = now};
    in.explained = explained;
    if (grouped) {
      in.queue = &queue;
    } else {
      in.pending = waiting;
    }
    return RunPass(std::move(in));
  };
  const PassResult whole = pass(false);
  PassResult merged = pass(true);
  AssertSameStartsAndWaits(merged, whole, now);
  RC_ASSERT(merged.reservations.size() == whole.reservations.size());
  for (size_t i = 0; i < whole.reservations.size(); ++i) {
    RC_ASSERT(merged.reservations[i].id == whole.reservations[i].id);
    RC_ASSERT(merged.reservations[i].from == whole.reservations[i].from);
  }
  // The orders: the whole pass's, its rest sorted when asked; the grouped one's, made of the
  // groups when asked, after the started jobs and a few others left.
  JobQueue reference;
  reference.Ordered(std::move(whole.order), whole.sorted, false);
  queue.OrderedHead(std::move(merged.order), merged.sorted, merged.rest, now, policy);
  for (const Start& s : merged.starts) queue.Remove(jobs.at(s.id.value));
  for (const PendingJob& r : waiting) {
    if (*rc::gen::inRange(0, 8) == 0) queue.Remove(jobs.at(r.id.value));
  }
  const std::vector<QueueEntry>& ours = queue.order();
  const std::vector<QueueEntry>& theirs = reference.order();
  RC_ASSERT(ours.size() == theirs.size());
  for (size_t i = 0; i < ours.size(); ++i) {
    RC_ASSERT(ours[i].id == theirs[i].id);
    RC_ASSERT(ours[i].factors.score == theirs[i].factors.score);
  }
}

// A pass in strict order by class (no backfill, no score but the class) given only the head of
// the queue, as the controller gives it (Controller::HeadIsEnough), decides as one given the
// whole queue whenever it does not ask for more; and asks for more only when it walked all it
// was given.
RC_GTEST_PROP(SchedulerProperty, InStrictOrderTheHeadOfTheQueueDecidesAsTheWholeQueue, ()) {
  Policy policy;
  policy.backfill = false;
  policy.preemption = false;
  const bool by_class = *rc::gen::arbitrary<bool>();
  policy.weights =
      Weights{.priority = by_class ? 10'000.0 : 0.0, .fairshare = 0, .age = 0, .size = 0};
  const int n = *rc::gen::inRange(1, 700);
  std::vector<Resources> resources(static_cast<size_t>(n));
  const std::string project = "a", user = "u", pool = "default";
  std::vector<PendingJob> pending;
  for (int i = 0; i < n; ++i) {
    resources[static_cast<size_t>(i)] = RandomRequest();
    pending.push_back(PendingJob{
        .id = JobId{i + 1},
        .resources = &resources[static_cast<size_t>(i)],
        .priority = by_class ? static_cast<Priority>(*rc::gen::inRange(0, 4)) : Priority::kNormal,
        .project = &project,
        .user = &user,
        .pool = &pool,
        .submitted = testing::kPassNow});
  }
  // Queue order: class, then submit order.
  std::stable_sort(pending.begin(), pending.end(), [](const PendingJob& a, const PendingJob& b) {
    return a.priority > b.priority;
  });
  const ClusterView view = RandomCluster();
  auto run = [&](size_t head) {
    PassInput in{.view = view, .policy = &policy, .now = testing::kPassNow};
    in.pending.assign(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(head));
    in.partial = head < pending.size();
    return RunPass(std::move(in));
  };
  const PassResult whole = run(pending.size());
  RC_ASSERT(!whole.wanted_more);
  const size_t head = *rc::gen::inRange<size_t>(1, pending.size() + 1);
  const PassResult part = run(head);
  if (part.wanted_more) {
    RC_ASSERT(head < pending.size());
    return;
  }
  AssertSameStartsAndWaits(part, whole, testing::kPassNow);
}

}  // namespace
}  // namespace baton::sched
