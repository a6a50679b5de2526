// Bearer tokens and what they may do. Roles: `user` (own jobs), `admin` (everything), `agent`
// (the node protocol only). The registry knows tokens only by their SHA-256: the secrets are
// in the hands of their holders (and, for the two made at start, in admin.token and
// agent.token), never in the store. Tokens are added and revoked while the server runs, so
// the registry takes a lock; lookups share it.
#pragma once

#include <map>
#include <shared_mutex>
#include <string>
#include <string_view>

#include "core/status.h"

namespace baton::api {

enum class Role { kUser, kAdmin, kAgent };

std::string_view RoleName(Role role);
Result<Role> ParseRole(std::string_view name);

struct Identity {
  std::string user;
  Role role = Role::kUser;
};

class TokenRegistry {
 public:
  // A token by its secret (the two made at start).
  void Add(const std::string& token, Identity identity);
  // A token by the hash of its secret (the store's).
  void AddHash(const std::string& hash, Identity identity);
  void RemoveHash(const std::string& hash);
  // Checks an Authorization header ("Bearer TOKEN").
  Result<Identity> Authenticate(const std::string& header) const;

 private:
  mutable std::shared_mutex mu_;
  std::map<std::string, Identity, std::less<>> by_hash_;
};

// A new random token: 256 bits from the kernel's generator, hex-encoded.
Result<std::string> NewToken();

// SHA-256 of `secret`, lowercase hex (OpenSSL's libcrypto).
std::string TokenHash(std::string_view secret);

}  // namespace baton::api
