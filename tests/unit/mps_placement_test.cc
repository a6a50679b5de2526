// The scheduler under MPS (issue 42): a node whose agent runs an MPS daemon per shared GPU
// (NodeSlots::mps) gives each GPU's fractions to one user at a time, since MPS serves another
// user's clients only once the first's are gone. A node without MPS packs anyone's fractions.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "sched/placement.h"
#include "sched/reservations.h"
#include "sched/scheduler.h"
#include "sched_harness.h"

namespace baton::sched {
namespace {

Resources Gpus(int64_t milli) {
  Resources r;
  r.milli_gpus = milli;
  return r;
}

ClusterView View(int gpus, bool mps) {
  NodeSlots node = testing::MakeNode("n1", gpus);
  node.mps = mps;
  ClusterView v;
  v.AddNode(std::move(node));
  return v;
}

// The GPU a fraction of `user`'s goes to now, taken; -1 when none.
int Take(Placer& placer, const Resources& r, std::string_view user) {
  auto a = placer.Place(r, PlaceRules{.limits = NodeLimits{.user = user}});
  return a ? a->at(0).gpus.at(0) : -1;
}

TEST(MpsPlacement, EachUsersFractionsShareAGpuOfTheirOwn) {
  ClusterView v = View(2, /*mps=*/true);
  Placer placer(v);
  const Resources half = Gpus(500), quarter = Gpus(250);
  EXPECT_EQ(Take(placer, half, "alice"), 0);
  EXPECT_EQ(Take(placer, half, "bob"), 1);  // not the half alice's job leaves free
  EXPECT_EQ(Take(placer, quarter, "alice"), 0);
  EXPECT_EQ(Take(placer, quarter, "bob"), 1);
  // A third user finds 0.5 GPUs free and none of it theirs to share.
  EXPECT_EQ(Take(placer, quarter, "carol"), -1);
  EXPECT_EQ(v.nodes[0].gpus[0].sharer, UserKey("alice"));
  EXPECT_EQ(v.nodes[0].gpus[1].sharer, UserKey("bob"));
}

TEST(MpsPlacement, WithoutMpsAnyonesFractionsPackOntoOneGpu) {
  ClusterView v = View(2, /*mps=*/false);
  Placer placer(v);
  EXPECT_EQ(Take(placer, Gpus(500), "alice"), 0);
  EXPECT_EQ(Take(placer, Gpus(500), "bob"), 0);
  EXPECT_EQ(Take(placer, Gpus(500), "carol"), 1);
}

TEST(MpsPlacement, AGpuWholeAgainGoesToAnyUser) {
  ClusterView v = View(1, /*mps=*/true);
  const Resources half = Gpus(500);
  std::vector<NodeAllocation> alice, alice2;
  {
    Placer placer(v);
    alice = *placer.Place(half, PlaceRules{.limits = NodeLimits{.user = "alice"}});
    alice2 = *placer.Place(half, PlaceRules{.limits = NodeLimits{.user = "alice"}});
  }
  // One of alice's jobs ends: the GPU is still hers.
  v.Apply(alice, half, -1, "alice");
  EXPECT_EQ(v.nodes[0].gpus[0].sharer, UserKey("alice"));
  {
    Placer placer(v);
    EXPECT_EQ(Take(placer, half, "bob"), -1);
  }
  // The other ends: whole, no one's.
  v.Apply(alice2, half, -1, "alice");
  EXPECT_EQ(v.nodes[0].gpus[0].sharer, 0u);
  Placer placer(v);
  EXPECT_EQ(Take(placer, half, "bob"), 0);
  EXPECT_EQ(v.nodes[0].gpus[0].sharer, UserKey("bob"));
  // A whole GPU's job makes no one its sharer.
  EXPECT_EQ(Take(placer, Gpus(1000), "carol"), -1);
}

TEST(MpsPlacement, ACopyOfTheViewKeepsWhoSharesEachGpu) {
  ClusterView v = View(2, /*mps=*/true);
  ClusterView copy;
  copy.CopyFrom(v);
  {
    Placer placer(v);
    ASSERT_EQ(Take(placer, Gpus(500), "alice"), 0);
  }
  copy.CopyFrom(v);  // only the changed node, as between passes
  EXPECT_EQ(copy.nodes[0].gpus[0].sharer, UserKey("alice"));
  Placer placer(copy);
  EXPECT_EQ(Take(placer, Gpus(500), "bob"), 1);
}

TEST(MpsPlacement, AShadowReservesAnotherUsersGpuForWhenItsJobsEnd) {
  ClusterView v = View(1, /*mps=*/true);
  const Resources half = Gpus(500);
  const std::string alice = "alice";
  std::vector<NodeAllocation> running;
  {
    Placer placer(v);
    running = *placer.Place(half, PlaceRules{.limits = NodeLimits{.user = alice}});
  }
  Placer placer(v);
  const TimePoint now{};
  const TimePoint end = now + std::chrono::hours(1);
  std::vector<Release> releases = {Release{end, &running, &half, &alice}};
  auto found = Shadow(placer, releases, half, "default", now, NodeLimits{.user = "bob"});
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->from, end);  // not now, on the free half of alice's GPU
  // The shadow put alice back as the GPU's sharer.
  EXPECT_EQ(v.nodes[0].gpus[0].sharer, UserKey(alice));
  EXPECT_EQ(v.nodes[0].gpus[0].free_milli, 500);
  // Alice's own next half fits now.
  EXPECT_EQ(Take(placer, half, alice), 0);
}

// A pass over users' half-GPU jobs, each its own user's, on a node with or without MPS.
PassResult PassOver(bool mps, const std::vector<std::string>& users) {
  static const std::string project = "p", pool = "default";
  static const Resources half = Gpus(500);
  PassInput in;
  in.view = View(2, mps);
  for (size_t i = 0; i < users.size(); ++i) {
    in.pending.push_back(PendingJob{.id = JobId{static_cast<int64_t>(i + 1)},
                                    .resources = &half,
                                    .project = &project,
                                    .user = &users[i],
                                    .pool = &pool});
  }
  return RunPass(std::move(in));
}

TEST(MpsPlacement, APassGivesEachUserAGpuAndTellsTheThirdWhyItWaits) {
  const std::vector<std::string> users = {"alice", "bob", "alice", "carol", "carol"};
  PassResult r = PassOver(/*mps=*/true, users);
  ASSERT_EQ(r.starts.size(), 3u);
  std::vector<int> gpu(6, -1);
  for (const Start& s : r.starts) gpu[s.id.value] = s.allocation.at(0).gpus.at(0);
  EXPECT_EQ(gpu[1], gpu[3]);  // alice's two halves share her GPU
  EXPECT_NE(gpu[1], gpu[2]);  // bob's is another
  EXPECT_EQ(gpu[4], -1);
  EXPECT_EQ(gpu[5], -1);
  ASSERT_EQ(r.waits.size(), 2u);
  const std::string words = r.texts.at(r.waits[0].text);
  EXPECT_NE(words.find("0.5 GPUs free in pool default (0.5 of it on GPUs that other users' "
                       "jobs share: MPS serves one user per GPU)"),
            std::string::npos)
      << words;

  // Without MPS the four halves fill both GPUs, whoever's they are.
  EXPECT_EQ(PassOver(/*mps=*/false, users).starts.size(), 4u);
}

TEST(MpsPlacement, AUsersFractionFitsWhereAnotherUsersOfTheSameShapeDidNot) {
  // Carol's half fails (both GPUs shared by others); bob's, of the same shape and later in the
  // pass, must still find the free half of his own GPU: a failed shape is not skipped for a
  // fraction under MPS.
  const std::vector<std::string> users = {"alice", "bob", "carol", "bob"};
  PassResult r = PassOver(/*mps=*/true, users);
  ASSERT_EQ(r.starts.size(), 3u);
  EXPECT_EQ(r.starts.back().id, JobId{4});
}

}  // namespace
}  // namespace baton::sched
