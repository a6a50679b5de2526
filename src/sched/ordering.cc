#include "sched/ordering.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace baton::sched {
namespace {

double Seconds(Duration d) { return static_cast<double>(d.count()) / 1000.0; }

// The GPUs of schedulable nodes that are usable, in milli-GPUs: the size factor's whole.
int64_t ClusterMilli(const ClusterView& view) {
  int64_t milli = 0;
  for (const auto& n : view.nodes) {
    if (!n.schedulable) continue;
    for (const auto& g : n.gpus) milli += g.usable ? 1000 : 0;
  }
  return milli;
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

std::vector<uint32_t> OrderQueue(const PassInput& in, const Policy& policy,
                                 std::vector<QueueEntry>& entries) {
  const int64_t cluster_milli = ClusterMilli(in.view);
  FairShareTable shares(in.usage, &policy, in.pending, in.running);
  std::vector<Factors> factors(in.pending.size());
  for (size_t i = 0; i < in.pending.size(); ++i) {
    factors[i] = ComputeFactors(in.pending[i], policy, in.now, cluster_milli, shares);
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
  entries.reserve(order.size());
  for (uint32_t i : order) entries.push_back(QueueEntry{in.pending[i].id, factors[i]});
  return order;
}

}  // namespace baton::sched
