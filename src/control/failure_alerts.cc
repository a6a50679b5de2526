#include "control/failure_alerts.h"

#include <algorithm>
#include <string>

namespace baton::control {

FailureAlerts::Tasks FailureAlerts::ArrayTasks(const Job& job, const std::map<JobId, Job>& jobs) {
  Tasks t;
  for (auto it = jobs.find(job.array_id); it != jobs.end() && it->second.array_id == job.array_id;
       ++it) {
    ++t.total;
    t.ended += IsTerminal(it->second.state) ? 1 : 0;
  }
  if (auto indices = TasksOf(job.spec); indices && *indices)
    t.total = std::max(t.total, static_cast<int>((*indices)->indices.size()));
  return t;
}

std::optional<ClusterEvent> FailureAlerts::Ended(const Job& job, JobState to,
                                                 const std::function<Tasks()>& tasks) {
  const bool failed = to == JobState::kFailed;
  const std::string name = job.spec.name.empty() ? "" : " (" + job.spec.name + ")";
  auto alert = [&](JobId about, std::string message) {
    return ClusterEvent{.kind = EventKind::kJobFailed,
                        .severity = Severity::kAlert,
                        .job = about.value,
                        .message = message};
  };
  if (job.array_id.value == 0) {
    if (!failed) return std::nullopt;
    return alert(job.id, "job " + job.id.ToString() + name + " of " + job.user +
                             " failed: " + job.reason_detail.substr(0, 256));
  }
  const std::string array = job.array_id.ToString();
  auto it = arrays_.find(job.array_id);
  if (it == arrays_.end()) {
    if (!failed) return std::nullopt;
    Tasks t = tasks();
    Array a{.failed = 1, .left = t.total - t.ended, .total = t.total};
    if (a.left > 0) arrays_.emplace(job.array_id, a);
    return alert(job.id, "task " + TaskName(job.array_id, job.array_index) + " of array " + array +
                             name + " of " + job.user +
                             " failed: " + job.reason_detail.substr(0, 256) +
                             (a.left > 0 ? "; the array's other failures are counted, and said "
                                           "when it has ended"
                                         : ""));
  }
  Array& a = it->second;
  a.failed += failed ? 1 : 0;
  if (--a.left > 0) return std::nullopt;
  std::optional<ClusterEvent> out;
  if (a.failed > 1) {
    out = alert(job.array_id, "array " + array + name + " of " + job.user + " has ended: " +
                                  std::to_string(a.failed) + " of its " + std::to_string(a.total) +
                                  " tasks failed (`baton jobs --state failed --expand` lists "
                                  "them)");
  }
  arrays_.erase(it);
  return out;
}

}  // namespace baton::control
