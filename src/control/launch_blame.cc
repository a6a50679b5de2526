#include "control/launch_blame.h"

#include <algorithm>

namespace baton::control {

bool MayStartElsewhere(Job& job, std::vector<sched::KnownNode> nodes, size_t tried_limit) {
  auto& tried = job.launch_failed_on;
  auto was_tried = [&](const std::string& name) {
    return std::find(tried.begin(), tried.end(), name) != tried.end();
  };
  for (const NodeAllocation& p : job.allocation) {
    if (p.launch_failed && !was_tried(p.node)) tried.push_back(p.node);
  }
  if (tried.size() >= tried_limit) return false;
  std::erase_if(nodes, [&](const sched::KnownNode& n) { return was_tried(n.info->name); });
  if (nodes.empty()) return false;
  return sched::CheckFeasible(nodes, job.spec.resources, job.spec.pool, false, job.user,
                              Preemptible(job.spec))
      .has_value();
}

std::vector<JobId> LaunchBlame::Proven(const std::map<JobId, Job>& jobs, TimePoint now) {
  std::vector<JobId> proven;
  for (auto it = unproven_.begin(); it != unproven_.end();) {
    const Job& job = jobs.at(*it);
    if (job.state != JobState::kRunning) {
      it = unproven_.erase(it);
      continue;
    }
    ++it;
    if (!job.launched) continue;
    bool ok = std::none_of(job.allocation.begin(), job.allocation.end(),
                           [](const NodeAllocation& p) { return p.launch_failed; });
    if (ok && job.started_at && now - *job.started_at >= kProvenAfter) proven.push_back(job.id);
  }
  return proven;
}

std::vector<LaunchBlame::Drain> LaunchBlame::Blame(Job& job, NodeTable& nodes, int limit,
                                                   bool* changed) {
  unproven_.erase(job.id);
  std::vector<Drain> drains;
  for (size_t i = job.launch_blamed; i < job.launch_failed_on.size(); ++i) {
    const std::string& name = job.launch_failed_on[i];
    NodeRecord* failed = nodes.Find(name);
    bool runs_here = std::any_of(job.allocation.begin(), job.allocation.end(),
                                 [&](const NodeAllocation& p) { return p.node == name; });
    if (failed == nullptr || runs_here) continue;
    failed->launch_failures += 1;
    if (limit <= 0 || failed->launch_failures < limit || !failed->drain_reason.empty()) continue;
    drains.push_back(Drain{.node = name,
                           .reason = "launch failures: " + std::to_string(failed->launch_failures) +
                                     " jobs in a row could not start here and started on other "
                                     "nodes (last: job " +
                                     job.id.ToString() + ")"});
  }
  *changed = job.launch_blamed != static_cast<int>(job.launch_failed_on.size());
  job.launch_blamed = static_cast<int>(job.launch_failed_on.size());
  return drains;
}

}  // namespace baton::control
