// The controller's token commands, answered from its TokenBook (control/token_book.h).
#include "control/controller.h"

namespace baton::control {

Reply Controller::Tokens(const CreateToken& c, TimePoint now) {
  Result<store::Token> t = tokens_.Create(c, now);
  if (!t) return ErrorReply(t.error());
  Reply r;
  r.created = true;
  r.tokens.push_back(std::move(*t));
  return r;
}

Reply Controller::Tokens(const RevokeToken& c) {
  Result<store::Token> t = tokens_.Revoke(c);
  if (!t) return ErrorReply(t.error());
  Reply r;
  r.tokens.push_back(std::move(*t));
  return r;
}

Reply Controller::Tokens(const JoinNode& c, TimePoint now) {
  Result<store::Token> t = tokens_.Join(c, now);
  if (!t) return ErrorReply(t.error());
  Reply r;
  r.created = true;
  r.tokens.push_back(std::move(*t));
  return r;
}

Reply Controller::Tokens(const RevokeNode& c) {
  Result<std::vector<store::Token>> t = tokens_.RevokeNodeCredentials(c);
  if (!t) return ErrorReply(t.error());
  Reply r;
  r.tokens = std::move(*t);
  return r;
}

Reply Controller::Tokens(const ListTokens& c) const {
  Reply r;
  r.tokens = tokens_.List(c.caller);
  return r;
}

}  // namespace baton::control
