// The agent's run files (its record for re-adopting jobs), through a fake Env.
#include "agent/run_file.h"

#include <gtest/gtest.h>

#include "mem_env.h"

namespace baton::agent {
namespace {

using testing::FaultyEnv;
using testing::MemEnv;

RunRecord Record(int64_t job, int attempt) {
  RunRecord r;
  r.order.job = JobId{job};
  r.order.attempt = attempt;
  r.order.name = "train";
  r.order.user = "alice";
  r.order.command = {"python", "train.py"};
  r.order.gpus = {0, 1};
  r.order.time_limit = std::chrono::hours(2);
  r.process = Started{.shim_pid = 4242, .job_pid = 4243, .shim_start_ticks = 99};
  r.started_at = FromMillis(1'700'000'000'123);
  return r;
}

class RunFilesTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(env_.CreateDirs("/data/run").ok()); }
  MemEnv env_;
  RunFiles files_{env_, "/data/run", LogContext{.component = "agent", .node = "n1"}};
};

TEST_F(RunFilesTest, ARecordWrittenReadsBackThroughTheEnv) {
  RunRecord r = Record(7, 1);
  ASSERT_TRUE(files_.Write(r).ok());
  EXPECT_TRUE(env_.Exists("/data/run/7.1.run"));
  auto back = files_.ReadAll();
  ASSERT_TRUE(back.has_value()) << back.error().message();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0], r);
}

TEST_F(RunFilesTest, AFailedWriteIsReportedAndLeavesNoRecord) {
  FaultyEnv faulty(env_, ".run");
  RunFiles files(faulty, "/data/run", {});
  Status st = files.Write(Record(7, 1));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("/data/run/7.1.run"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("No space left"), std::string::npos) << st.message();
  EXPECT_FALSE(env_.Exists("/data/run/7.1.run"));
}

TEST_F(RunFilesTest, UnreadableRunFilesAreDroppedAndTheShimsFilesIgnored) {
  ASSERT_TRUE(files_.Write(Record(7, 1)).ok());
  ASSERT_TRUE(env_.WriteFileAtomic("/data/run/8.0.run", "garbage\n", {}).ok());
  ASSERT_TRUE(env_.WriteFileAtomic("/data/run/9.0.run", "1 2 3 4\n[]\n", {}).ok());
  ASSERT_TRUE(env_.WriteFileAtomic("/data/run/7.1.run.exit", "exit 0\n", {}).ok());
  auto back = files_.ReadAll();
  ASSERT_TRUE(back.has_value());
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].order.job, JobId{7});
  EXPECT_FALSE(env_.Exists("/data/run/8.0.run"));
  EXPECT_FALSE(env_.Exists("/data/run/9.0.run"));
  EXPECT_TRUE(env_.Exists("/data/run/7.1.run.exit"));
}

TEST_F(RunFilesTest, ADirectoryThatCannotBeListedIsAnError) {
  RunFiles elsewhere(env_, "/nowhere/run", {});
  EXPECT_FALSE(elsewhere.ReadAll().has_value());
}

TEST_F(RunFilesTest, RemoveTakesTheShimsFilesToo) {
  ASSERT_TRUE(files_.Write(Record(7, 1)).ok());
  ASSERT_TRUE(env_.WriteFileAtomic("/data/run/7.1.run.exit", "exit 0\n", {}).ok());
  ASSERT_TRUE(env_.WriteFileAtomic("/data/run/7.1.run.pid", "4243\n", {}).ok());
  EXPECT_TRUE(files_.Remove(JobId{7}, 1).ok());
  EXPECT_FALSE(env_.Exists("/data/run/7.1.run"));
  EXPECT_FALSE(env_.Exists("/data/run/7.1.run.exit"));
  EXPECT_FALSE(env_.Exists("/data/run/7.1.run.pid"));
}

TEST(RunRecord, RejectsWhatIsNotARecord) {
  EXPECT_FALSE(DecodeRunRecord("").has_value());
  EXPECT_FALSE(DecodeRunRecord("1 2 3\n").has_value());
  EXPECT_FALSE(DecodeRunRecord("1 2 3 4 5\n[]\n").has_value());
  std::string good = EncodeRunRecord(Record(3, 0));
  EXPECT_TRUE(DecodeRunRecord(good).has_value());
  EXPECT_FALSE(DecodeRunRecord(good.substr(0, good.size() / 2)).has_value());
}

}  // namespace
}  // namespace baton::agent
