// Autoscaling's decisions (control/autoscale_plan.h), a function of the templates, the nodes
// autoscaling made and the waiting jobs: what to resume, bin-packed and within each template's
// maximum and the resume rate; what failed to register in time; what idle nodes to suspend.
#include "control/autoscale_plan.h"

#include <gtest/gtest.h>

namespace baton::control {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

const TimePoint kT0 = FromMillis(1'790'000'000'000);

NodeTemplate Template(std::string name, int gpus, double price, bool spot = false, int max = 4) {
  return NodeTemplate{.name = std::move(name),
                      .gpus = gpus,
                      .gpu_model = "H100-80GB",
                      .gpu_memory_bytes = int64_t{80} << 30,
                      .cpus = 96,
                      .memory_bytes = int64_t{1} << 40,
                      .price_per_hour = price,
                      .spot = spot,
                      .max = max};
}

ScaleDemand Wants(int64_t id, int gpus, int nodes = 1, bool preemptible = true) {
  ScaleDemand d{.job = JobId{id}, .pool = "default", .preemptible = preemptible};
  d.resources.milli_gpus = int64_t{gpus} * 1000;
  d.resources.nodes = nodes;
  return d;
}

TEST(PlanScaling, WaitingJobsAreBinPackedOntoTheCheapestTemplateThatHoldsThem) {
  const std::vector<NodeTemplate> templates = {Template("h100x8", 8, 30),
                                               Template("h100x8-spot", 8, 12, /*spot=*/true)};
  // Two 4-GPU jobs share one spot node; a third job needs another.
  ScalePlan plan = PlanScaling(templates, {}, {Wants(1, 4), Wants(2, 4), Wants(3, 2)}, {}, kT0);
  ASSERT_EQ(plan.resumes.size(), 1u);
  EXPECT_EQ(plan.resumes[0].template_name, "h100x8-spot");
  EXPECT_EQ(plan.resumes[0].count, 2);
  EXPECT_EQ(plan.resumes[0].jobs, (std::vector<JobId>{JobId{1}, JobId{2}, JobId{3}}));
  EXPECT_EQ(plan.resumes[0].reason, "for 3 waiting jobs");

  // A job that is not preemptible never gets a spot node: the on-demand template, dearer.
  plan = PlanScaling(templates, {}, {Wants(4, 8, 1, /*preemptible=*/false)}, {}, kT0);
  ASSERT_EQ(plan.resumes.size(), 1u);
  EXPECT_EQ(plan.resumes[0].template_name, "h100x8");

  // One no template holds: said, nothing resumed.
  plan = PlanScaling(templates, {}, {Wants(5, 16)}, {}, kT0);
  EXPECT_TRUE(plan.resumes.empty());
  ASSERT_EQ(plan.unserved.size(), 1u);
  EXPECT_EQ(plan.unserved[0].second, "no template of pool default holds 16 GPUs");
}

TEST(PlanScaling, CapacityComingServesTheJobsItWasResumedForAndAGangGetsAllItsNodesOrNone) {
  const std::vector<NodeTemplate> templates = {Template("h100x8", 8, 30, false, /*max=*/3)};
  // The scan after the resume: the node is coming, the job still waits; nothing more.
  const std::vector<ScaledNode> coming = {
      {.name = "h100x8-1", .template_name = "h100x8", .since = kT0}};
  ScalePlan plan = PlanScaling(templates, coming, {Wants(1, 8)}, {}, kT0 + seconds(10));
  EXPECT_TRUE(plan.resumes.empty());
  EXPECT_TRUE(plan.unserved.empty());

  // A gang of 3 nodes with 1 coming and a max of 3: 3 more would pass it; none is resumed.
  plan = PlanScaling(templates, coming, {Wants(1, 8), Wants(2, 24, 3)}, {}, kT0 + seconds(10));
  EXPECT_TRUE(plan.resumes.empty());
  ASSERT_EQ(plan.unserved.size(), 1u);
  EXPECT_EQ(plan.unserved[0].second, "template h100x8 is at its max of 3 nodes");
  // A gang of 2: both at once.
  plan = PlanScaling(templates, coming, {Wants(1, 8), Wants(2, 16, 2)}, {}, kT0 + seconds(10));
  ASSERT_EQ(plan.resumes.size(), 1u);
  EXPECT_EQ(plan.resumes[0].count, 2);
  // A gang of 2 with room for one part on the coming node: one node more, not two.
  plan = PlanScaling(templates, coming, {Wants(2, 16, 2)}, {}, kT0 + seconds(10));
  ASSERT_EQ(plan.resumes.size(), 1u);
  EXPECT_EQ(plan.resumes[0].count, 1);
  EXPECT_EQ(plan.resumes[0].jobs, std::vector<JobId>{JobId{2}});

  // A gang of 2 with one ready node's room free and one node coming: nothing more.
  std::vector<ScaledNode> ready_and_coming = coming;
  ready_and_coming.push_back({.name = "h100x8-2",
                              .template_name = "h100x8",
                              .state = ScaledNode::State::kReady,
                              .since = kT0,
                              .free_milli = 8000});
  plan = PlanScaling(templates, ready_and_coming, {Wants(2, 16, 2)}, {}, kT0 + seconds(10));
  EXPECT_TRUE(plan.resumes.empty());
  EXPECT_TRUE(plan.unserved.empty());

  // The resume rate: what it does not allow now waits for a later scan.
  plan = PlanScaling(templates, {}, {Wants(1, 8), Wants(2, 8)}, {.resume_budget = 1}, kT0);
  ASSERT_EQ(plan.resumes.size(), 1u);
  EXPECT_EQ(plan.resumes[0].count, 1);
  ASSERT_EQ(plan.unserved.size(), 1u);
  EXPECT_EQ(plan.unserved[0].second, "the resume rate allows no more nodes now");
}

TEST(PlanScaling, AResumeThatNeverRegistersFailsAndIsSuspendedAtItsTimeout) {
  const std::vector<NodeTemplate> templates = {Template("h100x8", 8, 30)};
  const std::vector<ScaledNode> nodes = {
      {.name = "h100x8-1", .template_name = "h100x8", .since = kT0}};
  ScalePlan plan = PlanScaling(templates, nodes, {Wants(1, 8)}, {}, kT0 + minutes(9));
  EXPECT_TRUE(plan.failed.empty());
  plan = PlanScaling(templates, nodes, {Wants(1, 8)}, {}, kT0 + minutes(10));
  ASSERT_EQ(plan.failed.size(), 1u);
  EXPECT_EQ(plan.failed[0].node, "h100x8-1");
  EXPECT_EQ(plan.failed[0].reason, "it did not register within the resume timeout of 10m");
  ASSERT_EQ(plan.suspends.size(), 1u);
  EXPECT_EQ(plan.suspends[0].node, "h100x8-1");
  // Its job is not left waiting on it: another node is resumed in its place.
  ASSERT_EQ(plan.resumes.size(), 1u);
  EXPECT_EQ(plan.resumes[0].jobs, std::vector<JobId>{JobId{1}});
}

TEST(PlanScaling, IdleNodesAreSuspendedAfterTheIdleTimeButNeverBelowTheMinimum) {
  NodeTemplate t = Template("h100x8", 8, 30);
  t.min = 1;
  const std::vector<ScaledNode> nodes = {
      {.name = "a",
       .template_name = "h100x8",
       .state = ScaledNode::State::kReady,
       .idle_since = kT0},
      {.name = "b",
       .template_name = "h100x8",
       .state = ScaledNode::State::kReady,
       .idle_since = kT0 + minutes(1)},
      {.name = "c", .template_name = "h100x8", .state = ScaledNode::State::kReady, .busy = true}};
  EXPECT_TRUE(PlanScaling({t}, nodes, {}, {}, kT0 + minutes(9)).suspends.empty());
  ScalePlan plan = PlanScaling({t}, nodes, {}, {}, kT0 + minutes(11));
  // Both idle long enough; three live, a minimum of 1: both may go, the longest idle first.
  ASSERT_EQ(plan.suspends.size(), 2u);
  EXPECT_EQ(plan.suspends[0].node, "a");
  EXPECT_EQ(plan.suspends[0].reason, "idle for 11m");
  t.min = 2;
  plan = PlanScaling({t}, nodes, {}, {}, kT0 + minutes(11));
  ASSERT_EQ(plan.suspends.size(), 1u);
  EXPECT_EQ(plan.suspends[0].node, "a");

  // Below its minimum, a template is topped up with no job asking.
  t.min = 5;
  t.max = 8;
  plan = PlanScaling({t}, nodes, {}, {}, kT0);
  ASSERT_EQ(plan.resumes.size(), 1u);
  EXPECT_EQ(plan.resumes[0].count, 2);
  t.max = 4;  // never past its maximum
  EXPECT_EQ(PlanScaling({t}, nodes, {}, {}, kT0).resumes.at(0).count, 1);
  EXPECT_EQ(plan.resumes[0].reason, "its minimum of 5 nodes");
}

TEST(PlanScaling, ANodeSuspendingDoesNotKeepItsTemplatesMinimum) {
  NodeTemplate t = Template("h100x8", 8, 30);
  t.min = 1;
  const std::vector<ScaledNode> nodes = {
      {.name = "going", .template_name = "h100x8", .state = ScaledNode::State::kSuspending},
      {.name = "idle",
       .template_name = "h100x8",
       .state = ScaledNode::State::kReady,
       .idle_since = kT0}};
  ScalePlan plan = PlanScaling({t}, nodes, {}, {}, kT0 + minutes(30));
  EXPECT_TRUE(plan.suspends.empty());  // the one that stays is the minimum
  EXPECT_TRUE(plan.resumes.empty());
}

TEST(PlanScaling, SharesCountAsWholeGpusAnExclusiveJobGetsANodeAloneAndANodelistNone) {
  const std::vector<NodeTemplate> templates = {Template("h100x2", 2, 10)};
  // Three 0.6-GPU shares do not fit two GPUs: two nodes.
  ScaleDemand share = Wants(1, 0);
  share.resources.milli_gpus = 600;
  ScaleDemand share2 = share, share3 = share;
  share2.job = JobId{2};
  share3.job = JobId{3};
  ScalePlan plan = PlanScaling(templates, {}, {share, share2, share3}, {}, kT0);
  ASSERT_EQ(plan.resumes.size(), 1u);
  EXPECT_EQ(plan.resumes[0].count, 2);

  ScaleDemand alone = Wants(4, 1);
  alone.resources.exclusive = true;
  plan = PlanScaling(templates, {}, {alone, Wants(5, 1)}, {}, kT0);
  ASSERT_EQ(plan.resumes.size(), 1u);
  EXPECT_EQ(plan.resumes[0].count, 2);  // job 5 does not share job 4's node

  ScaleDemand named = Wants(6, 1);
  named.resources.nodelist = {"gpu01"};
  plan = PlanScaling(templates, {}, {named}, {}, kT0);
  EXPECT_TRUE(plan.resumes.empty());
  ASSERT_EQ(plan.unserved.size(), 1u);
  EXPECT_EQ(plan.unserved[0].second,
            "it names its nodes (--nodelist): autoscaling starts none for it");
}

TEST(PlanScaling, ANodeAJobMustNotBeGivenIsNoCapacityForItAndItsResumeNamesOthers) {
  const std::vector<NodeTemplate> templates = {Template("h100", 8, 30, false, /*max=*/2)};
  // The job could not start on h100-1, ready and idle: a new node for it, not h100-1 again.
  ScaledNode ready{.name = "h100-1",
                   .template_name = "h100",
                   .state = ScaledNode::State::kReady,
                   .since = kT0,
                   .idle_since = kT0,
                   .free_milli = 8000,
                   .free_cpus = 96,
                   .free_memory = int64_t{1} << 40};
  ScaleDemand d = Wants(1, 8);
  d.exclude = {"h100-1"};
  ScalePlan plan = PlanScaling(templates, {ready}, {d}, {}, kT0 + seconds(10));
  ASSERT_EQ(plan.resumes.size(), 1u);
  EXPECT_EQ(plan.resumes[0].count, 1);
  EXPECT_EQ(plan.resumes[0].avoid, std::vector<std::string>{"h100-1"});
  // A job that may go there counts on it.
  plan = PlanScaling(templates, {ready}, {Wants(2, 8)}, {}, kT0 + seconds(10));
  EXPECT_TRUE(plan.resumes.empty());

  // h100-1 suspended since: the template's max of 2 leaves one name it may have, h100-2.
  plan = PlanScaling(templates, {}, {d}, {}, kT0);
  ASSERT_EQ(plan.resumes.size(), 1u);
  EXPECT_EQ(plan.resumes[0].avoid, std::vector<std::string>{"h100-1"});
  // Both names barred: no resume, and why.
  d.exclude = {"h100-1", "h100-2", "other-1"};
  plan = PlanScaling(templates, {}, {d}, {}, kT0);
  EXPECT_TRUE(plan.resumes.empty());
  ASSERT_EQ(plan.unserved.size(), 1u);
  EXPECT_EQ(plan.unserved[0].second,
            "template h100 has no node left it may be given (not h100-1, h100-2)");
  // A gang of 2 that must not have h100-2: one name too few.
  ScaleDemand gang = Wants(3, 16, 2);
  gang.exclude = {"h100-2"};
  plan = PlanScaling(templates, {}, {gang}, {}, kT0);
  EXPECT_TRUE(plan.resumes.empty());
  ASSERT_EQ(plan.unserved.size(), 1u);
}

}  // namespace
}  // namespace baton::control
