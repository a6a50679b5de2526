#include "control/account_numbers.h"

namespace baton::control {

int32_t AccountNumbers::AccountOf(const Job& job) {
  if (job.account.id < 0) {
    auto [it, added] = accounts_.try_emplace(std::make_pair(job.spec.project, job.user),
                                             static_cast<int32_t>(accounts_.size()));
    job.account.id = it->second;
  }
  return job.account.id;
}

const std::string* AccountNumbers::PoolOf(const Job& job) {
  if (job.account.pool == nullptr) job.account.pool = &*pools_.insert(job.spec.pool).first;
  return job.account.pool;
}

const std::string* AccountNumbers::ProjectOf(const Job& job) {
  if (job.account.project == nullptr)
    job.account.project = &*projects_.insert(job.spec.project).first;
  return job.account.project;
}

}  // namespace baton::control
