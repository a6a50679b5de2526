// The launch orders of a job's attempt (control/launch_orders.h) alone: where each node's part
// stands in the gang, what only rank 0 gets, where checkpoints go. The controller's and the
// agents' tests cover the orders sent and what a job sees.
#include "control/launch_orders.h"

#include <gtest/gtest.h>

#include "control/master_ports.h"

namespace baton::control {
namespace {

NodeTable Nodes() {
  NodeTable nodes;
  nodes.Ensure("n1").info.address = "10.0.0.1";
  nodes.Ensure("n2");  // no address: its name
  return nodes;
}

// Job 42 of ann on two GPUs of n1 and one of n2, one process per GPU, attempt 3.
Job Gang() {
  Job job;
  job.id = JobId{42};
  job.user = "ann";
  job.restarts = 3;
  job.spec.command = {"train.py"};
  job.spec.project = "vision";
  job.spec.process_per_gpu = true;
  job.spec.interactive = Interactive::kStdin;
  job.spec.output_file = "out-%j.txt";
  job.allocation = {NodeAllocation{.node = "n1", .gpus = {0, 1}},
                    NodeAllocation{.node = "n2", .gpus = {3}}};
  return job;
}

TEST(LaunchOrders, EachNodeIsToldItsPlaceInTheGangAndOnlyRankZeroGetsTheSession) {
  Policy policy;
  std::vector<std::pair<std::string, Order>> orders = LaunchOrders(Gang(), Nodes(), policy);
  ASSERT_EQ(orders.size(), 2u);
  EXPECT_EQ(orders[0].first, "n1");
  EXPECT_EQ(orders[1].first, "n2");
  const LaunchOrder& a = orders[0].second.launch;
  const LaunchOrder& b = orders[1].second.launch;
  EXPECT_EQ(orders[0].second.kind, Order::Kind::kLaunch);
  EXPECT_EQ(a.job, JobId{42});
  EXPECT_EQ(a.attempt, 3);
  EXPECT_EQ(a.nodelist, "n1,n2");
  EXPECT_EQ(b.nodelist, "n1,n2");
  EXPECT_EQ(a.num_nodes, 2);
  EXPECT_EQ(a.node_rank, 0);
  EXPECT_EQ(b.node_rank, 1);
  EXPECT_EQ(a.processes, 2);  // one per GPU
  EXPECT_EQ(b.processes, 1);
  EXPECT_EQ(a.rank_offset, 0);
  EXPECT_EQ(b.rank_offset, 2);
  EXPECT_EQ(a.world_size, 3);
  EXPECT_EQ(b.world_size, 3);
  EXPECT_EQ(a.master_addr, "10.0.0.1");  // rank 0's address
  EXPECT_EQ(b.master_addr, "10.0.0.1");
  EXPECT_EQ(a.master_port, DefaultMasterPort(JobId{42}));
  EXPECT_EQ(a.gpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(b.gpus, (std::vector<int>{3}));
  // The session and the named output are the first process's.
  EXPECT_EQ(a.interactive, Interactive::kStdin);
  EXPECT_EQ(b.interactive, Interactive::kNone);
  EXPECT_EQ(a.output_file, "out-%j.txt");
  EXPECT_EQ(b.output_file, "");
  EXPECT_TRUE(a.checkpoint_dir.empty());  // no checkpoint root configured

  // Once again for one rank (an agent that never had its order): only that one.
  std::vector<std::pair<std::string, Order>> again = LaunchOrders(Gang(), Nodes(), policy, 1);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].first, "n2");
  EXPECT_EQ(again[0].second.launch.rank_offset, 2);
  EXPECT_EQ(again[0].second.launch.master_addr, "10.0.0.1");
}

TEST(LaunchOrders, CheckpointsGoUnderTheUserOrUnderTheProjectWhoseGroupReadsThem) {
  Policy policy;
  policy.checkpoint_root = "/ckpt";
  EXPECT_EQ(LaunchOrders(Gang(), Nodes(), policy)[0].second.launch.checkpoint_dir, "/ckpt/ann/42");
  policy.projects["vision"].checkpoint_group = "vision-team";
  const LaunchOrder shared = LaunchOrders(Gang(), Nodes(), policy)[1].second.launch;
  EXPECT_EQ(shared.checkpoint_dir, "/ckpt/project:vision/42");
  EXPECT_EQ(shared.checkpoint_group, "vision-team");
}

}  // namespace
}  // namespace baton::control
