// The controller's side of the nodes (control/node_desk.h) alone: registering, drains, what a
// GPU's failure says and which jobs it hits, silent nodes lost and fenced. The controller's
// tests cover what it does with the jobs the desk returns (their stop and requeue).
#include "control/node_desk.h"

#include <gtest/gtest.h>

namespace baton::control {
namespace {

using std::chrono::seconds;

const TimePoint kT0 = FromMillis(1'790'000'000'000);

NodeInfo TwoGpus(const std::string& name) {
  NodeInfo info;
  info.name = name;
  info.cpus = 16;
  info.memory_bytes = int64_t{64} << 30;
  for (int g = 0; g < 2; ++g) info.gpus.push_back(Gpu{.index = g, .model = "A100-80GB"});
  return info;
}

class NodeDeskTest : public ::testing::Test {
 protected:
  NodeDeskTest() {
    options_.node_timeout = seconds(60);
    options_.fence_grace = seconds(10);
  }

  // Job `id` running on half of GPU `gpu` of `node` (as the controller's SetState leaves it).
  void Running(int64_t id, const std::string& node, int gpu, bool requeue = true) {
    Job& j = jobs_[JobId{id}];
    j.id = JobId{id};
    j.state = JobState::kRunning;
    j.spec.requeue = requeue;
    j.spec.resources.milli_gpus = 500;
    j.allocation.push_back(
        NodeAllocation{.node = node, .gpus = {gpu}, .milli_per_gpu = 500, .started = true});
    running_.emplace(j.id, &j, RunningJobs::Kept{});
    desk_.Find(node)->running.insert(j.id);
  }

  std::vector<std::string> Messages() {
    std::vector<std::string> out;
    for (const ClusterEvent& e : events_.TakeNew()) out.push_back(e.message);
    return out;
  }

  ControllerOptions options_;
  std::map<JobId, Job> jobs_;
  RunningJobs running_;
  sched::ClusterView view_;
  EventRing events_;
  sched::JobQueue queue_;
  std::vector<store::Drain> drains_;
  NodeDesk desk_{NodeDesk::Shared{.options = options_,
                                  .jobs = jobs_,
                                  .running = running_,
                                  .view = view_,
                                  .events = events_,
                                  .queue = queue_,
                                  .drains = drains_}};
};

TEST_F(NodeDeskTest, ANodeThatJoinsIsReadyWithItsSlotsAndAnAdminsGpuDrainIsKept) {
  ASSERT_TRUE(desk_.Join(TwoGpus("n1"), kT0).has_value());
  EXPECT_EQ(Messages(), std::vector<std::string>{"node n1 joined with 2 GPUs"});
  const sched::NodeSlots* slots = view_.FindNode("n1");
  ASSERT_NE(slots, nullptr);
  EXPECT_TRUE(slots->schedulable);
  ASSERT_EQ(slots->gpus.size(), 2u);
  EXPECT_TRUE(slots->gpus[1].usable);

  Status refused = desk_.Drain(DrainNode{.caller = {.user = "ann"}, .node = "n1", .drain = true});
  EXPECT_EQ(refused.message(), "only an admin drains or undrains nodes");
  EXPECT_EQ(
      desk_
          .Drain(DrainNode{
              .caller = {.user = "root", .admin = true}, .node = "n1", .gpus = {2}, .drain = true})
          .message(),
      "gpus: node n1 has no GPU 2");
  ASSERT_TRUE(desk_
                  .Drain(DrainNode{.caller = {.user = "root", .admin = true},
                                   .node = "n1",
                                   .gpus = {1},
                                   .reason = "fan",
                                   .drain = true})
                  .ok());
  EXPECT_FALSE(view_.FindNode("n1")->gpus[1].usable);
  EXPECT_TRUE(view_.FindNode("n1")->gpus[0].usable);
  ASSERT_EQ(drains_.size(), 1u);  // for the batch's store batch
  EXPECT_EQ(drains_[0].node, "n1");
  EXPECT_EQ(drains_[0].gpu, 1);
  EXPECT_EQ(drains_[0].reason, "fan");
}

TEST_F(NodeDeskTest, AFailedGpuIsFencedAndTheJobsOnItAreReturnedToBeStopped) {
  NodeRecord* node = *desk_.Join(TwoGpus("n1"), kT0);
  Messages();
  Running(7, "n1", 0);
  Running(8, "n1", 0, /*requeue=*/false);
  Running(9, "n1", 1);
  std::vector<NodeDesk::Hit> hits = desk_.Health(
      *node,
      {GpuHealth{.index = 0, .state = GpuHealthState::kReset, .reason = "xid 79", .since = kT0}},
      kT0 + seconds(5));
  ASSERT_EQ(hits.size(), 2u);  // not job 9, on the other GPU
  EXPECT_EQ(hits[0].job, JobId{7});
  EXPECT_EQ(hits[1].job, JobId{8});
  EXPECT_EQ(hits[0].detail, "GPU 0 of n1 failed: xid 79");
  EXPECT_EQ(Messages(),
            std::vector<std::string>{
                "GPU 0 of n1 failed: xid 79; out of service until it passes a health check; "
                "requeued job 7; stopped job 8 (never requeued: it fails)"});
  EXPECT_FALSE(view_.FindNode("n1")->gpus[0].usable);

  // The same fault said again hits nothing more; its recovery brings the GPU back.
  EXPECT_TRUE(
      desk_
          .Health(
              *node,
              {GpuHealth{
                  .index = 0, .state = GpuHealthState::kReset, .reason = "xid 79", .since = kT0}},
              kT0 + seconds(6))
          .empty());
  EXPECT_TRUE(desk_.Health(*node, {}, kT0 + seconds(7)).empty());
  EXPECT_EQ(Messages(),
            std::vector<std::string>{"GPU 0 of n1 passed its health check and is back in service"});
  EXPECT_TRUE(view_.FindNode("n1")->gpus[0].usable);
}

TEST_F(NodeDeskTest, AReclaimNoticeTakesTheNodeOutAndStopsItsJobsWithTheTimeLeft) {
  NodeRecord* node = *desk_.Join(TwoGpus("spot1"), kT0);
  Messages();
  Running(7, "spot1", 0);
  Running(8, "spot1", 1);
  const ReclaimNotice notice{
      .source = "aws", .seen = kT0 + seconds(10), .deadline = kT0 + seconds(130)};
  std::vector<NodeDesk::Hit> hits = desk_.Reclaim(*node, notice, false, kT0 + seconds(10));
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(hits[0].job, JobId{7});
  EXPECT_EQ(hits[1].job, JobId{8});
  EXPECT_EQ(hits[0].reason, StopReason::kPreempt);
  EXPECT_EQ(hits[0].grace, seconds(120));  // until the deadline
  EXPECT_EQ(hits[0].detail,
            "preempted: its spot node spot1 is taken back (aws reclaim notice, deadline "
            "2026-09-21T14:15:30.000Z)");
  EXPECT_EQ(Messages(), std::vector<std::string>{
                            "node spot1: spot reclaim notice (aws): taken back at "
                            "2026-09-21T14:15:30.000Z; 2 jobs stop to be requeued elsewhere"});
  EXPECT_FALSE(view_.FindNode("spot1")->schedulable);
  EXPECT_EQ(ShownState(*node), NodeState::kDrained);

  // Every report says it again: no second event; a deadline already past still gives 1 s.
  EXPECT_EQ(desk_.Reclaim(*node, notice, false, kT0 + seconds(200))[0].grace, seconds(1));
  EXPECT_TRUE(Messages().empty());

  // A registration without one (a new machine of the name) returns the node to service.
  ASSERT_TRUE(desk_.Join(TwoGpus("spot1"), kT0 + seconds(300)).has_value());
  EXPECT_TRUE(desk_.Reclaim(*node, std::nullopt, true, kT0 + seconds(300)).empty());
  EXPECT_TRUE(view_.FindNode("spot1")->schedulable);
  EXPECT_EQ(ShownState(*node), NodeState::kReady);
}

TEST_F(NodeDeskTest, AReclaimCoolsOffTheOtherSpotNodesOfItsPoolForAWhile) {
  NodeInfo spot1 = TwoGpus("spot1"), spot2 = TwoGpus("spot2"), od = TwoGpus("od1"),
           elsewhere = TwoGpus("spot3");
  spot1.spot = spot2.spot = elsewhere.spot = true;
  elsewhere.pool = "other";
  NodeRecord* first = *desk_.Join(spot1, kT0);
  for (const NodeInfo& info : {spot2, od, elsewhere}) ASSERT_TRUE(desk_.Join(info, kT0));
  Messages();
  desk_.Reclaim(*first, ReclaimNotice{.source = "gcp", .seen = kT0, .deadline = kT0 + seconds(30)},
                false, kT0);
  EXPECT_EQ(Messages(), std::vector<std::string>{
                            "node spot1: spot reclaim notice (gcp): taken back at "
                            "2026-09-21T14:13:50.000Z; 0 jobs stop to be requeued elsewhere; pool "
                            "default's other spot nodes take no new jobs until "
                            "2026-09-21T14:18:20.000Z (reclaim_cooloff)"});
  // The pool's other spot node waits; its on-demand node and another pool's spot node do not.
  EXPECT_FALSE(view_.FindNode("spot2")->schedulable);
  EXPECT_EQ(desk_.Find("spot2")->cooling_until, kT0 + std::chrono::minutes(5));
  EXPECT_TRUE(view_.FindNode("od1")->schedulable);
  EXPECT_TRUE(view_.FindNode("spot3")->schedulable);

  // Its agent registering again (or a restart) does not end the cool-off; time does.
  ASSERT_TRUE(desk_.Join(spot2, kT0 + std::chrono::minutes(4)));
  desk_.Watch(kT0 + std::chrono::minutes(4));
  EXPECT_FALSE(view_.FindNode("spot2")->schedulable);
  ASSERT_TRUE(desk_.Join(spot2, kT0 + std::chrono::minutes(5)));
  desk_.Watch(kT0 + std::chrono::minutes(5));
  EXPECT_TRUE(view_.FindNode("spot2")->schedulable);
  EXPECT_FALSE(desk_.Find("spot2")->cooling_until.has_value());
}

TEST_F(NodeDeskTest, LaunchFailuresAJobProvedNotItsOwnDrainANodeAtTheLimit) {
  options_.drain_after_launch_failures = 2;
  ASSERT_TRUE(desk_.Join(TwoGpus("bad"), kT0).has_value());
  ASSERT_TRUE(desk_.Join(TwoGpus("good"), kT0).has_value());
  events_.TakeNew();
  desk_.Find("bad")->launch_failures = 1;
  Job job;
  job.id = JobId{4};
  job.state = JobState::kRunning;
  job.launch_failed_on = {"bad"};
  job.allocation = {NodeAllocation{.node = "good", .started = true}};
  LaunchBlame blame;
  blame.Watch(job);
  EXPECT_TRUE(desk_.BlameLaunchFailures(blame, job, kT0));  // counted: the job's record changed
  EXPECT_EQ(job.launch_blamed, 1);
  const std::string reason =
      "launch failures: 2 jobs in a row could not start here and started on other nodes (last: "
      "job 4)";
  EXPECT_EQ(desk_.Find("bad")->drain_reason, reason);
  EXPECT_FALSE(view_.FindNode("bad")->schedulable);
  ASSERT_EQ(drains_.size(), 1u);  // for the store
  EXPECT_EQ(drains_[0].node, "bad");
  EXPECT_TRUE(drains_[0].active);
  EXPECT_EQ(Messages(), std::vector<std::string>{"node bad drained: " + reason +
                                                 "; `baton undrain bad` returns it"});
  // Counted once: nothing more to blame, nothing changed.
  EXPECT_FALSE(desk_.BlameLaunchFailures(blame, job, kT0));
  EXPECT_EQ(drains_.size(), 1u);
}

TEST_F(NodeDeskTest, ASilentNodeIsLostAndFencedAndAReportOfAnOldSessionIsRefused) {
  ASSERT_TRUE(desk_.Join(TwoGpus("n1"), kT0).has_value());
  Running(7, "n1", 0);
  Messages();
  desk_.Watch(kT0 + seconds(60));  // not past the timeout yet
  EXPECT_TRUE(Messages().empty());
  desk_.Watch(kT0 + seconds(61));
  std::vector<std::string> said = Messages();
  ASSERT_EQ(said.size(), 1u);
  EXPECT_TRUE(said[0].starts_with("node n1 stopped reporting; its jobs are requeued at "))
      << said[0];
  EXPECT_EQ(desk_.Find("n1")->state, NodeRecord::State::kLost);
  EXPECT_FALSE(view_.FindNode("n1")->schedulable);
  // Its jobs come back only once its fence has passed (NodeWatch::FenceEnds).
  EXPECT_TRUE(desk_.Fenced(kT0 + seconds(73)).empty());
  ASSERT_EQ(desk_.Fenced(kT0 + seconds(74)).size(), 1u);

  AgentReport stale;
  stale.report.node = "n1";
  stale.report.session = 1;
  Result<NodeRecord*> heard = desk_.Heard(stale, kT0 + seconds(75));
  ASSERT_FALSE(heard.has_value());
  EXPECT_EQ(heard.error().message(), "node n1: unknown session; register again");
}

}  // namespace
}  // namespace baton::control
