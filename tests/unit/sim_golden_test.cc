// Golden decision logs: small clusters and traces (tests/golden/CASE/) replayed under every
// named policy; what the controller decided is pinned in tests/golden/CASE/POLICY.log. Any
// change of the scheduler's behaviour shows up here as a diff. To accept a change on purpose,
// regenerate them (`make golden`, or BATON_UPDATE_GOLDEN=1 on this test) and review the diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "sim/command.h"
#include "sim/simulator.h"
#include "sim/trace.h"

namespace baton::sim {
namespace {

const char* const kCases[] = {"mixed", "philly"};
const char* const kPolicies[] = {"fifo", "priority", "fairshare", "backfill", "default", "las"};

std::string Dir() {
  const char* src = std::getenv("BATON_SOURCE_DIR");
  return std::string(src != nullptr ? src : BATON_SOURCE_DIR) + "/tests/golden/";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The log: every decision, then the summary (rounded, so that only behaviour moves it).
std::string Replay(const std::string& name, const std::string& policy_name) {
  auto cluster = LoadCluster(Dir() + name + "/cluster.yaml");
  EXPECT_TRUE(cluster.has_value()) << cluster.error().message();
  auto trace = ParseTrace(ReadFile(Dir() + name + "/trace.csv"), name + "/trace.csv");
  EXPECT_TRUE(trace.has_value()) << trace.error().message();
  auto policy = NamedPolicy(policy_name, cluster->policy);
  EXPECT_TRUE(policy.has_value());
  auto result = Simulate(cluster->nodes, *trace, *policy, SimOptions{.decisions = true});
  EXPECT_TRUE(result.has_value()) << result.error().message();
  if (!result) return "";
  std::ostringstream out;
  for (const std::string& line : result->decisions) out << line << '\n';
  const Summary& s = result->summary;
  out << std::fixed << std::setprecision(3) << "summary jobs=" << s.jobs
      << " finished=" << s.finished << " makespan_s=" << s.makespan_s
      << " avg_jct_s=" << s.avg_jct_s << " avg_wait_s=" << s.avg_wait_s
      << " gpu_utilization=" << s.gpu_utilization << " preemptions=" << s.preemptions
      << " jain_fairness=" << s.jain_fairness << '\n';
  return out.str();
}

TEST(Golden, DecisionLogsMatchThePinnedOnes) {
  const bool update = std::getenv("BATON_UPDATE_GOLDEN") != nullptr;
  for (const char* name : kCases) {
    for (const char* policy : kPolicies) {
      SCOPED_TRACE(std::string(name) + " / " + policy);
      std::string got = Replay(name, policy);
      ASSERT_FALSE(got.empty());
      std::string path = Dir() + name + "/" + policy + ".log";
      if (update) {
        std::ofstream(path, std::ios::binary | std::ios::trunc) << got;
        continue;
      }
      std::string want = ReadFile(path);
      if (got == want) continue;
      // Say where the first difference is, not the whole log.
      std::istringstream g(got), w(want);
      std::string gl, wl;
      int line = 0;
      while (true) {
        ++line;
        bool more_g = static_cast<bool>(std::getline(g, gl));
        bool more_w = static_cast<bool>(std::getline(w, wl));
        if (!more_g && !more_w) break;
        if (!more_g || !more_w || gl != wl) break;
      }
      ADD_FAILURE() << path << " differs first at line " << line << ":\n  pinned: " << wl
                    << "\n  now:    " << gl
                    << "\n(an intended change? `make golden`, then review `git diff tests/golden`)";
    }
  }
}

// The same inputs give the same decisions: the logs can be pinned at all.
TEST(Golden, ReplaysAreDeterministic) {
  EXPECT_EQ(Replay("mixed", "default"), Replay("mixed", "default"));
  EXPECT_EQ(Replay("mixed", "las"), Replay("mixed", "las"));
}

}  // namespace
}  // namespace baton::sim
