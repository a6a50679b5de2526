#include "store/memory_store.h"

namespace baton::store {

Result<Snapshot> MemoryStore::Load() {
  Snapshot s;
  for (const auto& [id, job] : jobs_) s.jobs.push_back(job);
  s.next_job_id = next_job_id_;
  s.idempotency = keys_;
  return s;
}

Status MemoryStore::Commit(const Batch& batch) {
  if (fail_) return Unavailable("memory store: commits are set to fail");
  for (const Job& j : batch.jobs) jobs_[j.id] = j;
  if (batch.next_job_id) next_job_id_ = *batch.next_job_id;
  keys_.insert(keys_.end(), batch.idempotency.begin(), batch.idempotency.end());
  ++commits_;
  return Status::Ok();
}

}  // namespace baton::store
