// Quotas and limits in a pass: what the running jobs (and the jobs the pass starts or claims
// for) hold by project, user and pool+user, and the limit a waiting job would cross.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/policy.h"
#include "sched/pass.h"

namespace baton::sched {

// What the running jobs hold, by project, user and pool+user, kept up to date in a pass. Keys
// are views of the jobs' own strings, which outlive the pass. Per-user counts are kept only
// when the policy limits users: a pass adds every running job, and most clusters set none.
struct Holdings {
  explicit Holdings(const Policy& policy);
  bool guarantees = false;  // some project has a guarantee (AnyGuarantee)
  bool track_users = false;
  bool track_pool_users = false;
  std::unordered_map<std::string_view, int64_t> project_milli;
  std::unordered_map<std::string_view, int64_t> user_milli;
  std::unordered_map<std::string_view, int> user_jobs;
  std::unordered_map<std::string_view, std::unordered_map<std::string_view, int64_t>>
      pool_user_milli;

  // Inline: a pass calls these for every running job and every victim it weighs.
  void Add(const std::string& project, const std::string& user, const std::string& pool,
           int64_t milli, int sign) {
    AddJobs(project, user, pool, sign * milli, sign);
  }
  // `jobs` jobs of one project, user and pool that hold `milli` together (negative: given back).
  void AddJobs(const std::string& project, const std::string& user, const std::string& pool,
               int64_t milli, int jobs) {
    project_milli[project] += milli;
    if (track_users) {
      user_milli[user] += milli;
      user_jobs[user] += jobs;
    }
    if (track_pool_users) pool_user_milli[pool][user] += milli;
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

// The pass's quota step: what the running jobs hold, added up (a few lookups by name per
// account rather than per job: a cluster runs hundreds of jobs of a few accounts).
void AddRunning(Holdings& held, const std::vector<RunningJob>& running);

// Why `job` may not start now whatever the free GPUs: a quota or limit, or, for a job that is not
// preemptible where the policy sets guarantees, its project's guarantee; "" when none.
std::string LimitReason(const PendingJob& job, const Policy& policy, const Holdings& h);
// Whether the policy sets any quota, limit or guarantee LimitReason reads: when not, none makes
// a job wait.
bool AnyLimit(const Policy& policy);
// Whether some project has a guarantee (projects not named have the default's): then a job of
// one under it may reclaim GPUs from projects borrowing beyond theirs.
bool AnyGuarantee(const Policy& policy);

}  // namespace baton::sched
