// Who leads, among controllers that share one PostgreSQL database: a lease in its `leader`
// row. A controller that takes the lease raises the row's epoch (the fencing token): its store
// commits (PostgresStore::FenceWithEpoch) and its orders to agents carry that epoch, so a
// controller that lost the lease can change nothing once another has taken it. Expiry is
// judged by PostgreSQL's clock alone, so controllers' clocks need not agree; and a holder whose
// lease connection PostgreSQL saw end (the process died) loses it at once.
// Its own connection, so that renewals never wait behind the loop's commits. Not thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/status.h"
#include "core/time.h"

namespace baton::store {

struct Leadership {
  std::string holder;  // the leading controller's id ("" = none yet)
  std::string url;     // where it serves
  int64_t epoch = 0;
  bool live = false;  // its lease has not expired
};

class PostgresLease {
 public:
  // Connects to `url` (whose schema PostgresStore::Open has migrated) as controller `holder`
  // (at most 56 bytes: PostgreSQL keeps 63 of a connection's name).
  static Result<std::unique_ptr<PostgresLease>> Open(const std::string& url,
                                                     const std::string& holder);
  ~PostgresLease();

  // Takes the lease for `ttl` when nobody holds a live one: the new epoch, or nullopt when
  // another controller leads. A lease is dead when it expired, or at once when its holder's
  // lease connection has gone (PostgreSQL saw the process end: a kill -9, a crash), so a
  // standby need not wait for it to expire. A holder cut off from PostgreSQL can commit
  // nothing (the fence), and stops once it cannot renew.
  Result<std::optional<int64_t>> TryAcquire(const std::string& holder, const std::string& url,
                                            Duration ttl);
  // Extends the lease of `epoch` by `ttl` from now; Conflict when another controller has
  // taken it since.
  Status Renew(int64_t epoch, Duration ttl);
  // Ends the lease of `epoch` at once (a clean stop), so that a standby takes over without
  // waiting for it to expire.
  Status Release(int64_t epoch);
  Result<Leadership> Current();

 private:
  struct Impl;
  explicit PostgresLease(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace baton::store
