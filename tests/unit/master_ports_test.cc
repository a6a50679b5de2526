// Where a job's processes meet: its rank 0's rendezvous port and a batch script's step port,
// chosen so that no two jobs meeting on one node share one.
#include "control/master_ports.h"

#include <gtest/gtest.h>

namespace baton::control {
namespace {

Job Gang(int64_t id, std::vector<std::string> nodes, int gpus_per_node = 1) {
  Job j;
  j.id = JobId{id};
  for (const std::string& n : nodes) {
    NodeAllocation part{.node = n};
    for (int g = 0; g < gpus_per_node; ++g) part.gpus.push_back(g);
    j.allocation.push_back(part);
  }
  return j;
}

TEST(MasterPorts, OnlyJobsWhoseProcessesMeetOverTheNetworkNeedOne) {
  EXPECT_FALSE(MeetsOverNetwork(Gang(1, {"n1"}, 4)));  // one process on one node
  EXPECT_TRUE(MeetsOverNetwork(Gang(1, {"n1", "n2"})));
  Job per_gpu = Gang(1, {"n1"}, 2);
  per_gpu.spec.process_per_gpu = true;
  EXPECT_TRUE(MeetsOverNetwork(per_gpu));
  per_gpu.allocation.front().gpus = {0};  // one GPU: one process
  EXPECT_FALSE(MeetsOverNetwork(per_gpu));
  Job alloc = Gang(1, {"n1"});
  alloc.spec.alloc = true;  // serves `baton run --in` at its step port
  EXPECT_TRUE(MeetsOverNetwork(alloc));
}

TEST(MasterPorts, AJobMeetsAtItsDefaultPortUnlessTakenThenTheNextFreeOneWrappingInTheRange) {
  EXPECT_EQ(DefaultMasterPort(JobId{7}), 29507);
  EXPECT_EQ(DefaultMasterPort(JobId{10007}), 29507);
  std::set<int> used;
  EXPECT_EQ(TakeMasterPort(Gang(7, {"n1", "n2"}), used), 29507);
  EXPECT_EQ(TakeMasterPort(Gang(10007, {"n1", "n2"}), used), 29508);  // 29507 is taken
  used = {kFirstMasterPort + kMasterPorts - 1};
  Job last = Gang(kMasterPorts - 1, {"n1", "n2"});
  EXPECT_EQ(TakeMasterPort(last, used), kFirstMasterPort);  // wraps to the first
  // Its own MASTER_PORT wins, taken or not; one that is not a port does not count.
  Job own = Gang(7, {"n1", "n2"});
  own.spec.env = {{"MASTER_PORT", "29507"}};
  EXPECT_EQ(TakeMasterPort(own, used), 29507);
  own.spec.env = {{"MASTER_PORT", "70000"}};
  EXPECT_EQ(TakeMasterPort(own, used), 29508);  // 29507 was taken by its own just before
}

TEST(MasterPorts, RunningJobsHoldTheirPortsOnTheirRankZeroNodeAndStepPortsOnEveryNode) {
  RunningJobs running;
  Job a = Gang(1, {"n1", "n2"});
  a.state = JobState::kRunning;
  a.master_port = 29600;
  a.step_port = 29601;
  Job b = Gang(2, {"n2", "n3"});  // started before master_port was kept: its default
  b.state = JobState::kRunning;
  Job single = Gang(3, {"n1"});  // meets nowhere
  single.state = JobState::kRunning;
  for (Job* j : {&a, &b, &single}) running.emplace(j->id, j, RunningJobs::Kept{});
  PortsByNode ports = MasterPortsInUse(running);
  EXPECT_EQ(ports["n1"], (std::set<int>{29600, 29601}));
  EXPECT_EQ(ports["n2"], (std::set<int>{29502, 29601}));
  EXPECT_EQ(ports.count("n3"), 0u);

  // A batch script's step port: the first after its master port free on all of its nodes.
  Job script = Gang(4, {"n1", "n2"});
  script.master_port = 29600;
  EXPECT_EQ(TakeStepPort(script, ports), 29602);
  EXPECT_TRUE(ports["n1"].count(29602) && ports["n2"].count(29602));
}

}  // namespace
}  // namespace baton::control
