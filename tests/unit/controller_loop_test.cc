// The controller loop: group commit, replies only after the commit, and a store that fails.
#include "control/controller_loop.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <set>
#include <thread>
#include <vector>

#include "store/memory_store.h"

namespace baton::control {
namespace {

SubmitJobs OneJob() {
  JobSpec s;
  s.command = {"true"};
  return SubmitJobs{.caller = {"ada", false}, .specs = {s}};
}

// A MemoryStore that remembers which job ids reached it, for checks made on the loop thread.
class RecordingStore : public store::MemoryStore {
 public:
  Status Commit(const store::Batch& batch) override {
    Status st = store::MemoryStore::Commit(batch);
    if (st.ok()) {
      for (const Job& j : batch.jobs) durable_.insert(j.id.value);
    }
    return st;
  }
  bool Durable(int64_t id) const { return durable_.count(id) == 1; }  // loop thread only

 private:
  std::set<int64_t> durable_;
};

class ControllerLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clock_.Set(FromMillis(1'790'000'000'000));
    controller_.Restore(*store_.Load(), clock_.Now());
  }

  // The reply, and whether the job was durable when the reply was handed over.
  std::future<std::pair<Reply, bool>> Submit() {
    auto promise = std::make_shared<std::promise<std::pair<Reply, bool>>>();
    loop_->Post(OneJob(), [this, promise](Reply r) {
      bool durable =
          r.status.ok() && store_.Durable(std::get<Submitted>(r.value).jobs.at(0).id.value);
      promise->set_value({std::move(r), durable});
    });
    return promise->get_future();
  }

  SimulatedClock clock_;
  RecordingStore store_;
  Controller controller_;
  std::atomic<int> fatal_calls_{0};
  std::unique_ptr<ControllerLoop> loop_ = std::make_unique<ControllerLoop>(
      controller_, store_, clock_, LoopOptions{.commit_attempts = 2},
      [this](const Status&) { fatal_calls_++; });
};

TEST_F(ControllerLoopTest, AnswersOnlyWhatIsDurableAndBatchesCommits) {
  // 200 submits waiting when the loop starts: one batch, one commit, 200 answers.
  std::vector<std::future<std::pair<Reply, bool>>> replies;
  for (int i = 0; i < 200; ++i) replies.push_back(Submit());
  loop_->Start();
  std::set<int64_t> ids;
  for (auto& f : replies) {
    auto [r, durable] = f.get();
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    const JobId id = std::get<Submitted>(r.value).jobs.at(0).id;
    ids.insert(id.value);
    EXPECT_TRUE(durable) << "job " << id.value << " was answered before it was committed";
  }
  EXPECT_EQ(ids.size(), 200u);
  loop_->Stop();
  EXPECT_EQ(store_.Load()->jobs.size(), 200u);
  EXPECT_EQ(store_.commits(), 1);
  EXPECT_EQ(fatal_calls_.load(), 0);
}

TEST_F(ControllerLoopTest, AStoreThatCannotCommitIsFatalAndNothingIsAcknowledged) {
  store_.FailCommits(true);
  loop_->Start();
  Reply r = Submit().get().first;
  EXPECT_EQ(r.status.code(), Code::kUnavailable);
  EXPECT_NE(r.status.message().find("store"), std::string::npos);
  for (int i = 0; i < 100 && fatal_calls_.load() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(fatal_calls_.load(), 1);
  EXPECT_EQ(Submit().get().first.status.code(), Code::kUnavailable);  // and nothing more is taken
  loop_->Stop();
  EXPECT_TRUE(store_.Load()->jobs.empty());
}

// The API's token table and its followed logs learn of a batch through on_commit: it must come
// after the commit and before the batch's replies (a token works once its creation is answered).
TEST_F(ControllerLoopTest, OnCommitSeesTheDurableBatchBeforeItsReplies) {
  std::atomic<int> committed_jobs{0};
  loop_ = std::make_unique<ControllerLoop>(
      controller_, store_, clock_,
      LoopOptions{.on_commit =
                      [this, &committed_jobs](const store::Batch& batch) {
                        for (const Job& j : batch.jobs) {
                          EXPECT_TRUE(store_.Durable(j.id.value));
                          ++committed_jobs;
                        }
                      }},
      [this](const Status&) { fatal_calls_++; });
  loop_->Start();
  std::promise<int> seen;
  loop_->Post(OneJob(), [&](Reply r) {
    EXPECT_TRUE(r.status.ok());
    seen.set_value(committed_jobs.load());
  });
  EXPECT_GE(seen.get_future().get(), 1);
  loop_->Stop();
}

TEST_F(ControllerLoopTest, StopAnswersWhatIsLeft) {
  loop_->Start();
  loop_->Stop();
  std::promise<Reply> p;
  auto f = p.get_future();
  loop_->Post(OneJob(), [&p](Reply r) { p.set_value(std::move(r)); });
  ASSERT_EQ(f.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(f.get().status.code(), Code::kUnavailable);
}

}  // namespace
}  // namespace baton::control
