// The controller's FeasibilityCache: a request no set of its pool's nodes can hold is refused
// saying why, an alike request is answered from the cache, and a change of the nodes (said by
// MarkStale) is judged afresh.
#include "control/feasibility_cache.h"

#include <gtest/gtest.h>

namespace baton::control {
namespace {

NodeInfo Node(const std::string& name, int gpus) {
  NodeInfo info;
  info.name = name;
  for (int i = 0; i < gpus; ++i) {
    info.gpus.push_back(Gpu{.index = i,
                            .uuid = name + "-GPU-" + std::to_string(i),
                            .model = "H100-80GB",
                            .memory_bytes = 80LL << 30});
  }
  info.cpus = 64;
  info.memory_bytes = 512LL << 30;
  return info;
}

JobSpec Asking(int64_t milli_gpus) {
  JobSpec spec = SubmittedSpec();  // nodes 0: the controller chooses
  spec.command = {"true"};
  spec.resources.milli_gpus = milli_gpus;
  return spec;
}

class FeasibilityCacheTest : public ::testing::Test {
 protected:
  void Add(const std::string& name, int gpus) {
    NodeRecord& node = nodes_.Ensure(name);
    node.info = Node(name, gpus);
    node.state = NodeRecord::State::kReady;
  }
  NodeTable nodes_;
  AutoscalingPolicy scaling_;  // off, unless a test gives it templates
  FeasibilityCache cache_;
};

TEST_F(FeasibilityCacheTest, ARequestNoNodeCanHoldIsRefusedAndOneThatFitsGetsItsNodes) {
  Add("n1", 8);
  Add("n2", 8);
  auto fits = cache_.Check(nodes_, scaling_, Asking(16000), "ada", false);
  ASSERT_TRUE(fits.has_value()) << (fits ? "" : fits.error().message());
  EXPECT_EQ(fits->nodes, 2);  // resolved: the fewest whole nodes that hold it
  auto refused = cache_.Check(nodes_, scaling_, Asking(24000), "ada", false);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.error().message().find("2 nodes of 8xH100-80GB"), std::string::npos)
      << refused.error().message();
  ASSERT_EQ(cache_.Known(nodes_, scaling_).size(), 2u);
  EXPECT_EQ(cache_.Known(nodes_, scaling_)[0].info, &nodes_.Find("n1")->info);
}

TEST_F(FeasibilityCacheTest, AnAlikeRequestIsAnsweredFromTheCacheUntilTheNodesChange) {
  Add("n1", 8);
  ASSERT_FALSE(cache_.Check(nodes_, scaling_, Asking(16000), "ada", false).has_value());
  // A second node joins: until the controller says so the answer stands, as it was given.
  Add("n2", 8);
  EXPECT_FALSE(cache_.Check(nodes_, scaling_, Asking(16000), "ada", false).has_value());
  cache_.MarkStale();
  EXPECT_TRUE(cache_.Check(nodes_, scaling_, Asking(16000), "ada", false).has_value());
  EXPECT_EQ(cache_.Known(nodes_, scaling_).size(), 2u);
}

TEST_F(FeasibilityCacheTest, RootsRequestsAreAnsweredApartFromOthers) {
  Add("n1", 8);
  nodes_.Find("n1")->info.refuses_root_jobs = true;
  EXPECT_TRUE(cache_.Check(nodes_, scaling_, Asking(1000), "ada", false).has_value());
  auto root = cache_.Check(nodes_, scaling_, Asking(1000), "root", false);
  ASSERT_FALSE(root.has_value());
  EXPECT_NE(root.error().message().find("root"), std::string::npos) << root.error().message();
}

TEST_F(FeasibilityCacheTest, OnlyTheLatestShapesAreKept) {
  Add("n1", 8);
  for (int64_t i = 1; i <= static_cast<int64_t>(FeasibilityCache::kShapes) + 1; ++i) {
    EXPECT_TRUE(cache_.Check(nodes_, scaling_, Asking(i * 10), "ada", false).has_value());
  }
  // The first shape was dropped: it is judged again, on the nodes as they are now.
  nodes_.Find("n1")->info = Node("n1", 0);
  EXPECT_FALSE(cache_.Check(nodes_, scaling_, Asking(10), "ada", false).has_value());
  // ... which took the place of the oldest kept (20); the next (30) is still the cached answer.
  EXPECT_TRUE(cache_.Check(nodes_, scaling_, Asking(30), "ada", false).has_value());
}

TEST_F(FeasibilityCacheTest, ARequestOnlyATemplateHoldsIsFeasibleWithAutoscalingOn) {
  Add("n1", 8);
  const JobSpec gpus16 = Asking(16000);  // two nodes of 8
  ASSERT_FALSE(cache_.Check(nodes_, scaling_, gpus16, "ada", false).has_value());
  scaling_.provider = {"/bin/true"};
  scaling_.templates = {NodeTemplate{
      .name = "h100", .gpu_spec = "8xH100-80GB", .gpus = 8, .gpu_model = "H100-80GB", .max = 2}};
  cache_.MarkStale();
  auto fits = cache_.Check(nodes_, scaling_, gpus16, "ada", false);
  ASSERT_TRUE(fits.has_value()) << fits.error().message();
  // Four nodes of 8: more than n1 and the template's two.
  EXPECT_FALSE(cache_.Check(nodes_, scaling_, Asking(32000), "ada", false).has_value());
  // The template's nodes are named as autoscaling names them, and none twice.
  EXPECT_EQ(cache_.Known(nodes_, scaling_).size(), 3u);
  EXPECT_EQ(cache_.Known(nodes_, scaling_)[2].info->name, "h100-2");
}

}  // namespace
}  // namespace baton::control
