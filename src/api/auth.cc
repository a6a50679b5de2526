#include "api/auth.h"

#include <sys/random.h>

#include <cstdio>

namespace baton::api {

void TokenRegistry::Add(const std::string& token, Identity identity) {
  tokens_[token] = std::move(identity);
}

Result<Identity> TokenRegistry::Authenticate(const std::string& header) const {
  constexpr std::string_view kBearer = "Bearer ";
  if (header.empty()) return Err(Unauthenticated("missing Authorization: Bearer TOKEN header"));
  if (header.size() <= kBearer.size() || header.compare(0, kBearer.size(), kBearer) != 0) {
    return Err(Unauthenticated("the Authorization header must be \"Bearer TOKEN\""));
  }
  std::string token = header.substr(kBearer.size());
  auto it = tokens_.find(token);
  if (it == tokens_.end()) return Err(Unauthenticated("unknown token"));
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

}  // namespace baton::api
