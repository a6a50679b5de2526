// A Store kept in memory: for `baton sim` (nothing to persist) and for tests. It can be told
// to fail commits, to test how the controller handles a store that stops working.
#pragma once

#include <deque>
#include <map>

#include "store/identity.h"
#include "store/store.h"

namespace baton::store {

class MemoryStore : public Store, public Identified {
 public:
  Result<Snapshot> Load() override;
  Status Commit(const Batch& batch) override;
  Identity identity() const override { return {.id = id_, .commits = commits_}; }
  Status SetIdentity(int64_t id) override {
    id_ = id;
    return Status::Ok();
  }

  void FailCommits(bool fail) { fail_ = fail; }
  int64_t commits() const { return commits_; }

 private:
  std::map<JobId, Job> jobs_;
  int64_t next_job_id_ = 1;
  std::map<std::pair<std::string, std::string>, IdempotencyEntry> keys_;  // by (user, key)
  std::map<std::pair<std::string, int>, Drain> drains_;
  std::map<int64_t, Token> tokens_;
  std::deque<ClusterEvent> events_;
  std::map<int64_t, NodeCharge> charges_;
  bool fail_ = false;
  int64_t commits_ = 0;
  int64_t id_ = 0;
};

}  // namespace baton::store
