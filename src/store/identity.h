// What a store knows about itself, so that a controller never takes an emptied store, one that
// lost its last commits (a deleted write-ahead log, an older backup) or another cluster's store
// for the one its data directory kept (docs/operations.md, "A lost store is never a new one").
#pragma once

#include <cstdint>

#include "core/status.h"

namespace baton::store {

struct Identity {
  int64_t id = 0;       // random, given once (SetIdentity); 0 = none yet: a new or emptied store
  int64_t commits = 0;  // batches committed over the store's whole life
  bool operator==(const Identity&) const = default;
};

// Implemented by the durable stores (SQLite, PostgreSQL) beside Store.
class Identified {
 public:
  virtual ~Identified() = default;
  // As Load read it, then advanced by each Commit that returned Ok (each counts one, in its
  // own transaction).
  virtual Identity identity() const = 0;
  // Gives the store the id `id` (not 0), durably and at once.
  virtual Status SetIdentity(int64_t id) = 0;
};

}  // namespace baton::store
