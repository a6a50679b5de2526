#include "control/idempotency_keys.h"

#include <utility>

namespace baton::control {

void IdempotencyKeys::Restore(const std::vector<store::IdempotencyEntry>& entries) {
  for (const store::IdempotencyEntry& e : entries) keys_[KeyOf(e.user, e.key)] = e;
}

const store::IdempotencyEntry* IdempotencyKeys::Find(const std::string& user,
                                                     const std::string& key) const {
  auto it = keys_.find(KeyOf(user, key));
  return it == keys_.end() ? nullptr : &it->second;
}

void IdempotencyKeys::Record(store::IdempotencyEntry entry) {
  keys_[KeyOf(entry.user, entry.key)] = entry;
  new_.push_back(std::move(entry));
}

std::vector<store::IdempotencyEntry> IdempotencyKeys::TakeNew() {
  std::vector<store::IdempotencyEntry> out = std::move(new_);
  new_.clear();
  return out;
}

}  // namespace baton::control
