#include "sched/scheduler.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <set>
#include <string_view>
#include <unordered_map>

#include "core/quantity.h"
#include "sched/placement.h"
#include "sched/reservations.h"

namespace baton::sched {
namespace {

double Seconds(Duration d) { return static_cast<double>(d.count()) / 1000.0; }

std::string Gpus(int64_t milli) { return FormatMilli(milli) + (milli == 1000 ? " GPU" : " GPUs"); }

std::string Ahead(int n) {
  if (n <= 0) return "";
  return "; " + std::to_string(n) + (n == 1 ? " job" : " jobs") + " ahead in the queue";
}

std::string When(TimePoint at, TimePoint now) {
  if (at <= now) return "; expected to start now";
  return "; expected start in ~" +
         FormatDuration(std::chrono::duration_cast<std::chrono::seconds>(
             at - now + std::chrono::milliseconds(999))) +
         " (" + FormatRfc3339(at).substr(11, 5) + " UTC)";
}

// What the running jobs hold, by project, user and pool+user, kept up to date in a pass. Keys
// are views of the jobs' own strings, which outlive the pass. Per-user counts are kept only
// when the policy limits users: a pass adds every running job, and most clusters set none.
struct Holdings {
  explicit Holdings(const Policy& policy) {
    auto limits = [](const UserPolicy& u) { return u.max_milli != kNoLimit || u.max_jobs >= 0; };
    track_users = limits(policy.default_user);
    for (const auto& [name, u] : policy.users) track_users |= limits(u);
    for (const auto& [name, p] : policy.pools) track_pool_users |= p.max_milli_per_user != kNoLimit;
  }
  bool track_users = false;
  bool track_pool_users = false;
  std::unordered_map<std::string_view, int64_t> project_milli;
  std::unordered_map<std::string_view, int64_t> user_milli;
  std::unordered_map<std::string_view, int> user_jobs;
  std::unordered_map<std::string_view, std::unordered_map<std::string_view, int64_t>>
      pool_user_milli;

  void Add(const std::string& project, const std::string& user, const std::string& pool,
           int64_t milli, int sign) {
    project_milli[project] += sign * milli;
    if (track_users) {
      user_milli[user] += sign * milli;
      user_jobs[user] += sign;
    }
    if (track_pool_users) pool_user_milli[pool][user] += sign * milli;
  }
  int64_t Project(const std::string& p) const {
    auto it = project_milli.find(p);
    return it == project_milli.end() ? 0 : it->second;
  }
  int64_t PoolUser(const std::string& pool, const std::string& user) const {
    auto it = pool_user_milli.find(pool);
    if (it == pool_user_milli.end()) return 0;
    auto u = it->second.find(user);
    return u == it->second.end() ? 0 : u->second;
  }
};

// Why `job` may not start now whatever the free GPUs: a quota or limit; "" when none.
std::string LimitReason(const PendingJob& job, const Policy& policy, const Holdings& h) {
  const int64_t need = job.resources->milli_gpus;
  const ProjectPolicy& project = policy.Project(*job.project);
  if (project.limit_milli != kNoLimit) {
    int64_t held = h.Project(*job.project);
    if (held + need > project.limit_milli) {
      return "project " + *job.project + " holds " + Gpus(held) + " of its limit of " +
             Gpus(project.limit_milli);
    }
  }
  const UserPolicy& user = policy.User(*job.user);
  if (user.max_milli != kNoLimit) {
    auto it = h.user_milli.find(*job.user);
    int64_t held = it == h.user_milli.end() ? 0 : it->second;
    if (held + need > user.max_milli) {
      return "user " + *job.user + " holds " + Gpus(held) + " of a limit of " +
             Gpus(user.max_milli);
    }
  }
  if (user.max_jobs >= 0) {
    auto it = h.user_jobs.find(*job.user);
    int held = it == h.user_jobs.end() ? 0 : it->second;
    if (held + 1 > user.max_jobs) {
      return "user " + *job.user + " runs " + std::to_string(held) + " of a limit of " +
             std::to_string(user.max_jobs) + " jobs";
    }
  }
  if (const PoolPolicy* pool = policy.Pool(*job.pool)) {
    if (pool->max_milli_per_user != kNoLimit) {
      int64_t held = h.PoolUser(*job.pool, *job.user);
      if (held + need > pool->max_milli_per_user) {
        return "user " + *job.user + " holds " + Gpus(held) + " in pool " + *job.pool +
               " of a limit of " + Gpus(pool->max_milli_per_user);
      }
    }
  }
  return "";
}

// What a preemption search reads of the pass it runs in.
struct VictimSearch {
  const PassInput& in;
  const Policy& policy;
  TimePoint now;
  const Holdings& held;
  const std::vector<bool>& stopping;
  Placer& placer;
  std::vector<std::vector<uint32_t>>& running_on_node;  // built at the first search
};

struct Claim {
  std::set<size_t> victims;  // indices into the pass's running jobs
  Reservation reservation;   // on the GPUs they give back
};

// Preemption for `job`: per node, its candidate victims (a lower class, or borrowing beyond a
// guarantee this job's project may reclaim) released cheapest lost work per GPU first until
// the job fits, then pruned; the cheapest nodes win. Nothing when no set frees enough room
// within the rules.
std::optional<Claim> SearchVictims(const PendingJob& job, VictimSearch& ctx) {
  const PassInput& in = ctx.in;
  const Policy& policy = ctx.policy;
  const TimePoint now = ctx.now;
  const Holdings& held = ctx.held;
  const std::vector<bool>& stopping = ctx.stopping;
  Placer& placer = ctx.placer;
  std::vector<std::vector<uint32_t>>& running_on_node = ctx.running_on_node;
  const Resources& r = *job.resources;
  // Candidates: running jobs not already stopping, in this pool, of a lower class, or
  // borrowing beyond their project's guarantee while this job's project is under its own.
  const ProjectPolicy& mine = policy.Project(*job.project);
  const bool reclaim = held.Project(*job.project) + r.milli_gpus <= mine.guaranteed_milli;
  // A job its project needs to stay within its guarantee is protected: only a job of a
  // higher class in the same project may take its GPUs. Without this, a high-priority
  // borrower and a reclaiming owner would preempt each other in turn.
  auto eligible = [&](size_t v) {
    const RunningJob& x = in.running[v];
    if (stopping[v] || *x.pool != *job.pool) return false;
    bool same_project = *x.project == *job.project;
    int64_t left = held.Project(*x.project) - x.resources->milli_gpus;
    bool borrowed = left >= policy.Project(*x.project).guaranteed_milli;
    if (x.priority < job.priority && (same_project || borrowed)) return true;
    // Least attained service: a job that has had more GPU-time yields to one that has had less
    // (never to a lower class).
    if (policy.las_preemption && x.priority <= job.priority && (same_project || borrowed) &&
        LasLevel(policy, x.service) > LasLevel(policy, job.service)) {
      return true;
    }
    return reclaim && !same_project && borrowed;
  };
  // Per node: victims there, cheapest lost work per GPU first, until the job fits.
  if (running_on_node.empty()) {
    running_on_node.resize(placer.view().nodes.size());
    for (size_t v = 0; v < in.running.size(); ++v) {
      for (const auto& part : *in.running[v].allocation) {
        int ni = placer.NodeIndex(part.node);
        if (ni >= 0) running_on_node[ni].push_back(static_cast<uint32_t>(v));
      }
    }
  }
  auto loss = [&](size_t v) {
    const RunningJob& x = in.running[v];
    TimePoint since = std::max(x.started, x.last_checkpoint);
    return static_cast<double>(x.resources->milli_gpus) / 1000.0 *
           std::max(0.0, Seconds(now - since));
  };
  struct Plan {
    double loss = 0;
    std::vector<size_t> victims;
    NodeAllocation part;
    int node = 0;
  };
  std::vector<Plan> plans;
  const int64_t per_node = r.milli_gpus / r.nodes;
  PlaceRules any{
      .pool = *job.pool,
      .until = job.time_limit > Duration(0) ? now + policy.preempt_grace + job.time_limit : kNever,
      .job = job.id};
  // Phase 1, cheap: per node, the candidates and a lower bound on the work lost to free
  // room there (the fractional cover: victims by loss per GPU, the last one in part).
  struct NodeCands {
    double bound = 0;
    int node = 0;
    std::vector<size_t> cands;  // by loss per GPU, ascending
  };
  std::vector<NodeCands> nodes;
  auto per_gpu = [&](size_t v) {
    return loss(v) / static_cast<double>(std::max<int64_t>(in.running[v].resources->milli_gpus, 1));
  };
  for (size_t ni = 0; ni < placer.view().nodes.size(); ++ni) {
    const NodeSlots& node = placer.view().nodes[ni];
    if (!node.schedulable || node.pool != *job.pool) continue;
    NodeCands nc;
    nc.node = static_cast<int>(ni);
    for (uint32_t v : running_on_node[ni]) {
      if (eligible(v)) nc.cands.push_back(v);
    }
    if (r.nodes == 1 && nc.cands.empty()) continue;  // it would have started already
    int64_t free_here = 0;
    for (const auto& g : node.gpus) free_here += g.usable ? g.free_milli : 0;
    std::sort(nc.cands.begin(), nc.cands.end(), [&](size_t a, size_t b) {
      double la = per_gpu(a), lb = per_gpu(b);
      return la != lb ? la < lb : in.running[a].id < in.running[b].id;
    });
    int64_t missing = std::max<int64_t>(0, per_node - free_here);
    for (size_t v : nc.cands) {
      if (missing <= 0) break;
      int64_t here = 0;
      for (const auto& part : *in.running[v].allocation) {
        if (part.node == node.name)
          here += part.milli_per_gpu * static_cast<int64_t>(part.gpus.size());
      }
      int64_t used = std::min(here, missing);
      nc.bound += per_gpu(v) * static_cast<double>(used);
      missing -= used;
    }
    if (missing > 0) continue;  // not even every candidate makes room here
    nodes.push_back(std::move(nc));
  }
  std::sort(nodes.begin(), nodes.end(), [](const NodeCands& a, const NodeCands& b) {
    return a.bound != b.bound ? a.bound < b.bound : a.node < b.node;
  });
  // Phase 2, exact: release candidates in that order until the job fits (topology and
  // all), then drop the ones not needed; stop once no remaining node can do better.
  for (NodeCands& nc : nodes) {
    if (static_cast<int>(plans.size()) >= r.nodes) {
      std::vector<double> losses;
      for (const Plan& p : plans) losses.push_back(p.loss);
      std::nth_element(losses.begin(), losses.begin() + (r.nodes - 1), losses.end());
      if (nc.bound >= losses[r.nodes - 1]) break;
    }
    const NodeSlots& node = placer.view().nodes[nc.node];
    // Reservations stand: they belong to jobs ahead of this one (or to claims), so the
    // claimer may take such GPUs only if it ends before the reservation begins.
    NodeSlots scratch = node;
    Plan plan;
    plan.node = nc.node;
    auto fit = FitOnNodeSlots(scratch, r, any, per_node);
    if (!fit && !nc.cands.empty()) {
      auto release = [&](size_t v, int sign) {
        for (const auto& part : *in.running[v].allocation) {
          if (part.node == node.name) ApplyPart(scratch, part, *in.running[v].resources, -sign);
        }
      };
      for (size_t v : nc.cands) {
        release(v, +1);
        plan.victims.push_back(v);
        fit = FitOnNodeSlots(scratch, r, any, per_node);
        if (fit) break;
      }
      if (fit) {
        // Drop victims not needed after all, the costliest first.
        std::vector<size_t> chosen = plan.victims;
        std::sort(chosen.begin(), chosen.end(),
                  [&](size_t a, size_t b) { return loss(a) > loss(b); });
        for (size_t v : chosen) {
          release(v, -1);
          if (auto still = FitOnNodeSlots(scratch, r, any, per_node)) {
            fit = std::move(still);
            std::erase(plan.victims, v);
          } else {
            release(v, +1);
          }
        }
      }
    }
    if (!fit) continue;
    for (size_t v : plan.victims) plan.loss += loss(v);
    plan.part = std::move(*fit);
    plans.push_back(std::move(plan));
  }
  std::sort(plans.begin(), plans.end(), [](const Plan& a, const Plan& b) {
    if (a.loss != b.loss) return a.loss < b.loss;
    if (a.victims.size() != b.victims.size()) return a.victims.size() < b.victims.size();
    return a.node < b.node;
  });
  if (static_cast<int>(plans.size()) < r.nodes) return std::nullopt;
  Claim found{.reservation = Reservation{
                  .id = job.id, .from = now + policy.preempt_grace, .resources = r, .claim = true}};
  for (int k = 0; k < r.nodes; ++k) {
    found.victims.insert(plans[k].victims.begin(), plans[k].victims.end());
    found.reservation.allocation.push_back(plans[k].part);
  }
  if (found.victims.empty()) return std::nullopt;
  // Other projects must stay at or above their guarantee after all their victims.
  std::unordered_map<std::string, int64_t> from_project;
  for (size_t v : found.victims) {
    const RunningJob& x = in.running[v];
    if (*x.project != *job.project) from_project[*x.project] += x.resources->milli_gpus;
  }
  for (const auto& [p, milli] : from_project) {
    if (held.Project(p) - milli < policy.Project(p).guaranteed_milli) return std::nullopt;
  }
  return found;
}

}  // namespace

FairShareTable::FairShareTable(const UsageLedger* usage, const Policy* policy,
                               const std::vector<PendingJob>& pending,
                               const std::vector<RunningJob>& running)
    : usage_(usage), policy_(policy) {
  std::map<std::string, std::set<std::string>> members;
  for (const auto& [name, p] : policy->projects) members[name];
  if (usage != nullptr) {
    for (const auto& [name, used] : usage->projects()) {
      auto& m = members[name];
      if (const auto* users = usage->users(name)) {
        for (const auto& [u, x] : *users) m.insert(u);
      }
    }
  }
  // Pending jobs repeat a few projects and users many times: skip repeats cheaply.
  const std::string* last_project = nullptr;
  const std::string* last_user = nullptr;
  auto add = [&](const std::string* project, const std::string* user) {
    if (last_project != nullptr && *last_project == *project && *last_user == *user) return;
    members[*project].insert(*user);
    last_project = project;
    last_user = user;
  };
  for (const auto& j : pending) add(j.project, j.user);
  for (const auto& j : running) add(j.project, j.user);
  for (const auto& [name, users] : members) {
    share_total_ += policy->Project(name).share;
    users_per_project_[name] = static_cast<int>(users.size());
  }
}

double FairShareTable::Factor(const std::string& project, const std::string& user) {
  // Queues hold runs of one user's jobs: the last answer is usually the one asked for.
  if (last_ != nullptr && last_project_ == project && last_user_ == user) return *last_;
  double f = Lookup(project, user);
  last_project_ = project;
  last_user_ = user;
  last_ = &cache_[project][user];
  return f;
}

double FairShareTable::Lookup(const std::string& project, const std::string& user) {
  auto& per_user = cache_[project];
  auto hit = per_user.find(user);
  if (hit != per_user.end()) return hit->second;
  double f_project = 1;
  double f_user = 1;
  if (usage_ != nullptr && usage_->total() > 0 && share_total_ > 0) {
    double used = usage_->project(project) / usage_->total();
    double share = policy_->Project(project).share / share_total_;
    f_project = share > 0 ? std::exp2(-used / share) : (used > 0 ? 0 : 1);
    double project_used = usage_->project(project);
    if (project_used > 0) {
      double u_used = usage_->user(project, user) / project_used;
      // Users of a project share it by their configured shares (1 each unless set).
      double u_total = 0;
      if (const auto* users = usage_->users(project)) {
        for (const auto& [u, x] : *users) u_total += policy_->User(u).share;
      }
      int known = users_per_project_.count(project) ? users_per_project_.at(project) : 1;
      u_total = std::max(u_total, static_cast<double>(known));
      double u_share = policy_->User(user).share / std::max(u_total, 1.0);
      f_user = u_share > 0 ? std::exp2(-u_used / u_share) : 0;
    }
  }
  double f = f_project * (1 + f_user) / 2;
  per_user.emplace(user, f);
  return f;
}

int LasLevel(const Policy& policy, double service) {
  const auto& t = policy.las_thresholds;
  return static_cast<int>(std::upper_bound(t.begin(), t.end(), service) - t.begin());
}

Factors ComputeFactors(const PendingJob& job, const Policy& policy, TimePoint now,
                       int64_t cluster_milli, FairShareTable& shares) {
  Factors f;
  f.priority = static_cast<double>(static_cast<int>(job.priority)) / 3.0;
  f.fairshare = shares.Factor(*job.project, *job.user);
  double waited = Seconds(now - job.submitted);
  double max_age = std::max(Seconds(policy.max_age), 1.0);
  f.age = std::clamp(waited / max_age, 0.0, 1.0);
  f.size = cluster_milli > 0 ? std::min(1.0, static_cast<double>(job.resources->milli_gpus) /
                                                 static_cast<double>(cluster_milli))
                             : 0;
  const auto levels = static_cast<double>(policy.las_thresholds.size());
  f.las = levels > 0 ? 1.0 - LasLevel(policy, job.service) / levels : 1.0;
  const Weights& w = policy.weights;
  f.score = w.priority * f.priority + w.fairshare * f.fairshare + w.age * f.age + w.size * f.size +
            w.las * f.las;
  return f;
}

PassResult RunPass(PassInput in) { return RunPassOn(in); }

PassResult RunPassOn(PassInput& in) {
  PassResult result;
  static const Policy kDefaultPolicy;
  const Policy& policy = in.policy != nullptr ? *in.policy : kDefaultPolicy;
  const TimePoint now = in.now;
  if (in.full) in.view.ClearReservations();

  // 1. Order.
  int64_t cluster_milli = 0;
  for (const auto& n : in.view.nodes) {
    if (!n.schedulable) continue;
    for (const auto& g : n.gpus) cluster_milli += g.usable ? 1000 : 0;
  }
  FairShareTable shares(in.usage, &policy, in.pending, in.running);
  std::vector<Factors> factors(in.pending.size());
  for (size_t i = 0; i < in.pending.size(); ++i) {
    factors[i] = ComputeFactors(in.pending[i], policy, now, cluster_milli, shares);
  }
  // Sorted as compact keys: a queue of 100,000 stays in cache while it sorts.
  struct Key {
    double score;
    int64_t id;
    uint32_t index;
  };
  std::vector<Key> keys(in.pending.size());
  for (uint32_t i = 0; i < keys.size(); ++i)
    keys[i] = Key{factors[i].score, in.pending[i].id.value, i};
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    return a.score != b.score ? a.score > b.score : a.id < b.id;
  });
  std::vector<uint32_t> order(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) order[i] = keys[i].index;
  result.order.reserve(order.size());
  for (uint32_t i : order) result.order.push_back(QueueEntry{in.pending[i].id, factors[i]});

  // Claims of earlier passes hold the GPUs their victims give back for their claimers.
  std::unordered_map<int64_t, const Reservation*> claims;
  if (in.full && !in.claims.empty()) {
    std::unordered_map<int64_t, bool> waiting;
    for (const auto& p : in.pending) waiting[p.id.value] = true;
    for (const auto& c : in.claims) {
      if (!c.claim || !waiting.count(c.id.value)) continue;
      if (now > c.from + kClaimSlack) continue;  // its victims never stopped: search again
      claims[c.id.value] = &c;
      MarkReservation(in.view, c);
    }
  }

  // Jobs holding a claim go first: they preempted for those GPUs, and no job ahead of them in
  // the order may stand in their way (in strict order, it would block them for ever).
  if (!claims.empty()) {
    std::stable_partition(order.begin(), order.end(),
                          [&](uint32_t i) { return claims.count(in.pending[i].id.value) > 0; });
  }

  // 2. Walk it.
  Placer placer(in.view);
  Holdings held(policy);
  std::vector<Release> releases;
  releases.reserve(in.running.size());
  std::vector<bool> stopping(in.running.size());
  for (size_t i = 0; i < in.running.size(); ++i) {
    const RunningJob& r = in.running[i];
    held.Add(*r.project, *r.user, *r.pool, r.resources->milli_gpus, +1);
    TimePoint end =
        r.stopping ? std::min(r.expected_end, now + policy.preempt_grace) : r.expected_end;
    releases.push_back(Release{end, r.allocation, r.resources});
    stopping[i] = r.stopping;
  }
  // Whether a preemption search can find anything this pass: a running job of a lower class
  // than some waiting one, or a project with a guarantee to reclaim. Most passes of most
  // clusters have neither, and a search looks at every running job.
  int lowest_running = static_cast<int>(Priority::kCritical) + 1;
  int highest_level = -1;  // the most served running job's LAS level
  for (size_t i = 0; i < in.running.size(); ++i) {
    if (stopping[i]) continue;
    lowest_running = std::min(lowest_running, static_cast<int>(in.running[i].priority));
    if (policy.las_preemption)
      highest_level = std::max(highest_level, LasLevel(policy, in.running[i].service));
  }
  bool any_guarantee = false;
  for (const auto& [name, p] : policy.projects) any_guarantee |= p.guaranteed_milli > 0;
  auto may_have_victims = [&](const PendingJob& job) {
    return static_cast<int>(job.priority) > lowest_running ||
           (any_guarantee && policy.Project(*job.project).guaranteed_milli > 0) ||
           (policy.las_preemption && LasLevel(policy, job.service) < highest_level);
  };
  bool preemption = policy.preemption && !in.running.empty();
  if (preemption) {
    bool any = false;
    for (const PendingJob& p : in.pending) {
      if (may_have_victims(p)) {
        any = true;
        break;
      }
    }
    preemption = any;
  }
  bool releases_sorted = false;
  auto sort_releases = [&] {
    if (releases_sorted) return;
    std::stable_sort(releases.begin(), releases.end(),
                     [](const Release& a, const Release& b) { return a.at < b.at; });
    releases_sorted = true;
  };

  struct Known {
    const Resources* r;
    const std::string* pool;
    bool never;
    TimePoint until;  // the shortest job of this shape that did not fit
    std::string detail;
  };
  std::vector<Known> known;  // shapes that failed this pass, with their words
  std::deque<std::vector<NodeAllocation>> started;  // stable addresses for `releases`
  int ahead = 0;
  int reserved = 0;
  int searches = 0;
  std::vector<std::vector<uint32_t>> running_on_node;  // built at the first preemption search
  std::optional<JobId> strict_blocker;       // FIFO without backfill: the first job that waits
  std::set<std::string_view> untimed_pools;  // pools where a job holds nodes without a start time
  auto wait = [&](JobId id, std::string reason, std::string detail,
                  std::optional<TimePoint> at = std::nullopt) {
    if (ahead < kExplainedWaits) {
      detail += Ahead(ahead);
      if (at) detail += When(*at, now);
      result.waits.push_back(Wait{id, std::move(reason), std::move(detail), at});
    }
    ++ahead;
  };

  for (uint32_t index : order) {
    const PendingJob& job = in.pending[index];
    const Resources& r = *job.resources;
    if (strict_blocker && ahead >= kExplainedWaits) {
      ++ahead;  // behind the blocker, past the explained ones: nothing can change for it
      continue;
    }
    if (std::string why = LimitReason(job, policy, held); !why.empty()) {
      wait(job.id, "quota", std::move(why));
      continue;
    }
    if (strict_blocker) {
      wait(job.id, "priority",
           "behind job " + strict_blocker->ToString() + " (strict queue order, no backfill)");
      continue;
    }
    // Deep in a queue that no longer fits: no words to write, no reservation or search left
    // to make, and no room for it. Counting it is all there is to do.
    if (ahead >= kExplainedWaits && r.milli_gpus > placer.free_milli(*job.pool) &&
        policy.backfill && !claims.count(job.id.value) &&
        (!in.full ||
         (reserved >= policy.reservations && (!preemption || searches >= kPreemptionSearches)))) {
      ++ahead;
      continue;
    }
    PlaceRules rules{.pool = *job.pool,
                     .until = job.time_limit > Duration(0) ? now + job.time_limit : kNever,
                     .job = job.id};
    const auto claim = claims.find(job.id.value);
    // The view only fills during a pass: a shape that failed fails again, unless this job
    // ends sooner and may use a hole before a reservation.
    auto it = std::find_if(known.begin(), known.end(),
                           [&](const Known& k) { return *k.r == r && *k.pool == *job.pool; });
    bool skip =
        it != known.end() && (it->never || rules.until >= it->until) && claim == claims.end();
    if (!skip) {
      if (auto placed = placer.Place(r, rules)) {
        held.Add(*job.project, *job.user, *job.pool, r.milli_gpus, +1);
        started.push_back(*placed);
        releases.push_back(Release{rules.until, &started.back(), job.resources});
        releases_sorted = false;
        result.starts.push_back(Start{job.id, std::move(*placed)});
        continue;
      }
    }
    Known local;
    Known* shape = it != known.end() ? &*it : &local;
    if (it == known.end()) {
      bool never = !placer.EverFits(r, *job.pool);
      local = Known{job.resources, job.pool, never, rules.until,
                    never ? "no node in pool " + *job.pool + " can ever hold " + DescribeRequest(r)
                          : "waiting for " + DescribeRequest(r) + "; " +
                                Gpus(placer.free_milli(*job.pool)) + " free in pool " + *job.pool};
      if (known.size() < 32) {
        known.push_back(local);
        shape = &known.back();
      }
    } else if (!skip) {
      it->until = std::min(it->until, rules.until);
    }
    if (shape->never || !in.full) {
      wait(job.id, "resources", shape->detail);
      continue;
    }
    if (claim != claims.end()) {
      // Its victims are still stopping: keep the claim, search no further. What it claimed
      // counts as its project's already: another of its jobs reclaims only what is left of
      // the guarantee, else the two together would exceed it and be preempted back.
      held.Add(*job.project, *job.user, *job.pool, r.milli_gpus, +1);
      result.reservations.push_back(*claim->second);
      wait(job.id, "resources", "waiting for preempted jobs to stop to free " + DescribeRequest(r),
           claim->second->from);
      continue;
    }
    if (!policy.backfill) strict_blocker = job.id;

    // 3. Reservation, and preemption when the wait would be long.
    std::optional<Reservation> reservation;
    bool claimed = false;  // the reservation stands on GPUs its victims are giving back
    bool shadowed = false;
    const bool may_preempt = preemption && searches < kPreemptionSearches && may_have_victims(job);
    sort_releases();
    // Whether anything frees within the grace period; if not, the wait is long for sure and
    // the shadow can wait until preemption found nothing.
    const bool soon = !releases.empty() && releases.front().at <= now + policy.preempt_grace;
    if ((reserved < policy.reservations || may_preempt) && (!may_preempt || soon)) {
      reservation = Shadow(placer, releases, r, *job.pool, now);
      shadowed = true;
    }
    if (may_preempt && (!reservation || reservation->from > now + policy.preempt_grace)) {
      ++searches;
      VictimSearch ctx{in, policy, now, held, stopping, placer, running_on_node};
      if (std::optional<Claim> found = SearchVictims(job, ctx)) {
        for (size_t v : found->victims) {
          const RunningJob& x = in.running[v];
          stopping[v] = true;
          const bool by_service = policy.las_preemption && x.priority <= job.priority &&
                                  LasLevel(policy, x.service) > LasLevel(policy, job.service);
          const char* why = x.priority < job.priority ? "priority"
                            : by_service              ? "service"
                                                      : "quota";
          result.preemptions.push_back(Preemption{x.id, job.id, why});
          for (auto& rel : releases) {
            if (rel.allocation == x.allocation) rel.at = std::min(rel.at, found->reservation.from);
          }
        }
        releases_sorted = false;
        reservation = std::move(found->reservation);
        claimed = true;
        held.Add(*job.project, *job.user, *job.pool, r.milli_gpus,
                 +1);  // as for a kept claim, above
      }
    }
    if (!shadowed && !claimed && reserved < policy.reservations) {
      reservation = Shadow(placer, releases, r, *job.pool, now);
    }
    // No time says when it could start: the first such job of a pool holds nodes as they
    // empty, else jobs that fit in the gaps would pass it for ever.
    bool untimed = false;
    if (!reservation && !claimed && reserved < policy.reservations && policy.backfill &&
        policy.untimed_reservation && !untimed_pools.count(*job.pool)) {
      reservation = Untimed(placer, r, *job.pool, now);
      untimed = reservation.has_value();
      if (untimed) untimed_pools.insert(*job.pool);
    }
    if (reservation && (claimed || reserved < policy.reservations)) {
      reservation->id = job.id;
      reserved += claimed ? 0 : 1;
      MarkReservation(placer.view(), *reservation);
      TimePoint from = reservation->from;
      std::string nodes;
      for (const auto& part : reservation->allocation)
        nodes += (nodes.empty() ? "" : ", ") + part.node;
      result.reservations.push_back(std::move(*reservation));
      if (untimed) {
        wait(job.id, "resources",
             shape->detail + "; holding " + nodes + " for it as running jobs end");
      } else {
        wait(job.id, "resources", shape->detail, from);
      }
      continue;
    }
    wait(job.id, "resources", shape->detail);
  }
  return result;
}

}  // namespace baton::sched
