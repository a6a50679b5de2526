// What a scheduling pass compares jobs by, made once per job and cached on it
// (Job::AccountCache): its (project, user) pair as a number (sched::PendingJob::account), given
// in the order pairs first reach a pass, and its pool's and project's names as one shared copy
// each, that a pass compares by address first. Not stored: the numbers are only the passes' (a
// restart numbers again, and decisions never depend on them). Owned by the Controller; not
// thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "core/job.h"

namespace baton::control {

class AccountNumbers {
 public:
  // The job's (project, user) number; the same for every job of the pair.
  int32_t AccountOf(const Job& job);
  // The one copy of the job's pool's name (it never moves).
  const std::string* PoolOf(const Job& job);
  // The one copy of the job's project's name (it never moves).
  const std::string* ProjectOf(const Job& job);

  size_t accounts() const { return accounts_.size(); }

 private:
  std::map<std::pair<std::string, std::string>, int32_t> accounts_;
  std::set<std::string, std::less<>> pools_;  // sets: the strings never move
  std::set<std::string, std::less<>> projects_;
};

}  // namespace baton::control
