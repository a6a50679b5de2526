// The store for production: PostgreSQL through libpq. The same Store contract as SQLite's: a
// Commit is one transaction, sent as one pipeline (every statement, then COMMIT, in one round
// trip), so a batch of 4,096 submits costs one network round trip and one WAL flush on the
// server. Several controllers may share one database: one of them leads (PostgresLease), and
// a leader's commits are fenced by its epoch, so a deposed leader can never write.
// Not thread-safe: one owner (the controller loop) calls it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "store/identity.h"
#include "store/store.h"

namespace baton::store {

class PostgresStore : public Store, public Identified {
 public:
  // Connects to `url` (postgres://user:password@host:port/dbname?..., or libpq's key=value
  // form) and migrates its schema, one controller at a time (an advisory lock).
  static Result<std::unique_ptr<PostgresStore>> Open(const std::string& url);
  ~PostgresStore() override;

  Result<Snapshot> Load() override;
  Status Commit(const Batch& batch) override;
  Identity identity() const override { return identity_; }
  Status SetIdentity(int64_t id) override;

  // From now on, each Commit first checks, in its transaction, that `epoch` is still the
  // leader's (holding the lease row shared until COMMIT, so a takeover waits for it); one that
  // is not fails with Conflict and writes nothing. 0 = no fencing (a lone server).
  void FenceWithEpoch(int64_t epoch) { epoch_ = epoch; }

 private:
  struct Impl;
  explicit PostgresStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  int64_t epoch_ = 0;
  Identity identity_;  // meta's store_id and commits
};

// `url` with its password replaced by "***", for messages and logs.
std::string RedactPostgresUrl(const std::string& url);

// Whether a store setting names PostgreSQL (postgres:// or postgresql://).
bool IsPostgresUrl(const std::string& url);

}  // namespace baton::store
