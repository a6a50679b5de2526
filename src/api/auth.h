// Bearer tokens: who sends a request, and with which role (core/role.h). The controller owns
// the tokens: it creates and revokes them through commands and keeps their records durable.
// The TokenTable is the API's read-only copy for a lookup per request without a trip through
// the controller's loop: main fills it from the store's snapshot at start and then hands it
// each durable batch's changed records (LoopOptions::on_commit), before that batch's replies
// leave, so a token works once its creation is answered and never once its revocation is. It
// knows tokens only by their SHA-256: the secrets are in the hands of their holders (and, for
// the two made at start, in admin.token and agent.token), never in the store.
#pragma once

#include <map>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "control/commands.h"
#include "core/role.h"
#include "core/status.h"

namespace baton::api {

struct Identity {
  std::string user;  // for a node's credential (role agent): the node's name
  Role role = Role::kUser;
  int64_t token_id = 0;  // the stored token's id; 0 for admin.token and agent.token
};

// Thread-safe: lookups share a lock that Apply takes alone.
class TokenTable {
 public:
  // A token the store does not know, by its secret: admin.token and agent.token, made at start.
  void AddFixed(std::string_view secret, Identity identity);
  // The controller's records, new or changed: a revoked one stops working.
  void Apply(const std::vector<store::Token>& records);
  // Checks an Authorization header ("Bearer TOKEN").
  Result<Identity> Authenticate(std::string_view header) const;

 private:
  mutable std::shared_mutex mu_;
  std::map<std::string, Identity, std::less<>> by_hash_;
};

// A new random token: 256 bits from the kernel's generator, hex-encoded.
Result<std::string> NewToken();

// SHA-256 of `secret`, lowercase hex (OpenSSL's libcrypto).
std::string TokenHash(std::string_view secret);
// SHA-256 of `bytes`, lowercase hex (what TokenHash is; code snapshots are named by it).
inline std::string Sha256Hex(std::string_view bytes) { return TokenHash(bytes); }

}  // namespace baton::api
