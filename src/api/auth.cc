#include "api/auth.h"

#include <openssl/evp.h>
#include <sys/random.h>

#include <cctype>
#include <cstdio>
#include <mutex>

namespace baton::api {

std::string_view RoleName(Role role) {
  switch (role) {
    case Role::kUser:
      return "user";
    case Role::kAdmin:
      return "admin";
    case Role::kAgent:
      return "agent";
  }
  return "user";
}

Result<Role> ParseRole(std::string_view name) {
  if (name == "user") return Role::kUser;
  if (name == "admin") return Role::kAdmin;
  if (name == "agent") return Role::kAgent;
  return Err(InvalidArgument("role: must be user, admin or agent"));
}

void TokenRegistry::Add(const std::string& token, Identity identity) {
  AddHash(TokenHash(token), std::move(identity));
}

void TokenRegistry::AddHash(const std::string& hash, Identity identity) {
  std::unique_lock lock(mu_);
  by_hash_[hash] = std::move(identity);
}

void TokenRegistry::RemoveHash(const std::string& hash) {
  std::unique_lock lock(mu_);
  by_hash_.erase(hash);
}

Result<Identity> TokenRegistry::Authenticate(const std::string& header) const {
  constexpr std::string_view kBearer = "Bearer ";
  if (header.empty()) return Err(Unauthenticated("missing Authorization: Bearer TOKEN header"));
  // The scheme is case-insensitive (RFC 9110 §11.1): "bearer TOKEN" is as good.
  auto scheme_is_bearer = [&] {
    for (size_t i = 0; i < kBearer.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(header[i])) !=
          std::tolower(static_cast<unsigned char>(kBearer[i]))) {
        return false;
      }
    }
    return true;
  };
  if (header.size() <= kBearer.size() || !scheme_is_bearer()) {
    return Err(Unauthenticated("the Authorization header must be \"Bearer TOKEN\""));
  }
  std::string hash = TokenHash(std::string_view(header).substr(kBearer.size()));
  std::shared_lock lock(mu_);
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return Err(Unauthenticated("unknown token"));
  return it->second;
}

Result<std::string> NewToken() {
  unsigned char bytes[32];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n <= 0) return Err(Internal("getrandom failed"));
    got += static_cast<size_t>(n);
  }
  std::string hex;
  char buf[3];
  for (unsigned char b : bytes) {
    std::snprintf(buf, sizeof buf, "%02x", b);
    hex += buf;
  }
  return hex;
}

std::string TokenHash(std::string_view secret) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(secret.data(), secret.size(), digest, &len, EVP_sha256(), nullptr);
  std::string hex;
  char buf[3];
  for (unsigned int i = 0; i < len; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", digest[i]);
    hex += buf;
  }
  return hex;
}

}  // namespace baton::api
