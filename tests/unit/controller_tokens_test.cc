// The controller's tokens: who may create, list and revoke them, and that a revocation lasts.
#include <gtest/gtest.h>

#include "controller_fixture.h"

namespace baton::control {
namespace {

class ControllerTokenTest : public ControllerTest {
 protected:
  Answered<CreateToken> Create(Caller caller, std::string user, Role role, char fill = 'a') {
    return Run(CreateToken{.caller = std::move(caller),
                           .user = std::move(user),
                           .role = role,
                           .name = "t",
                           .hash = std::string(64, fill)});
  }
};

TEST_F(ControllerTokenTest, AnAdminCreatesTokensAUserOnlyTheirOwnUserTokens) {
  Caller admin{"root", true}, ada{"ada", false};
  auto made = Create(admin, "alice", Role::kUser);
  ASSERT_TRUE(made.status.ok()) << made.status.message();
  EXPECT_EQ(made->token.id, 1);
  EXPECT_EQ(made->token.hash, std::string(64, 'a'));
  EXPECT_EQ(Create(ada, "ada", Role::kUser, 'b').status.code(), Code::kOk);
  EXPECT_EQ(Create(ada, "ada", Role::kAdmin, 'c').status.code(), Code::kPermissionDenied);
  EXPECT_EQ(Create(ada, "alice", Role::kUser, 'c').status.code(), Code::kPermissionDenied);
  EXPECT_EQ(Create(admin, "Not A User", Role::kUser, 'c').status.code(), Code::kInvalidArgument);
  EXPECT_EQ(Create(admin, "bob", Role::kUser, 'a').status.code(),
            Code::kConflict);  // the same secret
}

TEST_F(ControllerTokenTest, ListingShowsNoHashesAndOnlyYourOwnUnlessAdmin) {
  Caller admin{"root", true}, ada{"ada", false};
  Create(admin, "alice", Role::kUser, 'a');
  Create(admin, "ada", Role::kUser, 'b');
  auto all = Run(ListTokens{admin});
  ASSERT_EQ(all->tokens.size(), 2u);
  for (const auto& t : all->tokens) EXPECT_TRUE(t.hash.empty());
  auto mine = Run(ListTokens{ada});
  ASSERT_EQ(mine->tokens.size(), 1u);
  EXPECT_EQ(mine->tokens[0].user, "ada");
}

TEST_F(ControllerTokenTest, ARevocationIsDurableAndOnlyTheOwnerOrAnAdminRevokes) {
  Caller admin{"root", true}, ada{"ada", false};
  Create(admin, "alice", Role::kUser, 'a');
  Create(admin, "ada", Role::kUser, 'b');
  EXPECT_EQ(Run(RevokeToken{ada, 1}).status.code(), Code::kPermissionDenied);
  EXPECT_EQ(Run(RevokeToken{ada, 9}).status.code(), Code::kNotFound);
  auto r = Run(RevokeToken{ada, 2});
  ASSERT_TRUE(r.status.ok());
  EXPECT_TRUE(r->token.revoked);
  EXPECT_EQ(r->token.hash, std::string(64, 'b'));  // the service forgets it by its hash
  // A new controller from the store has both, the second revoked; ids are never reused.
  c_ = std::make_unique<Controller>();
  c_->Restore(*store_.Load(), now_);
  auto all = Run(ListTokens{admin});
  ASSERT_EQ(all->tokens.size(), 2u);
  EXPECT_FALSE(all->tokens[0].revoked);
  EXPECT_TRUE(all->tokens[1].revoked);
  EXPECT_EQ(Create(admin, "bob", Role::kUser, 'c')->token.id, 3);
}

}  // namespace
}  // namespace baton::control
