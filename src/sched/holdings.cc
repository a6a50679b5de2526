#include "sched/holdings.h"

#include "core/quantity.h"

namespace baton::sched {
namespace {

std::string Gpus(int64_t milli) { return FormatMilli(milli) + (milli == 1000 ? " GPU" : " GPUs"); }

bool LimitsUser(const UserPolicy& u) { return u.max_milli != kNoLimit || u.max_jobs >= 0; }

}  // namespace

Holdings::Holdings(const Policy& policy) {
  guarantees = AnyGuarantee(policy);
  track_users = LimitsUser(policy.default_user);
  for (const auto& [name, u] : policy.users) track_users |= LimitsUser(u);
  for (const auto& [name, p] : policy.pools) track_pool_users |= p.max_milli_per_user != kNoLimit;
}

bool AnyLimit(const Policy& policy) {
  Holdings tracked(policy);
  if (tracked.guarantees || tracked.track_users || tracked.track_pool_users) return true;
  if (policy.default_project.limit_milli != kNoLimit) return true;
  for (const auto& [name, p] : policy.projects) {
    if (p.limit_milli != kNoLimit) return true;
  }
  return false;
}

std::string LimitReason(const PendingJob& job, const Policy& policy, const Holdings& h) {
  const int64_t need = job.resources->milli_gpus;
  const ProjectPolicy& project = policy.Project(*job.project);
  // Not preemptible: it runs within its project's guarantee, where the policy sets any (else it
  // could not be taken back), as Run:ai's non-preemptible jobs do.
  if (!job.preemptible && h.guarantees) {
    int64_t held = h.Project(*job.project);
    if (held + need > project.guaranteed_milli) {
      return "not preemptible: it runs within project " + *job.project + "'s guarantee of " +
             Gpus(project.guaranteed_milli) + ", of which " + Gpus(held) +
             (held == 1000 ? " is" : " are") +
             " held (--preemptible lets it use idle GPUs beyond, and be preempted for them)";
    }
  }
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

void AddRunning(Holdings& held, const std::vector<RunningJob>& running) {
  struct Sum {
    const RunningJob* first = nullptr;
    int64_t milli = 0;
    int jobs = 0;
  };
  std::vector<Sum> sums;
  for (const RunningJob& r : running) {
    Sum* sum = nullptr;
    if (r.account >= 0) {
      if (static_cast<size_t>(r.account) >= sums.size()) sums.resize(r.account + 1);
      sum = &sums[r.account];
      if (sum->first == nullptr) sum->first = &r;
    }
    if (sum == nullptr || !SamePool(sum->first->pool, r.pool)) {
      held.Add(*r.project, *r.user, *r.pool, r.resources->milli_gpus, +1);
      continue;
    }
    sum->milli += r.resources->milli_gpus;
    sum->jobs += 1;
  }
  for (const Sum& sum : sums) {
    if (sum.first != nullptr)
      held.AddJobs(*sum.first->project, *sum.first->user, *sum.first->pool, sum.milli, sum.jobs);
  }
}

bool AnyGuarantee(const Policy& policy) {
  bool any = policy.default_project.guaranteed_milli > 0;
  for (const auto& [name, p] : policy.projects) any |= p.guaranteed_milli > 0;
  return any;
}

}  // namespace baton::sched
