// What GET /metrics counts of every job, kept as jobs join, change state and close attempts,
// so that a read-out does not walk every job (a million held jobs took 0.21 s of the
// controller's thread): how many jobs are in each state, and each project's GPU-seconds and
// cost of its jobs' ended attempts. The running attempts' are the read-out's to add, from the
// running jobs. Owned by the Controller; not thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "core/job.h"

namespace baton::control {

class JobTally {
 public:
  struct Sums {
    double gpu_seconds = 0;   // Job::gpu_seconds: ended attempts
    int64_t cost_micros = 0;  // Job::cost_micros: ended attempts
  };

  // A job that joins (a submit, a restore), as it is.
  void Add(const Job& job);
  // A job's state changed.
  void Moved(JobState from, JobState to);
  // An attempt of a job of `project` closed, adding this to the job's GPU-seconds and cost.
  void Charged(const std::string& project, double gpu_seconds, int64_t cost_micros);
  // `job` (its ended attempts) moved from project `from` to its spec's (`baton update`).
  void Retagged(const Job& job, const std::string& from);

  int64_t count(JobState s) const { return by_state_[static_cast<size_t>(s)]; }
  // Every project a job has named, with its sums (0 for a project whose jobs all left it).
  const std::map<std::string, Sums>& projects() const { return projects_; }

  // The tally of `jobs`, counted by a walk: what the kept one must equal (debug builds check
  // it at every read-out).
  static JobTally Of(const std::map<JobId, Job>& jobs);
  // Whether two tallies agree (the GPU-seconds within rounding).
  bool SameAs(const JobTally& other) const;

 private:
  static constexpr size_t kStates = static_cast<size_t>(JobState::kTimedOut) + 1;
  std::array<int64_t, kStates> by_state_{};
  std::map<std::string, Sums> projects_;
};

}  // namespace baton::control
