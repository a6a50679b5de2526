// The controller's side of users and tokens: creating, revoking and listing API tokens. The
// secrets never reach it; it keeps each token's hash, user, role and name durable, so that a
// token acknowledged as created works after any restart and a revoked one never again.
#include <cctype>

#include "control/controller.h"

namespace baton::control {
namespace {

// Unix user names as Debian's useradd takes them by default, since a job runs as its user.
bool IsValidUserName(const std::string& name) {
  if (name.empty() || name.size() > 32) return false;
  if (!(std::islower(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  for (char c : name) {
    unsigned char u = static_cast<unsigned char>(c);
    if (!(std::islower(u) || std::isdigit(u) || c == '_' || c == '-' || c == '.')) return false;
  }
  return true;
}

// The token as it is shown: without its hash.
store::Token Shown(store::Token t) {
  t.hash.clear();
  return t;
}

}  // namespace

Reply Controller::Tokens(const CreateToken& c, TimePoint now) {
  if (!IsValidUserName(c.user)) {
    return ErrorReply(InvalidArgument(
        "user: 1-32 of a-z, 0-9, '_', '-', '.', starting with a letter or '_' (a Unix user name)"));
  }
  if (c.name.size() > 64) return ErrorReply(InvalidArgument("name: at most 64 bytes"));
  if (!c.caller.admin && (c.user != c.caller.user || c.role != Role::kUser)) {
    return ErrorReply(PermissionDenied(
        "a user creates only user tokens for themself; an admin creates the others"));
  }
  if (c.hash.size() != 64) return ErrorReply(InvalidArgument("hash: must be 64 hex digits"));
  for (const auto& [id, t] : tokens_) {
    if (t.hash == c.hash) return ErrorReply(Conflict("that token exists already"));
  }
  int64_t id = tokens_.empty() ? 1 : tokens_.rbegin()->first + 1;
  store::Token t{
      .id = id, .hash = c.hash, .user = c.user, .role = c.role, .name = c.name, .created_at = now};
  tokens_[id] = t;
  new_tokens_.push_back(t);
  Reply r;
  r.created = true;
  r.tokens.push_back(std::move(t));  // with its hash: the service registers it
  return r;
}

Reply Controller::Tokens(const RevokeToken& c) {
  auto it = tokens_.find(c.id);
  if (it == tokens_.end())
    return ErrorReply(NotFound("token " + std::to_string(c.id) + " does not exist"));
  store::Token& t = it->second;
  if (!c.caller.admin && t.user != c.caller.user) {
    return ErrorReply(
        PermissionDenied("token " + std::to_string(c.id) + " is not yours to revoke"));
  }
  if (!t.revoked) {
    t.revoked = true;
    new_tokens_.push_back(t);
  }
  Reply r;
  r.tokens.push_back(t);  // with its hash: the service forgets it
  return r;
}

Reply Controller::Tokens(const ListTokens& c) const {
  Reply r;
  for (const auto& [id, t] : tokens_) {
    if (c.caller.admin || t.user == c.caller.user) r.tokens.push_back(Shown(t));
  }
  return r;
}

}  // namespace baton::control
