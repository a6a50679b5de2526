// MIG on demand through the real binary (issue 42): `baton up --mig-reconfigure` on a simulated
// A100 in MIG mode whose one instance is the whole GPU. A job asking for a profile no instance
// has is accepted, the next window (scheduling.mig_window) cuts the GPU, and the job runs on
// the new instance; a second profile is cut beside the first while its job runs on, its device
// index and UUID unchanged. The node says its MIG is re-planned, the events say each change.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "harness.h"

namespace baton::testing {
namespace {

// The value after `key`= in `log`, to the end of its line.
std::string ValueIn(const std::string& log, const std::string& key) {
  size_t at = log.find(key + "=");
  if (at == std::string::npos) return "";
  at += key.size() + 1;
  return log.substr(at, log.find('\n', at) - at);
}

TEST(MigOnDemand, AProfileNoInstanceHasIsCutForItAndARunningJobKeepsItsInstance) {
  TempDir dir;
  const std::string config = dir.path() + "/baton.yaml";
  std::ofstream(config) << "scheduling: {mig_window: 1s}\n";
  BatonProcess baton(
      dir.path(), {"--gpus", "1xA100-80GB:mig=7g.80gb", "--mig-reconfigure", "--config", config});
  auto c = baton.Client();
  ASSERT_TRUE(NodesReady(*c, 1));

  // As a user types it: a 3g.40gb instance, which the GPU does not have yet.
  CliResult first = RunCli(baton, {"submit", "--gpu-type", "3g.40gb", "-g", "1", "--", "sh", "-c",
                                   "echo dev=$CUDA_VISIBLE_DEVICES; sleep 60"});
  ASSERT_EQ(first.exit_code, 0) << first.out;
  const int64_t keeper = std::stoll(FirstLine(first.out));
  std::string log = LogsUntil(*c, keeper, "dev=");
  const std::string keeper_dev = ValueIn(log, "dev");
  EXPECT_EQ(keeper_dev.rfind("MIG-", 0), 0u) << log;
  const std::string running = GetJob(*c, keeper);
  ASSERT_EQ(JsonString(running, "state"), "running") << running;
  const std::string allocation = JsonField(running, "allocation");

  // A second profile: cut from the free half while the first job runs on.
  int64_t second = Submit(*c, R"({"command": ["sh", "-c", "echo dev=$CUDA_VISIBLE_DEVICES"],
      "resources": {"gpus": 1, "gpu_type": "1g.10gb"}})");
  std::string done = WaitForJob(*c, second, 60000);
  ASSERT_EQ(JsonString(done, "state"), "succeeded") << done;
  const std::string second_dev = ValueIn(LogsUntil(*c, second, "dev="), "dev");
  EXPECT_EQ(second_dev.rfind("MIG-", 0), 0u);
  EXPECT_NE(second_dev, keeper_dev);
  const std::string still = GetJob(*c, keeper);
  EXPECT_EQ(JsonString(still, "state"), "running") << still;
  EXPECT_EQ(JsonField(still, "allocation"), allocation);

  // The node shows its instances now, each at the index of its first memory slice, and its
  // vacant places as such; the events say what each change made.
  auto nodes = c->Request("GET", "/v1/nodes");
  ASSERT_TRUE(nodes);
  EXPECT_NE(nodes->body.find("\"mig_gpus\":[{\"physical\":0"), std::string::npos) << nodes->body;
  EXPECT_NE(nodes->body.find("\"mig_profile\":\"3g.40gb\""), std::string::npos) << nodes->body;
  EXPECT_NE(nodes->body.find("\"mig_profile\":\"1g.10gb\""), std::string::npos) << nodes->body;
  EXPECT_EQ(nodes->body.find("7g.80gb"), std::string::npos) << nodes->body;
  EXPECT_NE(nodes->body.find("\"vacant\":true"), std::string::npos) << nodes->body;
  auto events = c->Request("GET", "/v1/events");
  ASSERT_TRUE(events);
  EXPECT_EQ(CountOf(events->body, "re-partitioned for the queue"), 2u) << events->body;
  EXPECT_NE(events->body.find("destroyed 7g.80gb at 0, created 3g.40gb at"), std::string::npos)
      << events->body;
  CliResult shown = RunCli(baton, {"nodes"});
  EXPECT_NE(shown.out.find("MIG re-planned"), std::string::npos) << shown.out;
  // Two devices, not eight places.
  CliResult gpus = RunCli(baton, {"gpus"});
  EXPECT_EQ(CountOf(gpus.out, "A100-80GB-MIG-"), 2u) << gpus.out;
  RunCli(baton, {"cancel", std::to_string(keeper)});
}

}  // namespace
}  // namespace baton::testing
