#include "control/token_book.h"

#include <cctype>

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

}  // namespace

void TokenBook::Restore(std::vector<store::Token> tokens) {
  for (store::Token& t : tokens) tokens_[t.id] = std::move(t);
}

Result<store::Token> TokenBook::Create(const CreateToken& c, TimePoint now) {
  if (!IsValidUserName(c.user)) {
    return Err(InvalidArgument(
        "user: 1-32 of a-z, 0-9, '_', '-', '.', starting with a letter or '_' (a Unix user name)"));
  }
  if (c.name.size() > 64) return Err(InvalidArgument("name: at most 64 bytes"));
  if (!c.caller.admin && (c.user != c.caller.user || c.role != Role::kUser)) {
    return Err(PermissionDenied(
        "a user creates only user tokens for themself; an admin creates the others"));
  }
  if (c.hash.size() != 64) return Err(InvalidArgument("hash: must be 64 hex digits"));
  for (const auto& [id, t] : tokens_) {
    if (t.hash == c.hash) return Err(Conflict("that token exists already"));
  }
  int64_t id = tokens_.empty() ? 1 : tokens_.rbegin()->first + 1;
  store::Token t{
      .id = id, .hash = c.hash, .user = c.user, .role = c.role, .name = c.name, .created_at = now};
  tokens_[id] = t;
  changed_.push_back(t);
  return t;
}

Result<store::Token> TokenBook::Revoke(const RevokeToken& c) {
  auto it = tokens_.find(c.id);
  if (it == tokens_.end())
    return Err(NotFound("token " + std::to_string(c.id) + " does not exist"));
  store::Token& t = it->second;
  if (!c.caller.admin && t.user != c.caller.user) {
    return Err(PermissionDenied("token " + std::to_string(c.id) + " is not yours to revoke"));
  }
  if (!t.revoked) {
    t.revoked = true;
    changed_.push_back(t);
  }
  return t;
}

Result<store::Token> TokenBook::Join(const JoinNode& c, TimePoint now) {
  if (c.hash.size() != 64) return Err(InvalidArgument("hash: must be 64 hex digits"));
  store::Token* join = nullptr;
  if (c.join_token != 0) {
    auto it = tokens_.find(c.join_token);
    if (it == tokens_.end() || it->second.role != Role::kJoin || it->second.revoked) {
      return Err(Unauthenticated("the join token was used already or revoked"));
    }
    if (now - it->second.created_at > std::chrono::hours(24)) {
      return Err(
          Unauthenticated("the join token has expired (a join token lasts a day): make "
                          "another with `baton node join-token`"));
    }
    join = &it->second;
  }
  for (const auto& [id, t] : tokens_) {
    if (t.role == Role::kAgent && t.user == c.node && !t.revoked) {
      return Err(Conflict("node " + c.node +
                          " has joined already and holds a credential: an agent that lost it "
                          "joins again after `baton node revoke " +
                          c.node + "`"));
    }
    if (t.hash == c.hash) return Err(Conflict("that token exists already"));
  }
  if (join != nullptr) {
    join->revoked = true;
    changed_.push_back(*join);
  }
  int64_t id = tokens_.empty() ? 1 : tokens_.rbegin()->first + 1;
  store::Token t{.id = id,
                 .hash = c.hash,
                 .user = c.node,
                 .role = Role::kAgent,
                 .name = "node " + c.node,
                 .created_at = now};
  tokens_[id] = t;
  changed_.push_back(t);
  return t;
}

Result<std::vector<store::Token>> TokenBook::RevokeNodeCredentials(const RevokeNode& c) {
  if (!c.caller.admin) return Err(PermissionDenied("only an admin revokes a node's credential"));
  std::vector<store::Token> revoked;
  for (auto& [id, t] : tokens_) {
    if (t.role != Role::kAgent || t.user != c.node || t.revoked) continue;
    t.revoked = true;
    changed_.push_back(t);
    revoked.push_back(t);
    revoked.back().hash.clear();
  }
  if (revoked.empty()) return Err(NotFound("node " + c.node + " has no credential that works"));
  return revoked;
}

std::vector<store::Token> TokenBook::List(const Caller& caller) const {
  std::vector<store::Token> out;
  for (const auto& [id, t] : tokens_) {
    if (!caller.admin && t.user != caller.user) continue;
    out.push_back(t);
    out.back().hash.clear();
  }
  return out;
}

std::vector<store::Token> TokenBook::TakeChanged() {
  std::vector<store::Token> out = std::move(changed_);
  changed_.clear();
  return out;
}

}  // namespace baton::control
