#include "sched/feasibility.h"

#include <gtest/gtest.h>

#include <deque>

#include "sched/placement.h"

namespace baton::sched {
namespace {

// Nodes as agents describe them, kept alive for the KnownNode pointers.
class Cluster {
 public:
  Cluster& Add(std::string name, int gpus, std::string model, std::string pool = "default",
               int cpus = 64, bool refuses_root = false) {
    NodeInfo n;
    n.name = std::move(name);
    n.pool = std::move(pool);
    n.cpus = cpus;
    n.memory_bytes = 512LL << 30;
    n.refuses_root_jobs = refuses_root;
    int64_t memory = model.find("40GB") != std::string::npos ? 40LL << 30 : 80LL << 30;
    for (int i = 0; i < gpus; ++i)
      n.gpus.push_back(Gpu{.index = i, .model = model, .memory_bytes = memory});
    infos_.push_back(std::move(n));
    known_.push_back(KnownNode{.info = &infos_.back()});
    return *this;
  }
  Cluster& Awaited(std::string name) {
    NodeInfo n;
    n.name = std::move(name);
    infos_.push_back(std::move(n));
    known_.push_back(KnownNode{.info = &infos_.back(), .registered = false});
    return *this;
  }
  const std::vector<KnownNode>& nodes() const { return known_; }

 private:
  std::deque<NodeInfo> infos_;
  std::vector<KnownNode> known_;
};

Resources Ask(int gpus, int nodes = 0, std::string type = "") {
  Resources r;
  r.milli_gpus = gpus * 1000;
  r.nodes = nodes;
  r.gpu_type = std::move(type);
  return r;
}

Cluster EightGpuNodes(int count) {
  Cluster c;
  for (int i = 0; i < count; ++i) c.Add("dgx" + std::to_string(i), 8, "H100-80GB");
  return c;
}

TEST(Feasibility, AJobOfMoreGpusThanANodeGoesOnTheFewestWholeNodes) {
  Cluster c = EightGpuNodes(4);
  auto node_count = [&](int gpus) {
    auto f = CheckFeasible(c.nodes(), Ask(gpus), "default", false, "alice");
    EXPECT_TRUE(f) << f.error().message();
    return f ? f->resources.nodes : -1;
  };
  EXPECT_EQ(node_count(1), 1);
  EXPECT_EQ(node_count(8), 1);
  EXPECT_EQ(node_count(16), 2);  // 2 x 8, as Slurm's --gpus
  EXPECT_EQ(node_count(12), 2);  // 2 x 6
  EXPECT_EQ(node_count(9), 3);   // 3 x 3: the split must be even
  EXPECT_EQ(node_count(32), 4);
}

TEST(Feasibility, TooManyGpusForThePoolIsRefusedWithWhatItHas) {
  Cluster c = EightGpuNodes(2);
  auto f = CheckFeasible(c.nodes(), Ask(17), "default", false, "alice");
  ASSERT_FALSE(f);
  const std::string& m = f.error().message();
  EXPECT_NE(m.find("resources.gpus"), std::string::npos) << m;
  EXPECT_NE(m.find("17 GPUs"), std::string::npos) << m;
  EXPECT_NE(m.find("2 nodes of 8xH100-80GB"), std::string::npos) << m;
  EXPECT_NE(m.find("16 in all"), std::string::npos) << m;
}

TEST(Feasibility, ANamedNodeCountThatCannotHoldItHintsAtOneThatCan) {
  Cluster c = EightGpuNodes(4);
  auto f = CheckFeasible(c.nodes(), Ask(10, 1), "default", false, "alice");
  ASSERT_FALSE(f);
  EXPECT_NE(f.error().message().find("--nodes 2"), std::string::npos) << f.error().message();
  // A count that fits is kept as asked, even where fewer nodes would do.
  auto spread = CheckFeasible(c.nodes(), Ask(8, 4), "default", false, "alice");
  ASSERT_TRUE(spread) << spread.error().message();
  EXPECT_EQ(spread->resources.nodes, 4);
  // More nodes than the pool has.
  auto wide = CheckFeasible(c.nodes(), Ask(8, 8), "default", false, "alice");
  ASSERT_FALSE(wide);
  EXPECT_NE(wide.error().message().find("on 8 nodes (1 on each)"), std::string::npos)
      << wide.error().message();
}

TEST(Feasibility, AMissingGpuTypeNamesTheModelsThePoolHas) {
  Cluster c;
  c.Add("a", 8, "H100-80GB").Add("b", 4, "A100-40GB");
  auto f = CheckFeasible(c.nodes(), Ask(1, 0, "H200"), "default", false, "alice");
  ASSERT_FALSE(f);
  const std::string& m = f.error().message();
  EXPECT_NE(m.find("resources.gpu_type: no GPU of type H200"), std::string::npos) << m;
  EXPECT_NE(m.find("8xH100-80GB"), std::string::npos) << m;
  EXPECT_NE(m.find("4xA100-40GB"), std::string::npos) << m;
  // A type that exists counts only its own GPUs: 6 A100s are more than the one A100 node.
  auto a100 = CheckFeasible(c.nodes(), Ask(6, 1, "A100"), "default", false, "alice");
  ASSERT_FALSE(a100);
  EXPECT_NE(a100.error().message().find("largest node holds 4"), std::string::npos)
      << a100.error().message();
  auto h100 = CheckFeasible(c.nodes(), Ask(8, 0, "H100"), "default", false, "alice");
  EXPECT_TRUE(h100);
}

TEST(Feasibility, GpuMemoryCpusAndMemoryBeyondEveryNodeAreNamed) {
  Cluster c = EightGpuNodes(2);
  Resources r = Ask(1);
  r.gpu_memory_bytes = 100LL << 30;
  auto memory = CheckFeasible(c.nodes(), r, "default", false, "alice");
  ASSERT_FALSE(memory);
  EXPECT_NE(memory.error().message().find("resources.gpu_memory"), std::string::npos);
  EXPECT_NE(memory.error().message().find("the largest has 80GiB"), std::string::npos)
      << memory.error().message();
  r = Ask(1);
  r.cpus = 500;
  auto cpus = CheckFeasible(c.nodes(), r, "default", false, "alice");
  ASSERT_FALSE(cpus);
  EXPECT_NE(
      cpus.error().message().find("resources.cpus: no node has 500 CPUs (the largest has 64)"),
      std::string::npos)
      << cpus.error().message();
  r = Ask(0);
  r.memory_bytes = 1LL << 40;
  auto host = CheckFeasible(c.nodes(), r, "default", false, "alice");
  ASSERT_FALSE(host);
  EXPECT_NE(host.error().message().find("resources.memory"), std::string::npos);
}

TEST(Feasibility, PoolsAreJudgedApart) {
  Cluster c;
  c.Add("a", 8, "H100-80GB", "prod").Add("b", 2, "L40S-48GB", "dev");
  EXPECT_FALSE(CheckFeasible(c.nodes(), Ask(4), "dev", false, "alice"));
  EXPECT_TRUE(CheckFeasible(c.nodes(), Ask(4), "prod", false, "alice"));
  auto none = CheckFeasible(c.nodes(), Ask(1), "research", false, "alice");
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message().find("pools with nodes: dev, prod"), std::string::npos)
      << none.error().message();
  // A pool the configuration names may get its nodes later.
  auto configured = CheckFeasible(c.nodes(), Ask(1), "research", true, "alice");
  ASSERT_TRUE(configured);
  EXPECT_FALSE(configured->judged);
}

TEST(Feasibility, NodesNotKnownYetAreNotJudged) {
  Cluster empty;
  auto f = CheckFeasible(empty.nodes(), Ask(64), "default", false, "alice");
  ASSERT_TRUE(f);
  EXPECT_FALSE(f->judged);
  EXPECT_EQ(f->resources.nodes, 1);
  // After a restart, a node known only from the store has no GPUs yet.
  Cluster restarting = EightGpuNodes(1);
  restarting.Awaited("dgx9");
  EXPECT_TRUE(CheckFeasible(restarting.nodes(), Ask(16), "default", false, "alice"));
}

TEST(Feasibility, RootsJobsNeedANodeThatRunsThem) {
  Cluster c;
  c.Add("a", 8, "H100-80GB", "default", 64, true).Add("b", 8, "H100-80GB", "default", 64, true);
  auto f = CheckFeasible(c.nodes(), Ask(1), "default", false, "root");
  ASSERT_FALSE(f);
  EXPECT_NE(f.error().message().find("--allow-root-jobs"), std::string::npos)
      << f.error().message();
  EXPECT_TRUE(CheckFeasible(c.nodes(), Ask(1), "default", false, "alice"));
  c.Add("c", 8, "H100-80GB");
  auto one = CheckFeasible(c.nodes(), Ask(16), "default", false, "root");
  ASSERT_FALSE(one);  // one node runs root's jobs: 8 GPUs at most
}

TEST(Feasibility, AJobThatIsNotPreemptibleNeedsANodeThatIsNotSpot) {
  Cluster c;
  c.Add("s1", 8, "H100-80GB").Add("s2", 8, "H100-80GB");
  std::deque<NodeInfo> spot;  // the same nodes, as spot nodes
  std::vector<KnownNode> known;
  for (const KnownNode& k : c.nodes()) {
    spot.push_back(*k.info);
    spot.back().spot = true;
    known.push_back(KnownNode{.info = &spot.back()});
  }
  auto refused = CheckFeasible(known, Ask(1), "default", false, "alice", /*preemptible=*/false);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message(),
            "preemptible: the job is not preemptible, and every node of pool default is a spot "
            "node, where only preemptible jobs run (--preemptible lets it run there); pool "
            "default has 2 nodes of 8xH100-80GB (64 CPUs, 512GiB)");
  EXPECT_TRUE(CheckFeasible(known, Ask(16), "default", false, "alice", true));
  // Beside one on-demand node, only it counts: 8 GPUs at most, and the spot ones are said.
  NodeInfo od = *c.nodes()[0].info;
  od.name = "od";
  known.push_back(KnownNode{.info = &od});
  EXPECT_TRUE(CheckFeasible(known, Ask(8), "default", false, "alice", false));
  auto big = CheckFeasible(known, Ask(16), "default", false, "alice", false);
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().message().find("2 more are spot nodes, where only preemptible jobs run"),
            std::string::npos)
      << big.error().message();
}

TEST(NodeLimits, AJobGoesNowhereItsUserIsRefusedOrItCouldNotStart) {
  NodeSlots refusing;
  refusing.name = "a";
  refusing.refuses_root_jobs = true;
  NodeSlots plain;
  plain.name = "b";
  std::vector<std::string> failed = {"b"};
  EXPECT_FALSE(NodeLimits{.root = true}.Allows(refusing));
  EXPECT_TRUE(NodeLimits{.root = false}.Allows(refusing));
  EXPECT_TRUE(NodeLimits{.root = true}.Allows(plain));
  EXPECT_FALSE(NodeLimits{.avoid = &failed}.Allows(plain));
  NodeSlots spot;
  spot.name = "c";
  spot.spot = true;
  EXPECT_FALSE(NodeLimits{.no_spot = true}.Allows(spot));
  EXPECT_TRUE(NodeLimits{.no_spot = false}.Allows(spot));
  EXPECT_TRUE(NodeLimits{.no_spot = true}.Allows(plain));
  EXPECT_TRUE(NodeLimits{.avoid = &failed}.Allows(refusing));
}

}  // namespace
}  // namespace baton::sched

namespace baton::sched {
namespace {

NodeSlots FreeNode(std::string name, int free_gpus, int gpus, int free_cpus) {
  NodeSlots n;
  n.name = std::move(name);
  for (int i = 0; i < gpus; ++i) {
    n.gpus.push_back(GpuSlot{.index = i,
                             .model = "H100-80GB",
                             .memory_bytes = 80LL << 30,
                             .free_milli = i < free_gpus ? 1000 : 0,
                             .free_memory_bytes = 80LL << 30});
  }
  n.total_cpus = 64;
  n.free_cpus = free_cpus;
  n.total_memory_bytes = n.free_memory_bytes = 512LL << 30;
  return n;
}

TEST(Shortfall, SaysWhichPartOfTheRequestIsShortNow) {
  ClusterView v;
  v.nodes = {FreeNode("a", 3, 8, 64), FreeNode("b", 8, 8, 4)};
  Resources r;
  r.milli_gpus = 8000;
  r.cpus = 16;
  EXPECT_EQ(Shortfall(v, r, "default"),
            "CPUs: the nodes with the GPUs free have at most 4 free, 16 asked");
  r.cpus = 0;
  EXPECT_EQ(Shortfall(v, r, "default"), "");  // it fits on b (what holds it back is elsewhere)
  v.nodes[1] = FreeNode("b", 5, 8, 64);
  EXPECT_EQ(Shortfall(v, r, "default"), "GPUs: at most 5 free on one node, 8 asked");
  r.gpu_type = "A100";
  EXPECT_EQ(Shortfall(v, r, "default"),
            "GPU type: no free GPU of type A100 (the free ones are other models)");
  r.gpu_type = "";
  r.gpu_memory_bytes = 100LL << 30;
  EXPECT_EQ(Shortfall(v, r, "default"), "GPU memory: no free GPU has 100GiB");
  Resources gang;
  gang.milli_gpus = 8000;
  gang.nodes = 2;
  EXPECT_EQ(Shortfall(v, gang, "default"), "nodes: only 1 has 4 GPUs free, 2 asked");
  v.nodes = {FreeNode("a", 0, 8, 64)};
  EXPECT_EQ(Shortfall(v, gang, "default"), "GPUs: none free in pool default");
  Resources cpu_only;
  cpu_only.cpus = 128;
  EXPECT_EQ(Shortfall(v, cpu_only, "default"), "CPUs: nodes have at most 64 free, 128 asked");
}

TEST(Feasibility, NamedNodesMustBeNodesOfThePoolThatHoldTheirPart) {
  Cluster c;
  c.Add("gpu01", 8, "H100-80GB").Add("gpu02", 8, "H100-80GB").Add("small", 2, "H100-80GB");
  c.Add("other", 8, "H100-80GB", "batch");
  auto check = [&](Resources r) { return CheckFeasible(c.nodes(), r, "default", false, "alice"); };
  Resources r = Ask(8);
  r.nodelist = {"gpu09"};
  EXPECT_EQ(check(r).error().message(),
            "resources.nodelist: no node gpu09 (pool default has gpu01, gpu02, small)");
  r.nodelist = {"other"};
  EXPECT_EQ(check(r).error().message(),
            "resources.nodelist: node other is in pool batch, not default");
  r.nodelist = {"small"};
  EXPECT_NE(check(r).error().message().find("node small (2xH100-80GB (64 CPUs, 512GiB)) cannot "
                                            "hold its part, 8 GPUs"),
            std::string::npos)
      << check(r).error().message();
  // Named nodes count: 16 GPUs on two named nodes, or one named and one the placer picks.
  r = Ask(16);
  r.nodelist = {"gpu02", "gpu01"};
  EXPECT_EQ(check(r)->resources.nodes, 2);
  r.nodelist = {"gpu02"};
  EXPECT_EQ(check(r)->resources.nodes, 2);
  // Two named for 2 GPUs: one each.
  r = Ask(2);
  r.nodelist = {"gpu01", "small"};
  EXPECT_EQ(check(r)->resources.nodes, 2);
  r = Ask(3);
  r.nodelist = {"gpu01", "small"};
  EXPECT_NE(check(r).error().message().find("3 GPUs do not split evenly over the 2 nodes"),
            std::string::npos);
  // Excluded nodes do not count toward what the pool can hold.
  r = Ask(16);
  r.exclude = {"gpu01"};
  EXPECT_FALSE(check(r).has_value());
  r.exclude = {"gpu01", "gpu02", "small"};
  EXPECT_NE(check(r).error().message().find("resources.exclude: no node of pool default is left"),
            std::string::npos);
  r.exclude = {"nowhere"};
  EXPECT_EQ(check(r).error().message(),
            "resources.exclude: no node nowhere (pool default has gpu01, gpu02, small)");
}

}  // namespace
}  // namespace baton::sched
