// A tunnel's order (who may open one, to what, sent where), an idle session's warning, and
// what stopping an idle session frees.
#include "control/session_orders.h"

#include <gtest/gtest.h>

namespace baton::control {
namespace {

const TimePoint kNow = FromMillis(1'794'312'000'000);

struct World {
  std::map<JobId, Job> jobs;
  NodeTable nodes;
  World() {
    for (const char* name : {"n1", "n2"}) nodes.Ensure(name).state = NodeRecord::State::kReady;
    Job& j = jobs[JobId{7}];
    j.id = JobId{7};
    j.user = "ada";
    j.state = JobState::kRunning;
    j.spec.interactive = Interactive::kTty;
    j.restarts = 2;
    j.allocation = {NodeAllocation{.node = "n1"}, NodeAllocation{.node = "n2"}};
  }
  Result<TunnelTo> Open(OpenTunnel c) {
    if (c.caller.user.empty()) c.caller.user = "ada";
    c.tunnel = "t1";
    return TunnelFor(c, jobs, nodes);
  }
};

TEST(SessionOrders, ASessionsTunnelGoesToItsFirstNodeForItsOwnerOnly) {
  World w;
  Result<TunnelTo> to = w.Open({.id = JobId{7}});
  ASSERT_TRUE(to) << to.error().message();
  EXPECT_EQ(to->node, "n1");
  EXPECT_EQ(to->job->id, JobId{7});
  EXPECT_EQ(to->order.kind, Order::Kind::kTunnel);
  EXPECT_EQ(to->order.tunnel.id, "t1");
  EXPECT_EQ(to->order.tunnel.attempt, 2);
  EXPECT_EQ(to->order.tunnel.port, 0);       // the session itself
  EXPECT_EQ(to->order.tunnel.step_key, "");  // never sent but to an allocation's host
  EXPECT_FALSE(w.Open({.caller = {.user = "bob"}, .id = JobId{7}}));
  EXPECT_TRUE(w.Open({.caller = {.user = "root", .admin = true}, .id = JobId{7}}));
  // A port of a job whose first part ended goes to the next node still running it.
  w.jobs.at(JobId{7}).allocation[0].ended = true;
  to = w.Open({.id = JobId{7}, .port = 8888});
  ASSERT_TRUE(to);
  EXPECT_EQ(to->node, "n2");
  // ...but its session was on the first: not connected.
  EXPECT_EQ(w.Open({.id = JobId{7}}).error().code(), Code::kUnavailable);
}

TEST(SessionOrders, ATunnelToWhatIsNotThereSaysWhy) {
  World w;
  EXPECT_EQ(w.Open({.id = JobId{99}}).error().code(), Code::kNotFound);
  Job& j = w.jobs.at(JobId{7});
  j.spec.interactive = Interactive::kNone;
  Status none = w.Open({.id = JobId{7}}).error();
  EXPECT_EQ(none.code(), Code::kConflict);
  EXPECT_NE(none.message().find("has no session to attach to"), std::string::npos);
  EXPECT_TRUE(w.Open({.id = JobId{7}, .port = 8888}));  // a port of a batch job is fine
  Status step = w.Open({.id = JobId{7}, .step = true}).error();
  EXPECT_NE(step.message().find("is not an allocation"), std::string::npos);
  j.spec.alloc = true;
  j.step_port = 29601;
  j.step_key = "k";
  Result<TunnelTo> host = w.Open({.id = JobId{7}, .step = true});
  ASSERT_TRUE(host);
  EXPECT_EQ(host->order.tunnel.port, 29601);
  EXPECT_EQ(host->order.tunnel.step_key, "k");
  w.nodes.Find("n1")->state = NodeRecord::State::kLost;
  EXPECT_EQ(w.Open({.id = JobId{7}, .step = true}).error().message(),
            "job 7's node is not connected");
  j.state = JobState::kPending;
  EXPECT_EQ(w.Open({.id = JobId{7}}).error().message(), "job 7 is pending: it is not running yet");
}

TEST(SessionOrders, AnIdleSessionIsWarnedAndItsStopSaysWhatItFrees) {
  World w;
  Job& j = w.jobs.at(JobId{7});
  j.spec.resources.milli_gpus = 2000;
  j.spec.time_limit = std::chrono::hours(4);
  j.started_at = kNow - std::chrono::hours(1);
  PoolPolicy pool;
  pool.idle_utilization_pct = 5;
  IdleSessions::Verdict v{.kind = IdleSessions::Verdict::Kind::kWarn,
                          .job = &j,
                          .pool = &pool,
                          .idle_for = std::chrono::minutes(50),
                          .left = std::chrono::minutes(10)};
  Order warn = IdleWarning(v);
  EXPECT_EQ(warn.kind, Order::Kind::kNote);
  EXPECT_EQ(warn.note.job, JobId{7});
  EXPECT_EQ(warn.note.attempt, 2);
  EXPECT_EQ(warn.note.message,
            "baton: this session has been idle for 50m (no client attached, GPUs below 5%); it "
            "will be stopped in 10m unless you attach (baton attach 7) or use its GPUs");
  Reclaimed r = ReclaimedSession(j, pool, std::chrono::hours(1), kNow);
  EXPECT_DOUBLE_EQ(r.gpu_seconds, 2 * 3 * 3600.0);  // two GPUs for the 3 h left of its limit
  EXPECT_EQ(r.why, "an idle session: no client attached and its GPUs below 5% for 1h");
  EXPECT_EQ(r.event.kind, EventKind::kSessionReclaimed);
  EXPECT_EQ(r.event.node, "n1");
  EXPECT_EQ(r.event.message,
            "session 7 of ada stopped as an idle session: no client attached and its GPUs below "
            "5% for 1h; 6.00 GPU-hours of its time limit freed");
}

}  // namespace
}  // namespace baton::control
