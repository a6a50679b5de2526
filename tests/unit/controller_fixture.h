// The controller tests' fixture: a Controller driven batch by batch as the loop drives it
// (control::RunBatch), with a memory store, a fixed clock and one agent's session.
#pragma once

#include <gtest/gtest.h>

#include "codec/json_codec.h"
#include "control/batch.h"
#include "control/controller.h"
#include "store/memory_store.h"

namespace baton::control {

using std::chrono::milliseconds;
using std::chrono::seconds;

class ControllerTest : public ::testing::Test {
 protected:
  TimePoint now_ = FromMillis(1'790'000'000'000);
  store::MemoryStore store_;
  std::unique_ptr<Controller> c_ = std::make_unique<Controller>();
  uint64_t session_ = 0;
  uint64_t acked_ = 0;

  void SetUp() override { c_->Restore(*store_.Load(), now_); }

  // Runs one batch as the controller loop does: apply, end the batch, commit the store batch;
  // the reply as command C's.
  template <typename C>
  Answered<C> Run(C command) {
    Command cmd = std::move(command);
    BatchResult b = RunBatch(*c_, std::span(&cmd, 1), now_);
    EXPECT_TRUE(store_.Commit(b.effects.store).ok());
    last_deliveries_ = b.effects.deliveries;
    for (ProviderCall& call : b.effects.provider_calls) calls_.push_back(std::move(call));
    return Answered<C>(std::move(b.replies[0]));
  }

  void RegisterNode(const std::string& name, int gpus, std::vector<JobEvent> held = {}) {
    NodeInfo info;
    info.name = name;
    for (int i = 0; i < gpus; ++i) {
      info.gpus.push_back(Gpu{.index = i,
                              .uuid = "GPU-" + std::to_string(i),
                              .model = "H100-80GB",
                              .memory_bytes = 80LL << 30});
    }
    info.cpus = 64;
    info.memory_bytes = 512LL << 30;
    info.gpu_backend = GpuBackendKind::kSimulated;
    auto r = Run(AgentRegister{RegisterRequest{.node = info, .jobs = std::move(held)}});
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    session_ = r->session;
    acked_ = 0;
  }

  // Polls for orders as an agent would, acknowledging what it saw before.
  std::vector<Order> Poll(const std::string& node) {
    auto r = Run(AgentPoll{.node = node, .session = session_, .after = acked_, .poll_id = ++poll_});
    EXPECT_TRUE(r.status.ok()) << r.status.message();
    std::vector<Order> orders = r->orders;
    if (r->parked) {
      for (const Delivery& d : last_deliveries_) {
        if (d.poll_id == poll_) orders = d.orders;
      }
    }
    for (const Order& o : orders) acked_ = std::max(acked_, o.seq);
    return orders;
  }

  void ReportEvent(const std::string& node, JobEvent e) {
    e.at = now_;
    auto r = Run(AgentReport{ReportRequest{.node = node, .session = session_, .events = {e}}});
    ASSERT_TRUE(r.status.ok()) << r.status.message();
  }

  JobId Submit(int64_t milli_gpus, Priority p = Priority::kNormal, std::string key = "") {
    JobSpec s;
    s.name = "j";
    s.command = {"true"};
    s.resources.milli_gpus = milli_gpus;
    s.priority = p;
    auto r = Run(SubmitJobs{.caller = {"ada", true}, .specs = {s}, .idempotency_key = key});
    EXPECT_TRUE(r.status.ok()) << r.status.message();
    EXPECT_EQ(r->jobs.size(), 1u);
    return r->jobs.empty() ? JobId{0} : r->jobs[0].id;
  }

  // A one-GPU job of ada's that may be retried `retries` times.
  JobId SubmitFailing(int retries) {
    JobSpec s;
    s.command = {"false"};
    s.resources.milli_gpus = 1000;
    s.retries = retries;
    return Run(SubmitJobs{.caller = {"ada", false}, .specs = {s}})->jobs[0].id;
  }

  JobState State(JobId id) { return c_->FindJob(id)->state; }

  // A job submitted, launched on `node` and reported started there.
  JobId StartJob(const std::string& node, int64_t milli_gpus, Priority p) {
    JobId id = Submit(milli_gpus, p);
    Poll(node);
    ReportEvent(node, {.job = id, .kind = JobEvent::Kind::kStarted});
    return id;
  }

  std::vector<Delivery> last_deliveries_;
  std::vector<ProviderCall> calls_;  // autoscaling's provider calls, as they were made
  uint64_t poll_ = 0;
};

}  // namespace baton::control
