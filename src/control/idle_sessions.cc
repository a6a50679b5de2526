#include "control/idle_sessions.h"

#include <algorithm>
#include <set>

namespace baton::control {
namespace {

// Whether the session is in use: a client attached, or one of its GPUs at or above `pct`.
bool InUse(const Job& job, const NodeTable& nodes, int pct) {
  for (const NodeAllocation& part : job.allocation) {
    const NodeRecord* node = nodes.Find(part.node);
    if (node == nullptr) continue;
    if (std::find(node->attached.begin(), node->attached.end(), job.id) != node->attached.end())
      return true;
    for (const GpuSample& s : node->samples) {
      if (std::find(part.gpus.begin(), part.gpus.end(), s.index) != part.gpus.end() &&
          s.utilization_pct >= pct)
        return true;
    }
  }
  return false;
}

}  // namespace

bool IdleSessions::AnyPoolReclaims(const Policy& policy) {
  return std::any_of(policy.pools.begin(), policy.pools.end(), [](const auto& p) {
    return p.second.interactive && p.second.idle_timeout.count() > 0;
  });
}

std::vector<IdleSessions::Verdict> IdleSessions::Review(const Policy& policy,
                                                        const std::vector<Job*>& sessions,
                                                        const NodeTable& nodes, TimePoint now) {
  std::set<JobId> running;
  for (const Job* job : sessions) running.insert(job->id);
  std::erase_if(idle_, [&](const auto& entry) { return running.count(entry.first) == 0; });
  std::vector<Verdict> verdicts;
  for (Job* job : sessions) {
    if (job->state != JobState::kRunning || job->stop_requested || job->preempt_requested) continue;
    const PoolPolicy* pool = policy.Pool(job->spec.pool);
    if (pool == nullptr || !pool->interactive || pool->idle_timeout.count() == 0) continue;
    auto [it, fresh] = idle_.try_emplace(job->id, Idle{.since = now});
    Idle& idle = it->second;
    if (fresh || InUse(*job, nodes, pool->idle_utilization_pct)) {
      idle = Idle{.since = now};
      continue;
    }
    Duration idle_for = now - idle.since;
    Duration left = pool->idle_timeout - idle_for;
    if (left <= Duration(0)) {
      idle_.erase(it);
      verdicts.push_back(Verdict{.kind = Verdict::Kind::kStop,
                                 .job = job,
                                 .pool = pool,
                                 .idle_for = idle_for,
                                 .left = Duration(0)});
    } else if (!idle.warned && left <= pool->idle_warning) {
      idle.warned = true;
      verdicts.push_back(Verdict{.kind = Verdict::Kind::kWarn,
                                 .job = job,
                                 .pool = pool,
                                 .idle_for = idle_for,
                                 .left = left});
    }
  }
  return verdicts;
}

}  // namespace baton::control
