#include "store/memory_store.h"

namespace baton::store {

Result<Snapshot> MemoryStore::Load() {
  Snapshot s;
  for (const auto& [id, job] : jobs_) s.jobs.push_back(job);
  s.next_job_id = next_job_id_;
  s.idempotency = keys_;
  for (const auto& [key, d] : drains_) s.drains.push_back(d);
  for (const auto& [id, t] : tokens_) s.tokens.push_back(t);
  return s;
}

Status MemoryStore::Commit(const Batch& batch) {
  if (fail_) return Unavailable("memory store: commits are set to fail");
  for (const Job& j : batch.jobs) jobs_[j.id] = j;
  if (batch.next_job_id) next_job_id_ = *batch.next_job_id;
  keys_.insert(keys_.end(), batch.idempotency.begin(), batch.idempotency.end());
  for (const Token& t : batch.tokens) tokens_[t.id] = t;
  for (const Drain& d : batch.drains) {
    if (d.active)
      drains_[{d.node, d.gpu}] = d;
    else
      drains_.erase({d.node, d.gpu});
  }
  ++commits_;
  return Status::Ok();
}

}  // namespace baton::store
