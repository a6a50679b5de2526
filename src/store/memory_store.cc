#include "store/memory_store.h"

namespace baton::store {

Result<Snapshot> MemoryStore::Load() {
  Snapshot s;
  for (const auto& [id, job] : jobs_) s.jobs.push_back(job);
  s.next_job_id = next_job_id_;
  for (const auto& [key, e] : keys_) s.idempotency.push_back(e);
  for (const auto& [key, d] : drains_) s.drains.push_back(d);
  for (const auto& [id, t] : tokens_) s.tokens.push_back(t);
  s.events.assign(events_.begin(), events_.end());
  for (const auto& [id, c] : charges_) s.node_charges.push_back(c);
  return s;
}

Status MemoryStore::Commit(const Batch& batch) {
  if (fail_) return Unavailable("memory store: commits are set to fail");
  if (batch.empty()) return Status::Ok();
  for (const Job& j : batch.jobs) jobs_[j.id] = j;
  if (batch.next_job_id) next_job_id_ = *batch.next_job_id;
  for (const IdempotencyEntry& e : batch.idempotency) keys_[{e.user, e.key}] = e;
  for (const Token& t : batch.tokens) tokens_[t.id] = t;
  for (const Drain& d : batch.drains) {
    if (d.active)
      drains_[{d.node, d.gpu}] = d;
    else
      drains_.erase({d.node, d.gpu});
  }
  for (const ClusterEvent& e : batch.events) {
    events_.push_back(e);
    if (events_.size() > kKeptEvents) events_.pop_front();
  }
  for (const NodeCharge& c : batch.node_charges) charges_[c.id] = c;
  for (int64_t id : batch.node_charges_removed) charges_.erase(id);
  ++commits_;
  return Status::Ok();
}

}  // namespace baton::store
