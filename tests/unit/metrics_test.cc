// Metrics: the controller's counts and the Prometheus text they render to.
#include "api/metrics.h"

#include <gtest/gtest.h>

#include "control/batch.h"
#include "control/controller.h"
#include "store/memory_store.h"

namespace baton {
namespace {

TEST(Histogram, CountsEachObservationInItsBucketOnce) {
  control::Histogram h({1, 10});
  for (double v : {0.5, 1.0, 3.0, 20.0}) h.Observe(v);
  EXPECT_EQ(h.counts, (std::vector<uint64_t>{2, 1}));
  EXPECT_EQ(h.count, 4u);
  EXPECT_DOUBLE_EQ(h.sum, 24.5);
}

TEST(RenderMetrics, WritesTypedFamiliesCumulativeBucketsAndEscapedLabels) {
  control::MetricsSnapshot m;
  m.jobs_by_state = {{"pending", 2}, {"running", 1}};
  m.jobs_submitted = 7;
  m.jobs_finished = {{"failed", 1}};
  m.wait_seconds = control::Histogram({1, 10});
  for (double v : {0.5, 3.0, 20.0}) m.wait_seconds.Observe(v);
  m.gpus.push_back(control::GpuMetrics{.node = "gpu\"01",
                                       .index = 3,
                                       .model = "H100-80GB",
                                       .state = control::GpuUse::kAllocated,
                                       .sampled = true,
                                       .utilization_pct = 91,
                                       .memory_total_bytes = 85899345920,
                                       .temperature_c = 69});
  m.gpus.push_back(control::GpuMetrics{
      .node = "gpu02", .index = 0, .model = "H100-80GB", .state = control::GpuUse::kFailed});
  m.project_gpu_seconds = {{"vision", 3600}};
  control::ControllerLoop::Stats loop;
  loop.cycle_seconds.Observe(0.002);
  std::string t = api::RenderMetrics(m, loop);
  for (const char* want :
       {"# TYPE baton_jobs gauge\n", "baton_jobs{state=\"pending\"} 2\n",
        "# TYPE baton_jobs_submitted_total counter\n", "baton_jobs_submitted_total 7\n",
        "baton_jobs_finished_total{state=\"failed\"} 1\n",
        "baton_jobs_finished_total{state=\"succeeded\"} 0\n",
        "baton_job_wait_seconds_bucket{le=\"1\"} 1\n",
        "baton_job_wait_seconds_bucket{le=\"10\"} 2\n",
        "baton_job_wait_seconds_bucket{le=\"+Inf\"} 3\n", "baton_job_wait_seconds_sum 23.5\n",
        "baton_job_wait_seconds_count 3\n", "baton_scheduling_cycle_duration_seconds_count 1\n",
        "baton_gpus{state=\"allocated\"} 1\n", "baton_gpus{state=\"failed\"} 1\n",
        "baton_gpus{state=\"idle\"} 0\n",
        "baton_gpu_utilization_ratio{node=\"gpu\\\"01\",gpu=\"3\",model=\"H100-80GB\"} 0.91\n",
        "baton_gpu_temperature_celsius{node=\"gpu\\\"01\",gpu=\"3\",model=\"H100-80GB\"} 69\n",
        "baton_project_gpu_seconds_total{project=\"vision\"} 3600\n"}) {
    EXPECT_NE(t.find(want), std::string::npos) << want << "\n" << t;
  }
  // A GPU its agent has not sampled has no gauges, only its total memory.
  EXPECT_EQ(t.find("baton_gpu_temperature_celsius{node=\"gpu02\""), std::string::npos) << t;
  EXPECT_NE(t.find("baton_gpu_memory_total_bytes{node=\"gpu02\""), std::string::npos) << t;
}

// A controller driven batch by batch as the loop drives it, with a memory store.
struct Driven {
  TimePoint now = FromMillis(1'790'000'000'000);
  store::MemoryStore store;
  control::Controller c;
  Driven() { c.Restore(*store.Load(), now); }
  template <typename C>
  control::Answered<C> Run(C command) {
    control::Command cmd = std::move(command);
    control::BatchResult b = control::RunBatch(c, std::span(&cmd, 1), now);
    EXPECT_TRUE(store.Commit(b.effects.store).ok());
    return control::Answered<C>(std::move(b.replies[0]));
  }
  // A one-GPU job running `command` in `project`.
  static JobSpec Spec(const std::string& command, const std::string& project) {
    JobSpec spec;
    spec.command = {command};
    spec.resources.milli_gpus = 1000;
    spec.project = project;
    return spec;
  }
  // Node n1 with `gpus` simulated H100s registers; its registration's answer.
  control::Answered<control::AgentRegister> Register(int gpus) {
    NodeInfo info{.name = "n1",
                  .cpus = 8,
                  .memory_bytes = 1LL << 34,
                  .gpu_backend = GpuBackendKind::kSimulated};
    for (int i = 0; i < gpus; ++i)
      info.gpus.push_back(Gpu{.index = i, .model = "H100-80GB", .memory_bytes = 80LL << 30});
    return Run(control::AgentRegister{RegisterRequest{.node = info}});
  }
};

TEST(ControllerMetrics, CountJobsNodesGpusAndWaits) {
  Driven d;
  TimePoint& now = d.now;
  auto run = [&](auto command) { return d.Run(std::move(command)); };
  auto reg = d.Register(2);
  JobSpec spec = Driven::Spec("true", "vision");
  JobId id = run(control::SubmitJobs{.caller = {"ada", false}, .specs = {spec}})->jobs.at(0).id;
  now += std::chrono::seconds(3);
  run(control::AgentReport{
      ReportRequest{.node = "n1",
                    .session = reg->session,
                    .events = {JobEvent{.job = id, .kind = JobEvent::Kind::kStarted, .at = now}}}});
  now += std::chrono::seconds(10);
  auto m = run(control::GetMetrics{})->metrics;
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->jobs_by_state.at("running"), 1);
  EXPECT_EQ(m->jobs_by_state.at("pending"), 0);
  EXPECT_EQ(m->jobs_submitted, 1u);
  EXPECT_EQ(m->wait_seconds.count, 1u);
  EXPECT_DOUBLE_EQ(m->wait_seconds.sum, 3.0);
  EXPECT_EQ(m->nodes_by_state.at("ready"), 1);
  ASSERT_EQ(m->gpus.size(), 2u);
  int allocated = 0;
  for (const auto& g : m->gpus) allocated += g.state == control::GpuUse::kAllocated;
  EXPECT_EQ(allocated, 1);
  EXPECT_DOUBLE_EQ(m->project_gpu_seconds.at("vision"), 10.0);  // one GPU for 10 s, still running
  auto usage = run(control::GetUsage{});
  ASSERT_EQ(usage->projects.size(), 1u);
  EXPECT_EQ(usage->projects[0].project, "vision");
  EXPECT_EQ(usage->projects[0].running, 1);
  EXPECT_DOUBLE_EQ(usage->projects[0].gpu_seconds, 10.0);
  ASSERT_EQ(usage->users.size(), 1u);
  EXPECT_EQ(usage->users[0].user, "ada");
  EXPECT_EQ(usage->users[0].jobs, 1);
  run(control::AgentReport{
      ReportRequest{.node = "n1",
                    .session = reg->session,
                    .events = {JobEvent{.job = id, .kind = JobEvent::Kind::kExited, .at = now}}}});
  m = run(control::GetMetrics{})->metrics;
  EXPECT_EQ(m->jobs_finished.at("succeeded"), 1u);
  EXPECT_EQ(m->jobs_by_state.at("succeeded"), 1);
}

// GET /metrics reads counts kept as jobs change (control/job_tally.h), not a walk of every job:
// they follow submits, holds, starts, ends, a retry's requeue with the GPU-seconds of its first
// attempt, a waiting job moved to another project, and a restart from the store.
TEST(ControllerMetrics, KeptCountsFollowEveryChangeOfAJobAndARestart) {
  Driven d;
  TimePoint& now = d.now;
  auto run = [&](auto command) { return d.Run(std::move(command)); };
  auto reg = d.Register(1);
  JobSpec spec = Driven::Spec("false", "vision");
  spec.retries = 1;
  JobSpec held = spec;
  held.hold = true;
  auto submitted = run(control::SubmitJobs{.caller = {"ada", false}, .specs = {spec, held}});
  const JobId id = submitted->jobs.at(0).id;
  auto m = run(control::GetMetrics{})->metrics;
  EXPECT_EQ(m->jobs_by_state.at("running"), 1);
  EXPECT_EQ(m->jobs_by_state.at("held"), 1);
  auto report = [&](JobEvent::Kind kind, int exit_code) {
    run(control::AgentReport{ReportRequest{
        .node = "n1",
        .session = reg->session,
        .events = {JobEvent{.job = id, .kind = kind, .at = now, .exit_code = exit_code}}}});
  };
  report(JobEvent::Kind::kStarted, 0);
  now += std::chrono::seconds(10);
  // The node drained first: the job's retry waits in the queue instead of starting again.
  run(control::DrainNode{.caller = {"root", true}, .node = "n1", .reason = "maintenance"});
  report(JobEvent::Kind::kExited, 1);
  m = run(control::GetMetrics{})->metrics;
  EXPECT_EQ(m->jobs_by_state.at("pending"), 1);
  EXPECT_EQ(m->jobs_by_state.at("running"), 0);
  EXPECT_EQ(m->jobs_by_state.at("held"), 1);
  EXPECT_DOUBLE_EQ(m->project_gpu_seconds.at("vision"), 10.0);
  // Moved to another project while it waits: its ended attempt's GPU-seconds go with it.
  JobSpec fields;
  fields.project = "nlp";
  auto moved = run(
      control::UpdateJob{.caller = {"ada", false}, .id = id, .fields = fields, .set = {"project"}});
  ASSERT_TRUE(moved.status.ok()) << moved.status.message();
  m = run(control::GetMetrics{})->metrics;
  EXPECT_DOUBLE_EQ(m->project_gpu_seconds.at("nlp"), 10.0);
  EXPECT_DOUBLE_EQ(m->project_gpu_seconds.at("vision"), 0.0);
  // A new controller from the same store counts the same.
  control::Controller again;
  again.Restore(*d.store.Load(), now);
  control::Command get = control::GetMetrics{};
  control::BatchResult b = control::RunBatch(again, std::span(&get, 1), now);
  auto restored = control::Answered<control::GetMetrics>(std::move(b.replies[0]))->metrics;
  EXPECT_EQ(restored->jobs_by_state, m->jobs_by_state);
  EXPECT_DOUBLE_EQ(restored->project_gpu_seconds.at("nlp"), 10.0);
}

// Issue 16: `baton usage --since 2026-11-01` counts the jobs of that window only.
TEST(ControllerMetrics, UsageCountsOnlyTheJobsOfItsWindow) {
  Driven d;
  TimePoint& now = d.now;
  auto run = [&](auto command) { return d.Run(std::move(command)); };
  auto reg = d.Register(1);
  JobSpec spec = Driven::Spec("true", "old");
  JobId old = run(control::SubmitJobs{.caller = {"ada", false}, .specs = {spec}})->jobs.at(0).id;
  for (auto kind : {JobEvent::Kind::kStarted, JobEvent::Kind::kExited}) {
    run(control::AgentReport{
        ReportRequest{.node = "n1",
                      .session = reg->session,
                      .events = {JobEvent{.job = old, .kind = kind, .at = now}}}});
    now += std::chrono::seconds(10);
  }
  TimePoint between = now + std::chrono::hours(1);
  now = between + std::chrono::hours(1);
  spec.project = "new";
  spec.hold = true;
  run(control::SubmitJobs{.caller = {"bob", false}, .specs = {spec}});
  auto projects = [](const control::Answered<control::GetUsage>& r) {
    std::string names;
    for (const UsageRow& row : r->projects) names += row.project + " ";
    return names;
  };
  EXPECT_EQ(projects(run(control::GetUsage{})), "new old ");
  EXPECT_EQ(projects(run(control::GetUsage{.since = between})), "new ");
  EXPECT_EQ(projects(run(control::GetUsage{.until = between})), "old ");
  auto none = run(control::GetUsage{.since = between, .until = between});
  EXPECT_TRUE(none->projects.empty());
  EXPECT_TRUE(none->users.empty());
}

}  // namespace
}  // namespace baton
