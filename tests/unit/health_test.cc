// GPU health on the agent: the XID catalog, the health monitor's judgements, and faults injected
// into simulated GPUs.
#include "agent/health.h"

#include <gtest/gtest.h>

#include "agent/simulated_gpu_backend.h"
#include "agent/xid_catalog.h"

namespace baton::agent {
namespace {

using std::chrono::seconds;

TEST(XidCatalog, SortsXidsIntoApplicationResetAndDrain) {
  // The job's own errors leave the GPU in service.
  for (int xid : {13, 31, 43, 45, 63, 68, 94})
    EXPECT_EQ(ClassifyXid(xid).action, XidAction::kApplication) << xid;
  // Faults a GPU reset cures.
  for (int xid : {48, 62, 74, 95, 109, 119, 120, 140})
    EXPECT_EQ(ClassifyXid(xid).action, XidAction::kReset) << xid;
  // Hardware faults that need an admin.
  for (int xid : {64, 79}) EXPECT_EQ(ClassifyXid(xid).action, XidAction::kDrain) << xid;
  EXPECT_EQ(ClassifyXid(79).name, "GPU has fallen off the bus");
  // Unknown XIDs (newer drivers) are never ignored.
  EXPECT_EQ(ClassifyXid(999).action, XidAction::kReset);
  EXPECT_EQ(XidActionName(XidAction::kDrain), "drain");
}

class HealthTest : public ::testing::Test {
 protected:
  TimePoint now_ = FromMillis(1'790'000'000'000);
  HealthMonitor m_{{0, 1, 2, 3},
                   HealthLimits{.max_temperature_c = 90, .readmit_after = seconds(30)}};
  Status check_ = Status::Ok();

  std::vector<GpuSample> Healthy() {
    std::vector<GpuSample> s;
    for (int i = 0; i < 4; ++i) s.push_back(GpuSample{.index = i, .temperature_c = 40});
    return s;
  }
  bool Recheck() {
    return m_.Recheck([this](int) { return check_; }, now_);
  }
};

TEST_F(HealthTest, AnApplicationXidIsANoticeAndTheGpuStaysInService) {
  EXPECT_FALSE(m_.ObserveXid(2, 31, now_));
  EXPECT_EQ(m_.health()[2].state, GpuHealthState::kOk);
  auto notices = m_.TakeNotices();
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].gpu, 2);
  EXPECT_EQ(notices[0].message, "xid 31: GPU memory page fault (an application error)");
  EXPECT_TRUE(m_.TakeNotices().empty());
}

TEST_F(HealthTest, AResetXidFencesTheGpuUntilItIsQuietAndPassesItsCheck) {
  ASSERT_TRUE(m_.ObserveXid(1, 48, now_));
  EXPECT_EQ(m_.health()[1].state, GpuHealthState::kReset);
  EXPECT_EQ(m_.health()[1].reason, "xid 48: double-bit ECC error");
  EXPECT_EQ(m_.health()[0].state, GpuHealthState::kOk);  // the others keep working
  now_ += seconds(10);
  m_.ObserveSamples(Healthy(), now_);
  EXPECT_FALSE(Recheck());  // not quiet long enough
  now_ += seconds(25);
  check_ = Unavailable("retired pages wait for a reset");
  EXPECT_FALSE(Recheck());  // quiet, but the backend's check fails
  check_ = Status::Ok();
  EXPECT_TRUE(Recheck());
  EXPECT_EQ(m_.health()[1].state, GpuHealthState::kOk);
  EXPECT_EQ(m_.health()[1].reason, "");
}

TEST_F(HealthTest, TheSameResetXidAfterTheGpuCameBackDrainsIt) {
  m_.ObserveXid(1, 119, now_);
  now_ += seconds(31);
  m_.ObserveSamples(Healthy(), now_);
  ASSERT_TRUE(Recheck());
  now_ += seconds(60);
  ASSERT_TRUE(m_.ObserveXid(1, 119, now_));
  EXPECT_EQ(m_.health()[1].state, GpuHealthState::kDrain);
  EXPECT_NE(m_.health()[1].reason.find("again after the GPU came back"), std::string::npos);
  now_ += seconds(600);
  EXPECT_FALSE(Recheck());  // a drain waits for an admin
}

TEST_F(HealthTest, ADrainXidIsNeverCleared) {
  ASSERT_TRUE(m_.ObserveXid(3, 79, now_));
  EXPECT_EQ(m_.health()[3].state, GpuHealthState::kDrain);
  now_ += seconds(3600);
  m_.ObserveSamples(Healthy(), now_);
  EXPECT_FALSE(Recheck());
  EXPECT_EQ(m_.health()[3].state, GpuHealthState::kDrain);
  // A later reset-class fault neither weakens it nor hides why it was drained.
  m_.ObserveXid(3, 48, now_);
  EXPECT_EQ(m_.health()[3].state, GpuHealthState::kDrain);
  EXPECT_EQ(m_.health()[3].reason, "xid 79: GPU has fallen off the bus");
  // Until an admin returns it.
  EXPECT_TRUE(m_.Readmit(3, now_));
  EXPECT_EQ(m_.health()[3].state, GpuHealthState::kOk);
}

TEST_F(HealthTest, ALostGpuAHotOneAndEccErrorsAreFaultsThatHealOnlyWhenGone) {
  auto s = Healthy();
  m_.ObserveSamples(s, now_);  // the ECC baseline
  s[0].lost = true;
  s[1].temperature_c = 95;
  s[2].ecc_uncorrected = 2;
  ASSERT_TRUE(m_.ObserveSamples(s, now_));
  EXPECT_EQ(m_.health()[0].reason, "the GPU stopped answering (fallen off the bus)");
  EXPECT_EQ(m_.health()[1].reason, "temperature 95 °C at or above the limit of 90 °C");
  EXPECT_EQ(m_.health()[2].reason, "2 uncorrectable ECC errors");
  // The same conditions seen again are not news.
  now_ += seconds(2);
  EXPECT_FALSE(m_.ObserveSamples(s, now_));
  // Still lost and still hot after the quiet time: they stay out.
  now_ += seconds(40);
  s[1].temperature_c = 87;  // cooler, but not 5 °C under the limit
  m_.ObserveSamples(s, now_);
  now_ += seconds(40);
  EXPECT_TRUE(Recheck());  // only GPU 2 (its ECC count stopped growing)
  EXPECT_EQ(m_.health()[2].state, GpuHealthState::kOk);
  EXPECT_EQ(m_.health()[0].state, GpuHealthState::kReset);
  EXPECT_EQ(m_.health()[1].state, GpuHealthState::kReset);
  s[0].lost = false;
  s[1].temperature_c = 60;
  m_.ObserveSamples(s, now_);
  now_ += seconds(31);
  EXPECT_TRUE(Recheck());
  EXPECT_EQ(m_.health()[0].state, GpuHealthState::kOk);
  EXPECT_EQ(m_.health()[1].state, GpuHealthState::kOk);
}

TEST(HealthMig, AFaultOnAGpuFencesEveryInstanceOfIt) {
  // Devices 0-2 are MIG instances of GPU 0; device 3 is GPU 1.
  HealthMonitor m({0, 0, 0, 1}, HealthLimits{});
  TimePoint now = FromMillis(1'790'000'000'000);
  ASSERT_TRUE(m.ObserveXid(0, 95, now));
  for (int d : {0, 1, 2}) EXPECT_EQ(m.health()[d].state, GpuHealthState::kReset) << d;
  EXPECT_EQ(m.health()[3].state, GpuHealthState::kOk);
}

TEST(SimulatedFaults, InjectedFaultsShowInSamplesXidsAndChecksUntilCleared) {
  auto spec = ParseGpuSpec("4xH100-80GB");
  ASSERT_TRUE(spec.has_value());
  SimulatedGpuBackend b(*spec, "n1");
  TimePoint now = FromMillis(1'790'000'000'000);
  b.SetClock([&] { return now; });
  b.Discover();
  ASSERT_TRUE(b.Inject({.gpu = 1, .fault = FaultKind::kXid, .value = 79}).ok());
  ASSERT_TRUE(
      b.Inject({.gpu = 2, .fault = FaultKind::kTemperature, .value = 99, .duration = seconds(60)})
          .ok());
  ASSERT_TRUE(b.Inject({.gpu = 3, .fault = FaultKind::kEcc, .value = 4}).ok());
  auto xids = b.PollXids();
  ASSERT_EQ(xids.size(), 1u);
  EXPECT_EQ(xids[0].gpu, 1);
  EXPECT_EQ(xids[0].xid, 79);
  EXPECT_TRUE(b.PollXids().empty());
  auto s = b.Sample({false, false, false, false});
  EXPECT_TRUE(s[1].lost);  // XID 79: off the bus
  EXPECT_EQ(s[2].temperature_c, 99);
  EXPECT_EQ(s[3].ecc_uncorrected, 4);
  EXPECT_FALSE(b.CheckGpu(1).ok());
  EXPECT_FALSE(b.CheckGpu(3).ok());
  EXPECT_TRUE(b.CheckGpu(0).ok());
  now += seconds(61);  // the temperature fault had a duration
  EXPECT_EQ(b.Sample({false, false, false, false})[2].temperature_c < 90, true);
  ASSERT_TRUE(b.Inject({.gpu = 1, .fault = FaultKind::kClear}).ok());  // a reset
  EXPECT_TRUE(b.CheckGpu(1).ok());
  EXPECT_FALSE(b.Sample({false, false, false, false})[1].lost);
  EXPECT_FALSE(b.Inject({.gpu = 9, .fault = FaultKind::kLost}).ok());
  EXPECT_FALSE(b.Inject({.gpu = 0, .fault = FaultKind::kSilence}).ok());  // an agent's fault
}

}  // namespace
}  // namespace baton::agent
