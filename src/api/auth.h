// Bearer tokens and what they may do. Roles: `user` (own jobs), `admin` (everything), `agent`
// (the node protocol only). The registry is filled at start and read-only afterwards, so any
// thread may look up tokens.
#pragma once

#include <map>
#include <string>

#include "core/status.h"

namespace baton::api {

enum class Role { kUser, kAdmin, kAgent };

struct Identity {
  std::string user;
  Role role = Role::kUser;
};

class TokenRegistry {
 public:
  void Add(const std::string& token, Identity identity);
  // Checks an Authorization header ("Bearer TOKEN").
  Result<Identity> Authenticate(const std::string& header) const;

 private:
  std::map<std::string, Identity> tokens_;
};

// A new random token: 256 bits from the kernel's generator, hex-encoded.
Result<std::string> NewToken();

}  // namespace baton::api
