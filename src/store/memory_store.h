// A Store kept in memory: for `baton sim` (nothing to persist) and for tests. It can be told
// to fail commits, to test how the controller handles a store that stops working.
#pragma once

#include <map>

#include "store/store.h"

namespace baton::store {

class MemoryStore : public Store {
 public:
  Result<Snapshot> Load() override;
  Status Commit(const Batch& batch) override;

  void FailCommits(bool fail) { fail_ = fail; }
  int commits() const { return commits_; }

 private:
  std::map<JobId, Job> jobs_;
  int64_t next_job_id_ = 1;
  std::map<std::pair<std::string, std::string>, IdempotencyEntry> keys_;  // by (user, key)
  std::map<std::pair<std::string, int>, Drain> drains_;
  std::map<int64_t, Token> tokens_;
  bool fail_ = false;
  int commits_ = 0;
};

}  // namespace baton::store
