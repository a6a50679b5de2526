// Output without end (issue 37): a job that prints without end neither fills the node's disk
// nor the controller's. Past its output limit its log keeps its head and its tail with a
// marker of what was dropped between; the controller keeps a disk reserve for its store and
// drops job output before eating into it, with an alert, and never exits for a job's output.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <boost/json.hpp>
#include <fstream>
#include <string>

#include "harness.h"

namespace baton::testing {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

// Disk the file takes (its holes take none).
int64_t DiskUse(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_blocks) * 512 : -1;
}

int64_t SizeOf(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
}

bool EventOf(const BatonProcess& b, const std::string& kind, const std::string& id) {
  auto r = b.Client()->Request("GET", "/v1/events");
  if (!r || r->status != 200) return false;
  json::value events = json::parse(r->body);
  for (const json::value& e : events.at("events").as_array()) {
    if (e.at("kind") == kind.c_str() && e.at("job").is_int64() &&
        std::to_string(e.at("job").as_int64()) == id)
      return true;
  }
  return false;
}

TEST(OutputLimit, AJobPrintingPastItsLimitKeepsItsHeadAndItsTail) {
  TempDir dir;
  BatonProcess baton(dir.path() + "/server", {"--gpus", "1xH100-80GB"});
  // 64 MB of "y": far past a limit of 1 MiB.
  CliResult r = RunCli(baton, {"submit", "--output-limit", "1MiB", "--",
                               "yes | head -c 67108864; echo the-last-line"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string id = FirstLine(r.out);
  ASSERT_EQ(RunCli(baton, {"wait", id}).exit_code, 0) << RunCli(baton, {"show", id}).out;

  std::string log = RunCli(baton, {"logs", id}).out;
  EXPECT_LT(log.size(), (1u << 20) + 1024) << "kept more than the limit and its marker";
  EXPECT_GT(log.size(), 1u << 20);
  EXPECT_EQ(log.substr(0, 8), "y\ny\ny\ny\n");
  EXPECT_NE(log.find("[baton: "), std::string::npos);
  EXPECT_NE(log.find("of output dropped here, past the job's output limit of 1MiB"),
            std::string::npos);
  EXPECT_EQ(log.substr(log.size() - 14), "the-last-line\n");
  EXPECT_TRUE(Within(5s, [&] { return EventOf(baton, "job_output_limit", id); }));

  // On the node the log's size is all of it, its disk use the head and the tail.
  const std::string node_log = baton.data_dir() + "/agent/jobs/" + id + "/output.log";
  EXPECT_GT(SizeOf(node_log), 64 << 20);
  EXPECT_LT(DiskUse(node_log), 4 << 20) << "the middle was not freed";
  // The controller's copy is what `baton logs` shows.
  json::value job = json::parse(RunCli(baton, {"show", id, "--json"}).out);
  std::string node(job.at("allocation").at(0).at("node").as_string());
  EXPECT_EQ(SizeOf(baton.data_dir() + "/logs/" + id + "/" + node + ".log"),
            static_cast<int64_t>(log.size()));

  // Over the cluster's maximum: refused at submit, naming it.
  CliResult big = RunCli(baton, {"submit", "--output-limit", "100GiB", "--", "true"});
  EXPECT_NE(big.exit_code, 0);
  EXPECT_NE(big.out.find("output_limit: this cluster keeps at most 64GiB"), std::string::npos)
      << big.out;
}

TEST(OutputLimit, WithStopAtOutputLimitAJobPrintingWithoutEndIsStopped) {
  TempDir dir;
  std::ofstream(dir.path() + "/baton.yaml") << "output_limit: 2MiB\nstop_at_output_limit: true\n";
  BatonProcess baton(dir.path() + "/server",
                     {"--gpus", "1xH100-80GB", "--config", dir.path() + "/baton.yaml"});
  CliResult r = RunCli(baton, {"submit", "--", "yes"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string id = FirstLine(r.out);
  CliResult waited = RunCli(baton, {"wait", id});
  EXPECT_NE(waited.exit_code, 0);
  json::value job = json::parse(RunCli(baton, {"show", id, "--json"}).out);
  EXPECT_EQ(job.at("state"), "cancelled") << job;
  EXPECT_NE(std::string(job.at("reason_detail").as_string()).find("passed its limit"),
            std::string::npos)
      << job;
  EXPECT_TRUE(EventOf(baton, "job_output_limit", id));
}

// The controller's disk reserve: output that would eat into it is dropped, with an alert;
// the store goes on committing and the controller goes on serving.
TEST(OutputLimit, OutputIsDroppedBeforeItEatsIntoTheStoresDiskReserve) {
  TempDir dir;
  // A reserve larger than any disk: every byte of output would eat into it.
  BatonProcess baton(dir.path() + "/server",
                     {"--gpus", "1xH100-80GB", "--disk-reserve", "1000TiB"});
  CliResult r = RunCli(baton, {"submit", "--", "echo hello"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string id = FirstLine(r.out);
  ASSERT_EQ(RunCli(baton, {"wait", id}).exit_code, 0);
  EXPECT_TRUE(Within(5s, [&] { return EventOf(baton, "log_dropped", id); }));
  CliResult events = RunCli(baton, {"events"});
  EXPECT_NE(events.out.find("within the reserve of"), std::string::npos) << events.out;
  EXPECT_EQ(RunCli(baton, {"logs", id}).out.find("hello"), std::string::npos);
  // Still serving and committing.
  CliResult again = RunCli(baton, {"submit", "--hold", "--", "true"});
  EXPECT_EQ(again.exit_code, 0) << again.out;
  EXPECT_TRUE(baton.Alive());
}

}  // namespace
}  // namespace baton::testing
