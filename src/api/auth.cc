#include "api/auth.h"

#include <openssl/evp.h>

#include <cctype>
#include <cstdio>
#include <mutex>

#include "core/text.h"

namespace baton::api {

void TokenTable::AddFixed(std::string_view secret, Identity identity) {
  std::unique_lock lock(mu_);
  by_hash_[TokenHash(secret)] = std::move(identity);
}

void TokenTable::Apply(const std::vector<store::Token>& records) {
  std::unique_lock lock(mu_);
  for (const store::Token& t : records) {
    if (t.revoked) {
      by_hash_.erase(t.hash);
    } else {
      by_hash_[t.hash] = Identity{.user = t.user, .role = t.role, .token_id = t.id};
    }
  }
}

Result<Identity> TokenTable::Authenticate(std::string_view header) const {
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
  std::string hash = TokenHash(header.substr(kBearer.size()));
  std::shared_lock lock(mu_);
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return Err(Unauthenticated("unknown token"));
  return it->second;
}

Result<std::string> NewToken() {
  std::string hex = RandomHex(32);
  if (hex.empty()) return Err(Internal("getrandom failed"));
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
