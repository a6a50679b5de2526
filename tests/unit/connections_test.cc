// The HTTP server's connection caps: past a cap the oldest idle connection (of the peer at its
// cap, else of all) is closed for room; busy ones never are; with none idle, refused.
#include "api/connections.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace baton::api {
namespace {

TEST(ConnectionCaps, AQuarterOfTheDescriptorsIsKeptForEverythingElse) {
  EXPECT_EQ(CapsFromLimit(20000).total, 15000u);
  EXPECT_EQ(CapsFromLimit(20000).per_peer, 7500u);
  EXPECT_EQ(CapsFromLimit(1024).total, 768u);  // 256 kept at least
  EXPECT_EQ(CapsFromLimit(100).total, 64u);
}

// After a flood (1024 open or more at once), once three quarters of them have closed, the
// memory their buffers held is handed back (ReleaseFreeMemory, here counted); not after the
// ordinary coming and going of connections.
TEST(Connections, ADrainedFloodHandsItsMemoryBack) {
  int released = 0;
  Connections book({.total = 5000}, [&released] { ++released; });
  std::vector<uint64_t> ids;
  for (int i = 0; i < 1000; ++i) ids.push_back(book.Open("10.0.0." + std::to_string(i % 200)));
  for (int i = 0; i < 990; ++i) book.Closed(ids[i]);
  EXPECT_EQ(released, 0) << "1000 at once is no flood";
  ids.erase(ids.begin(), ids.begin() + 990);
  for (int i = 0; i < 2000; ++i) ids.push_back(book.Open("10.0.1." + std::to_string(i % 200)));
  ASSERT_EQ(book.counts().open, 2010u);
  for (int i = 0; i < 1500; ++i) book.Closed(ids[i]);
  EXPECT_EQ(released, 0) << "510 open: more than a quarter of the peak";
  for (int i = 1500; i < 1510; ++i) book.Closed(ids[i]);
  EXPECT_EQ(released, 1) << "500 open, a quarter of the peak: drained";
  for (int i = 1510; i < 2010; ++i) book.Closed(ids[i]);
  EXPECT_EQ(released, 1) << "the peak starts again from what was open then";
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
