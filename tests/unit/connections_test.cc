// The HTTP server's connection caps: past a cap the oldest idle connection (of the peer at its
// cap, else of all) is closed for room; busy ones never are; with none idle, refused.
#include "api/connections.h"

#include <gtest/gtest.h>

#include <vector>

namespace baton::api {
namespace {

TEST(ConnectionCaps, AQuarterOfTheDescriptorsIsKeptForEverythingElse) {
  EXPECT_EQ(CapsFromLimit(20000).total, 15000u);
  EXPECT_EQ(CapsFromLimit(20000).per_peer, 7500u);
  EXPECT_EQ(CapsFromLimit(1024).total, 768u);  // 256 kept at least
  EXPECT_EQ(CapsFromLimit(100).total, 64u);
}

TEST(Connections, PastTheCapTheOldestIdleIsClosedForRoom) {
  Connections book({.total = 3, .per_peer = 3});
  std::vector<int> closed;
  uint64_t a = book.Open("10.0.0.1"), b = book.Open("10.0.0.2"), c = book.Open("10.0.0.3");
  for (uint64_t id : {a, b, c}) {
    ASSERT_NE(id, 0u);
    book.SetCloser(id, [&closed, id] { closed.push_back(static_cast<int>(id)); });
  }
  book.SetIdle(a, false);  // serving a request (a long poll): never closed for room
  uint64_t d = book.Open("10.0.0.4");
  ASSERT_NE(d, 0u);
  EXPECT_EQ(closed, std::vector<int>{static_cast<int>(b)});  // the oldest idle one
  EXPECT_EQ(book.counts().open, 3u);
  EXPECT_EQ(book.counts().closed_for_room, 1u);
  book.Closed(b);  // its session ends afterwards: nothing more to forget
  EXPECT_EQ(book.counts().open, 3u);

  book.SetIdle(c, false);
  book.SetIdle(d, false);
  EXPECT_EQ(book.Open("10.0.0.5"), 0u);  // all busy: refused
  EXPECT_EQ(book.counts().refused, 1u);
  book.Closed(c);
  EXPECT_NE(book.Open("10.0.0.5"), 0u);
}

TEST(Connections, APeerAtItsCapMakesRoomFromItsOwn) {
  Connections book({.total = 100, .per_peer = 2});
  std::vector<uint64_t> closed;
  auto open = [&](const std::string& peer) {
    uint64_t id = book.Open(peer);
    if (id != 0) book.SetCloser(id, [&closed, id] { closed.push_back(id); });
    return id;
  };
  uint64_t agent = open("10.0.0.9");
  uint64_t f1 = open("10.0.0.66"), f2 = open("10.0.0.66");
  uint64_t f3 = open("10.0.0.66");  // the flood's third closes the flood's first, not the agent
  ASSERT_NE(f3, 0u);
  EXPECT_EQ(closed, std::vector<uint64_t>{f1});
  book.SetIdle(f2, false);
  book.SetIdle(f3, false);
  EXPECT_EQ(open("10.0.0.66"), 0u);
  EXPECT_NE(open("10.0.0.9"), 0u);  // another peer still gets in
  book.Closed(agent);
  EXPECT_EQ(book.counts().open, 3u);
}

}  // namespace
}  // namespace baton::api
