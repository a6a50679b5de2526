// The token book alone: who creates, revokes and lists, and what goes to the store.
#include "control/token_book.h"

#include <gtest/gtest.h>

namespace baton::control {
namespace {

const TimePoint kNow = FromMillis(1'790'000'000'000);
const Caller kAdmin{"root", true};
const Caller kAda{"ada", false};

CreateToken Make(Caller caller, std::string user, Role role, char fill) {
  return CreateToken{.caller = std::move(caller),
                     .user = std::move(user),
                     .role = role,
                     .name = "t",
                     .hash = std::string(64, fill)};
}

TEST(TokenBook, NumbersTokensAndHandsEachChangeToTheStoreOnce) {
  TokenBook book;
  auto a = book.Create(Make(kAdmin, "alice", Role::kUser, 'a'), kNow);
  ASSERT_TRUE(a.has_value()) << a.error().message();
  EXPECT_EQ(a->id, 1);
  EXPECT_EQ(a->hash, std::string(64, 'a'));  // with its hash, for the API's table
  EXPECT_EQ(a->created_at, kNow);
  EXPECT_EQ(book.Create(Make(kAda, "ada", Role::kUser, 'b'), kNow)->id, 2);
  EXPECT_EQ(book.TakeChanged().size(), 2u);
  EXPECT_TRUE(book.TakeChanged().empty());
}

TEST(TokenBook, AUserCreatesOnlyTheirOwnUserTokens) {
  TokenBook book;
  EXPECT_EQ(book.Create(Make(kAda, "ada", Role::kAdmin, 'a'), kNow).error().code(),
            Code::kPermissionDenied);
  EXPECT_EQ(book.Create(Make(kAda, "bob", Role::kUser, 'a'), kNow).error().code(),
            Code::kPermissionDenied);
  EXPECT_EQ(book.Create(Make(kAdmin, "Bob", Role::kUser, 'a'), kNow).error().code(),
            Code::kInvalidArgument);
  ASSERT_TRUE(book.Create(Make(kAdmin, "bob", Role::kAgent, 'a'), kNow).has_value());
  EXPECT_EQ(book.Create(Make(kAdmin, "carl", Role::kUser, 'a'), kNow).error().code(),
            Code::kConflict);                // the same secret
  EXPECT_EQ(book.TakeChanged().size(), 1u);  // refusals change nothing
}

TEST(TokenBook, TheOwnerOrAnAdminRevokesAndTwiceIsNoChange) {
  TokenBook book;
  (void)book.Create(Make(kAdmin, "alice", Role::kUser, 'a'), kNow);
  (void)book.Create(Make(kAdmin, "ada", Role::kUser, 'b'), kNow);
  (void)book.TakeChanged();
  EXPECT_EQ(book.Revoke(RevokeToken{kAda, 1}).error().code(), Code::kPermissionDenied);
  EXPECT_EQ(book.Revoke(RevokeToken{kAda, 9}).error().code(), Code::kNotFound);
  EXPECT_TRUE(book.Revoke(RevokeToken{kAda, 2})->revoked);
  EXPECT_EQ(book.TakeChanged().size(), 1u);
  EXPECT_TRUE(book.Revoke(RevokeToken{kAdmin, 2})->revoked);
  EXPECT_TRUE(book.TakeChanged().empty());
}

TEST(TokenBook, ListsWithoutHashesEverythingForAnAdminTheirOwnForAUser) {
  TokenBook book;
  book.Restore({store::Token{.id = 4, .hash = std::string(64, 'x'), .user = "ada"},
                store::Token{.id = 7, .hash = std::string(64, 'y'), .user = "bob"}});
  std::vector<store::Token> all = book.List(kAdmin);
  ASSERT_EQ(all.size(), 2u);
  for (const store::Token& t : all) EXPECT_TRUE(t.hash.empty());
  std::vector<store::Token> mine = book.List(kAda);
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_EQ(mine[0].id, 4);
  // Numbers go on after the highest restored one.
  EXPECT_EQ(book.Create(Make(kAdmin, "carl", Role::kUser, 'c'), kNow)->id, 8);
}

// Joining: a node gets one credential; a stored join token is used up, and lasts a day.
TEST(TokenBook, ANodeJoinsOnceAndAJoinTokenIsUsedUp) {
  TokenBook book;
  auto join = book.Create(Make(kAdmin, "root", Role::kJoin, 'j'), kNow);
  ASSERT_TRUE(join.has_value());
  book.TakeChanged();
  auto cred =
      book.Join(JoinNode{.node = "gpu01", .join_token = join->id, .hash = std::string(64, 'c')},
                kNow + std::chrono::hours(1));
  ASSERT_TRUE(cred.has_value()) << cred.error().message();
  EXPECT_EQ(cred->role, Role::kAgent);
  EXPECT_EQ(cred->user, "gpu01");
  auto changed = book.TakeChanged();
  ASSERT_EQ(changed.size(), 2u);  // the join token, used up, and the credential
  EXPECT_TRUE(changed[0].revoked);
  EXPECT_EQ(
      book.Join(JoinNode{.node = "gpu02", .join_token = join->id, .hash = std::string(64, 'd')},
                kNow)
          .error()
          .code(),
      Code::kUnauthenticated);
  // The reusable agent.token (id 0): no second credential for a node that has one.
  EXPECT_EQ(book.Join(JoinNode{.node = "gpu01", .hash = std::string(64, 'e')}, kNow).error().code(),
            Code::kConflict);
  EXPECT_TRUE(book.Join(JoinNode{.node = "gpu03", .hash = std::string(64, 'f')}, kNow).has_value());
  // A day later a join token no longer works.
  auto old = book.Create(Make(kAdmin, "root", Role::kJoin, 'o'), kNow);
  EXPECT_EQ(
      book.Join(JoinNode{.node = "gpu04", .join_token = old->id, .hash = std::string(64, 'g')},
                kNow + std::chrono::hours(25))
          .error()
          .code(),
      Code::kUnauthenticated);
}

TEST(TokenBook, RevokingANodeLetsItJoinAgain) {
  TokenBook book;
  ASSERT_TRUE(book.Join(JoinNode{.node = "gpu01", .hash = std::string(64, 'c')}, kNow).has_value());
  EXPECT_EQ(book.RevokeNodeCredentials(RevokeNode{kAda, "gpu01"}).error().code(),
            Code::kPermissionDenied);
  auto revoked = book.RevokeNodeCredentials(RevokeNode{kAdmin, "gpu01"});
  ASSERT_TRUE(revoked.has_value());
  ASSERT_EQ(revoked->size(), 1u);
  EXPECT_TRUE(revoked->at(0).hash.empty());  // no hash leaves in a reply
  EXPECT_EQ(book.RevokeNodeCredentials(RevokeNode{kAdmin, "gpu01"}).error().code(),
            Code::kNotFound);
  EXPECT_TRUE(book.Join(JoinNode{.node = "gpu01", .hash = std::string(64, 'd')}, kNow).has_value());
}

}  // namespace
}  // namespace baton::control
