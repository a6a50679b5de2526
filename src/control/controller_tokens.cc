// The controller's token commands, answered from its TokenBook (control/token_book.h).
#include "control/controller.h"

namespace baton::control {

Result<TokenShown> Controller::Tokens(const CreateToken& c, TimePoint now) {
  ASSIGN_OR_RETURN(store::Token t, tokens_.Create(c, now));
  return TokenShown{std::move(t)};
}

Result<TokenShown> Controller::Tokens(const RevokeToken& c) {
  ASSIGN_OR_RETURN(store::Token t, tokens_.Revoke(c));
  return TokenShown{std::move(t)};
}

Result<TokenShown> Controller::Tokens(const JoinNode& c, TimePoint now) {
  ASSIGN_OR_RETURN(store::Token t, tokens_.Join(c, now));
  return TokenShown{std::move(t)};
}

Result<TokenList> Controller::Tokens(const RevokeNode& c) {
  ASSIGN_OR_RETURN(std::vector<store::Token> revoked, tokens_.RevokeNodeCredentials(c));
  return TokenList{std::move(revoked)};
}

}  // namespace baton::control
