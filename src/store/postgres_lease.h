// Who leads, among controllers that share one PostgreSQL database: a lease in its `leader`
// row. A controller that takes the lease raises the row's epoch (the fencing token): its store
// commits (PostgresStore::FenceWithEpoch) and its orders to agents carry that epoch, so a
// controller that lost the lease can change nothing once another has taken it. Expiry is
// judged by PostgreSQL's clock alone, so controllers' clocks need not agree.
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
  // Connects to `url` (whose schema PostgresStore::Open has migrated).
  static Result<std::unique_ptr<PostgresLease>> Open(const std::string& url);
  ~PostgresLease();

  // Takes the lease for `ttl` when nobody holds a live one: the new epoch, or nullopt when
  // another controller leads.
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
