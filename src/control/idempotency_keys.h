// The Idempotency-Keys of submits (docs/api.md#idempotency-key): per user and key, the first
// job the submit made and how many. A repeat finds them instead of making new ones. Kept across
// restarts: each key recorded goes into the next store batch (TakeNew), and a restore reads
// them back. Owned by the Controller; not thread-safe.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "store/store.h"

namespace baton::control {

class IdempotencyKeys {
 public:
  // The keys a store snapshot holds. REQUIRES: before any Record.
  void Restore(const std::vector<store::IdempotencyEntry>& entries);
  // The submit `user` made with `key` before; nullptr when none.
  const store::IdempotencyEntry* Find(const std::string& user, const std::string& key) const;
  // A submit's key and the jobs it made, kept from now on and written by the next batch.
  void Record(store::IdempotencyEntry entry);
  // The keys recorded since the last call: the store batch's.
  std::vector<store::IdempotencyEntry> TakeNew();

  size_t size() const { return keys_.size(); }

 private:
  static std::string KeyOf(const std::string& user, const std::string& key) {
    return user + '\n' + key;
  }

  std::unordered_map<std::string, store::IdempotencyEntry> keys_;  // by KeyOf
  std::vector<store::IdempotencyEntry> new_;
};

}  // namespace baton::control
