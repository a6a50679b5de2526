// The API tokens' records: each token's hash, user, role and name, revoked ones too, and who
// may create, revoke and list them. The secrets never reach it. The controller owns the one
// book; what changed in a batch goes to the store (so that a token acknowledged as created
// works after any restart, and a revoked one never again) and, once durable, to the API's
// read-only TokenTable. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "control/commands.h"
#include "store/store.h"

namespace baton::control {

class TokenBook {
 public:
  // REQUIRES: called once, before anything else.
  void Restore(std::vector<store::Token> tokens);
  // A user creates only user tokens for themself; an admin creates any. The record, with its
  // hash (for the API's table).
  Result<store::Token> Create(const CreateToken& c, TimePoint now);
  // The owner or an admin revokes; revoking twice is no change.
  Result<store::Token> Revoke(const RevokeToken& c);
  // A node's credential (role agent, its user the node's name) for an agent that joined; the
  // stored join token it used is used up. A stored join token works for a day after it was
  // made (as kubeadm's).
  Result<store::Token> Join(const JoinNode& c, TimePoint now);
  // Revokes the node's credentials: those revoked now (NotFound when none worked).
  Result<std::vector<store::Token>> RevokeNodeCredentials(const RevokeNode& c);
  // Without hashes: every token for an admin, a user's own for a user.
  std::vector<store::Token> List(const Caller& caller) const;
  // The records changed since the last call (the batch's).
  std::vector<store::Token> TakeChanged();

 private:
  std::map<int64_t, store::Token> tokens_;  // by id
  std::vector<store::Token> changed_;
};

}  // namespace baton::control
