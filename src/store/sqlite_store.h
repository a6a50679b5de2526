// The embedded store: one SQLite database in WAL mode with synchronous=FULL, so a Commit that
// returned has been fsynced. Jobs are kept as JSON records (codec's record form) keyed by id.
// Not thread-safe: one owner (the controller loop) calls it.
#pragma once

#include <memory>
#include <string>

#include "store/identity.h"
#include "store/store.h"

namespace baton::store {

class SqliteStore : public Store, public Identified {
 public:
  // Opens (creating if needed) the database at `path` and migrates its schema.
  static Result<std::unique_ptr<SqliteStore>> Open(const std::string& path);
  ~SqliteStore() override;

  Result<Snapshot> Load() override;
  Status Commit(const Batch& batch) override;
  Identity identity() const override;
  Status SetIdentity(int64_t id) override;

 private:
  struct Impl;
  static Result<std::unique_ptr<SqliteStore>> OpenUnlabelled(const std::string& path);
  Result<Snapshot> LoadUnlabelled();
  explicit SqliteStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton::store
