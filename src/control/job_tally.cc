#include "control/job_tally.h"

#include <algorithm>
#include <cmath>

namespace baton::control {

void JobTally::Add(const Job& job) {
  by_state_[static_cast<size_t>(job.state)] += 1;
  Charged(job.spec.project, job.gpu_seconds, job.cost_micros);
}

void JobTally::Moved(JobState from, JobState to) {
  by_state_[static_cast<size_t>(from)] -= 1;
  by_state_[static_cast<size_t>(to)] += 1;
}

void JobTally::Charged(const std::string& project, double gpu_seconds, int64_t cost_micros) {
  Sums& sums = projects_[project];
  sums.gpu_seconds += gpu_seconds;
  sums.cost_micros += cost_micros;
}

void JobTally::Retagged(const Job& job, const std::string& from) {
  Charged(from, -job.gpu_seconds, -job.cost_micros);
  Charged(job.spec.project, job.gpu_seconds, job.cost_micros);
}

JobTally JobTally::Of(const std::map<JobId, Job>& jobs) {
  JobTally tally;
  for (const auto& [id, job] : jobs) tally.Add(job);
  return tally;
}

bool JobTally::SameAs(const JobTally& other) const {
  if (by_state_ != other.by_state_) return false;
  // A project whose jobs all moved away keeps its (zero) entry in a kept tally only.
  auto covers = [](const JobTally& a, const JobTally& b) {
    for (const auto& [project, sums] : a.projects_) {
      auto it = b.projects_.find(project);
      const Sums none;
      const Sums& theirs = it == b.projects_.end() ? none : it->second;
      if (sums.cost_micros != theirs.cost_micros) return false;
      const double scale =
          std::max({1.0, std::fabs(sums.gpu_seconds), std::fabs(theirs.gpu_seconds)});
      if (std::fabs(sums.gpu_seconds - theirs.gpu_seconds) > 1e-6 * scale) return false;
    }
    return true;
  };
  return covers(*this, other) && covers(other, *this);
}

}  // namespace baton::control
