#include "sched/preemption.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "sched/ordering.h"

namespace baton::sched {
namespace {

double Seconds(Duration d) { return static_cast<double>(d.count()) / 1000.0; }

// One node's part of a preemption plan: the victims there and where the job would go.
struct Plan {
  double loss = 0;
  std::vector<size_t> victims;
  NodeAllocation part;
  int node = 0;
};

// A node's candidates (by loss per GPU, ascending: `count` of Candidates::flat from `begin`)
// and the lower bound of phase 1.
struct NodeCands {
  double bound = 0;
  int node = 0;
  uint32_t begin = 0;
  uint32_t count = 0;
};
// The nodes where a search's candidates make room, with every node's candidates in one array
// (not one allocation per node).
struct Candidates {
  std::vector<NodeCands> nodes;
  std::vector<uint32_t> flat;
};

// One search, for one waiting job.
class Search {
 public:
  Search(const PendingJob& job, VictimSearch& ctx)
      : job_(job),
        r_(*job.resources),
        ctx_(ctx),
        in_(ctx.in),
        policy_(ctx.policy),
        per_node_(r_.milli_gpus / r_.nodes),
        reclaim_(ctx.held.Project(*job.project) + r_.milli_gpus <=
                 ctx.policy.Project(*job.project).guaranteed_milli),
        level_(ctx.policy.las_preemption ? LasLevel(ctx.policy, job.service) : 0),
        any_{.pool = *job.pool,
             .limits = job.Limits(),
             .until = job.time_limit > Duration(0)
                          ? ctx.now + ctx.policy.preempt_grace + job.time_limit
                          : kNever,
             .job = job.id} {}

  std::optional<Claim> Run();

 private:
  bool Eligible(size_t v) const;
  // What a running job's project holds and is guaranteed: looked up once per account in a
  // search, not once per candidate (two lookups by name each).
  struct ProjectTerms {
    int64_t held = 0;
    int64_t guaranteed = 0;
    bool known = false;  // looked up
  };
  ProjectTerms TermsOf(const RunningJob& x) const;
  void IndexRunningByNode();
  // GPU-seconds lost if `v` stops now: since its last checkpoint.
  double Loss(size_t v) const;
  double PerGpu(size_t v) const;
  // Whether part `p` of running job `v`'s allocation is on node `ni`, named `name`: its first
  // part by the index its record knows, without comparing names.
  bool PartOn(size_t v, size_t p, int ni, const std::string& name) const {
    const RunningJob& x = in_.running[v];
    if (p == 0 && x.first_node >= 0) return x.first_node == ni;
    return (*x.allocation)[p].node == name;
  }
  Candidates CandidateNodes() const;
  std::optional<Plan> PlanOnNode(const NodeCands& nc, const std::vector<uint32_t>& flat) const;
  bool KeepsGuarantees(const Claim& claim) const;

  const PendingJob& job_;
  const Resources& r_;
  VictimSearch& ctx_;
  const PassInput& in_;
  const Policy& policy_;
  const int64_t per_node_;
  const bool reclaim_;  // the job's project is under its guarantee
  const int level_;     // its LAS level (policy.las_preemption)
  const PlaceRules any_;
  mutable std::vector<ProjectTerms> by_account_;  // TermsOf's answers, by RunningJob::account
  mutable NodeSlots scratch_;                     // PlanOnNode's copy of its node
};

Search::ProjectTerms Search::TermsOf(const RunningJob& x) const {
  auto look = [&] {
    return ProjectTerms{ctx_.held.Project(*x.project), policy_.Project(*x.project).guaranteed_milli,
                        true};
  };
  if (x.account < 0) return look();
  const auto a = static_cast<size_t>(x.account);
  if (a >= by_account_.size()) by_account_.resize(a + 1);
  if (!by_account_[a].known) by_account_[a] = look();
  return by_account_[a];
}

bool Search::Eligible(size_t v) const {
  const RunningJob& x = in_.running[v];
  if (!x.preemptible || ctx_.stopping[v] || (x.pool != job_.pool && *x.pool != *job_.pool))
    return false;
  bool same_project = x.project == job_.project || *x.project == *job_.project;
  const ProjectTerms terms = TermsOf(x);
  int64_t left = terms.held - x.resources->milli_gpus;
  bool borrowed = left >= terms.guaranteed;
  if (x.priority < job_.priority && (same_project || borrowed)) return true;
  // Least attained service: a job that has had more GPU-time yields to one that has had less
  // (never to a lower class).
  if (policy_.las_preemption && x.priority <= job_.priority && (same_project || borrowed) &&
      ctx_.levels[v] > level_ && LasBudgetLeft(policy_, x)) {
    return true;
  }
  return reclaim_ && !same_project && borrowed;
}

void Search::IndexRunningByNode() {
  auto& on_node = ctx_.running_on_node;
  if (!on_node.empty()) return;
  on_node.resize(ctx_.placer.view().nodes.size());
  for (size_t v = 0; v < in_.running.size(); ++v) {
    const RunningJob& x = in_.running[v];
    for (size_t p = 0; p < x.allocation->size(); ++p) {
      int ni = p == 0 && x.first_node >= 0 ? x.first_node
                                           : ctx_.placer.NodeIndex((*x.allocation)[p].node);
      if (ni >= 0) on_node[ni].push_back(static_cast<uint32_t>(v));
    }
  }
}

double Search::Loss(size_t v) const {
  const RunningJob& x = in_.running[v];
  TimePoint since = std::max(x.started, x.last_checkpoint);
  return static_cast<double>(x.resources->milli_gpus) / 1000.0 *
         std::max(0.0, Seconds(ctx_.now - since));
}

double Search::PerGpu(size_t v) const {
  return Loss(v) / static_cast<double>(std::max<int64_t>(in_.running[v].resources->milli_gpus, 1));
}

Candidates Search::CandidateNodes() const {
  Candidates found;
  std::vector<NodeCands>& nodes = found.nodes;
  const auto& slots = ctx_.placer.view().nodes;
  // A node's eligible candidates with their loss per GPU, worked out once each rather than at
  // every comparison of the sort; a NodeCands is made only for a node where they make room.
  struct Cand {
    double per_gpu;
    JobId id;
    uint32_t v;
  };
  std::vector<Cand> cands;
  for (size_t ni = 0; ni < slots.size(); ++ni) {
    const NodeSlots& node = slots[ni];
    if (!node.schedulable || node.pool != *job_.pool) continue;
    cands.clear();
    for (uint32_t v : ctx_.running_on_node[ni]) {
      if (Eligible(v)) cands.push_back(Cand{PerGpu(v), in_.running[v].id, v});
    }
    if (r_.nodes == 1 && cands.empty()) continue;  // it would have started already
    const int64_t free_here = ctx_.placer.node_free_milli(static_cast<int>(ni));
    std::sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
      return a.per_gpu != b.per_gpu ? a.per_gpu < b.per_gpu : a.id < b.id;
    });
    int64_t missing = std::max<int64_t>(0, per_node_ - free_here);
    double bound = 0;
    for (const Cand& c : cands) {
      if (missing <= 0) break;
      int64_t here = 0;
      const std::vector<NodeAllocation>& parts = *in_.running[c.v].allocation;
      for (size_t p = 0; p < parts.size(); ++p) {
        if (PartOn(c.v, p, static_cast<int>(ni), node.name))
          here += parts[p].milli_per_gpu * static_cast<int64_t>(parts[p].gpus.size());
      }
      int64_t used = std::min(here, missing);
      bound += c.per_gpu * static_cast<double>(used);
      missing -= used;
    }
    if (missing > 0) continue;  // not even every candidate makes room here
    nodes.push_back(NodeCands{.bound = bound,
                              .node = static_cast<int>(ni),
                              .begin = static_cast<uint32_t>(found.flat.size()),
                              .count = static_cast<uint32_t>(cands.size())});
    for (const Cand& c : cands) found.flat.push_back(c.v);
  }
  std::sort(nodes.begin(), nodes.end(), [](const NodeCands& a, const NodeCands& b) {
    return a.bound != b.bound ? a.bound < b.bound : a.node < b.node;
  });
  return found;
}

std::optional<Plan> Search::PlanOnNode(const NodeCands& nc,
                                       const std::vector<uint32_t>& flat) const {
  const NodeSlots& node = ctx_.placer.view().nodes[nc.node];
  // Reservations stand: they belong to jobs ahead of this one (or to claims), so the
  // claimer may take such GPUs only if it ends before the reservation begins.
  NodeSlots& scratch = scratch_;  // a copy of the node, into the last one's buffers
  scratch = node;
  Plan plan;
  plan.node = nc.node;
  auto fit = FitOnNodeSlots(scratch, r_, any_, per_node_);
  auto release = [&](size_t v, int sign) {
    const std::vector<NodeAllocation>& parts = *in_.running[v].allocation;
    for (size_t p = 0; p < parts.size(); ++p) {
      if (PartOn(v, p, nc.node, node.name))
        ApplyPart(scratch, parts[p], *in_.running[v].resources, -sign, in_.running[v].User());
    }
  };
  for (size_t k = nc.begin; !fit && k < nc.begin + nc.count; ++k) {
    release(flat[k], +1);
    plan.victims.push_back(flat[k]);
    fit = FitOnNodeSlots(scratch, r_, any_, per_node_);
  }
  if (!fit) return std::nullopt;
  // Drop victims not needed after all, the costliest first.
  std::vector<size_t> chosen = plan.victims;
  std::sort(chosen.begin(), chosen.end(), [&](size_t a, size_t b) { return Loss(a) > Loss(b); });
  for (size_t v : chosen) {
    release(v, -1);
    if (auto still = FitOnNodeSlots(scratch, r_, any_, per_node_)) {
      fit = std::move(still);
      std::erase(plan.victims, v);
    } else {
      release(v, +1);
    }
  }
  for (size_t v : plan.victims) plan.loss += Loss(v);
  plan.part = std::move(*fit);
  return plan;
}

bool Search::KeepsGuarantees(const Claim& claim) const {
  std::unordered_map<std::string, int64_t> from_project;
  for (size_t v : claim.victims) {
    const RunningJob& x = in_.running[v];
    if (*x.project != *job_.project) from_project[*x.project] += x.resources->milli_gpus;
  }
  for (const auto& [p, milli] : from_project) {
    if (ctx_.held.Project(p) - milli < policy_.Project(p).guaranteed_milli) return false;
  }
  return true;
}

std::optional<Claim> Search::Run() {
  IndexRunningByNode();
  std::vector<Plan> plans;
  std::vector<double> losses;
  const Candidates candidates = CandidateNodes();
  for (const NodeCands& nc : candidates.nodes) {
    if (static_cast<int>(plans.size()) >= r_.nodes) {
      // No better plan on this node than the worst of the r_.nodes best kept: stop.
      losses.clear();
      for (const Plan& p : plans) losses.push_back(p.loss);
      std::nth_element(losses.begin(), losses.begin() + (r_.nodes - 1), losses.end());
      if (nc.bound >= losses[r_.nodes - 1]) break;
    }
    if (std::optional<Plan> plan = PlanOnNode(nc, candidates.flat))
      plans.push_back(std::move(*plan));
  }
  std::sort(plans.begin(), plans.end(), [](const Plan& a, const Plan& b) {
    if (a.loss != b.loss) return a.loss < b.loss;
    if (a.victims.size() != b.victims.size()) return a.victims.size() < b.victims.size();
    return a.node < b.node;
  });
  if (static_cast<int>(plans.size()) < r_.nodes) return std::nullopt;
  Claim found{
      .reservation = Reservation{
          .id = job_.id, .from = ctx_.now + policy_.preempt_grace, .resources = r_, .claim = true}};
  for (int k = 0; k < r_.nodes; ++k) {
    found.victims.insert(plans[k].victims.begin(), plans[k].victims.end());
    found.reservation.allocation.push_back(plans[k].part);
  }
  if (found.victims.empty() || !KeepsGuarantees(found)) return std::nullopt;
  return found;
}

}  // namespace

std::optional<Claim> SearchVictims(const PendingJob& job, VictimSearch& ctx) {
  return Search(job, ctx).Run();
}

PreemptReason WhyPreempted(const RunningJob& victim, const PendingJob& job, const Policy& policy) {
  if (victim.priority < job.priority) return PreemptReason::kPriority;
  const bool by_service = policy.las_preemption && victim.priority <= job.priority &&
                          LasLevel(policy, victim.service) > LasLevel(policy, job.service);
  return by_service ? PreemptReason::kService : PreemptReason::kQuota;
}

}  // namespace baton::sched
