// Never two copies of a job (issue 37). An agent that cannot reach a controller fences
// itself: once it has not reached one for the node timeout, each job's shim stops its job
// (SIGTERM, then SIGKILL), whether the agent is stopped or cut off; and the controller requeues
// a lost node's jobs only once that has surely happened. Each test runs a job that stamps the
// time and its node into a file ten times a second, loses its node in one way, and checks that
// no stamp of its second copy comes before the last stamp of its first.
#include <gtest/gtest.h>
#include <signal.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "harness.h"

namespace baton::testing {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

json::value Show(const BatonProcess& b, const std::string& id) {
  return json::parse(RunCli(b, {"show", id, "--json"}).out);
}

std::string NodeOf(const BatonProcess& b, const std::string& id) {
  json::value job = Show(b, id);
  const json::array& parts = job.at("allocation").as_array();
  return parts.empty() ? "" : std::string(parts.at(0).at("node").as_string());
}

// The stamps of each node: the first and last time (ns) it wrote, and how many. A line without
// a time is skipped: a copy stopped while `date` ran (its group's SIGTERM kills `date` too)
// writes "NODE " alone, about once in a hundred stops, and reading on past it must not stop
// at it.
struct Span {
  int64_t first = INT64_MAX, last = 0;
  int count = 0;
};
std::map<std::string, Span> Stamps(const std::string& path) {
  std::map<std::string, Span> spans;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string node;
    int64_t ns = 0;
    if (!(fields >> node >> ns)) continue;
    Span& s = spans[node];
    s.first = std::min(s.first, ns);
    s.last = std::max(s.last, ns);
    ++s.count;
  }
  return spans;
}

std::string StampingJob(const std::string& path) {
  return "trap 'exit 143' TERM; while true; do echo \"$BATON_NODE_NAME $(date +%s%N)\" >> " + path +
         "; sleep 0.1; done";
}

// Submits the stamping job, waits until it stamps on its node, and returns its id.
std::string StartStamping(const BatonProcess& server, const std::string& stamps) {
  CliResult r = RunCli(server, {"submit", "-g", "1", "--", StampingJob(stamps)});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  std::string id = FirstLine(r.out);
  EXPECT_TRUE(Within(15s, [&] { return !Stamps(stamps).empty(); }))
      << RunCli(server, {"show", id}).out;
  return id;
}

// Waits until the job runs again elsewhere and has stamped there; the second node.
std::string WaitForSecondCopy(const BatonProcess& server, const std::string& id,
                              const std::string& first, const std::string& stamps) {
  std::string second;
  EXPECT_TRUE(Within(60s, [&] {
    json::value job = Show(server, id);
    if (job.at("restarts").as_int64() != 1 || job.at("state") != "running") return false;
    second = NodeOf(server, id);
    return second != first && Stamps(stamps)[second].count >= 3;
  })) << RunCli(server, {"show", id}).out;
  return second;
}

// Whether the agent of `node` has dropped the run file of job `id`'s first attempt: the
// controller acknowledged how that copy ended.
bool EndAcknowledged(const std::string& dir, const std::string& node, const std::string& id) {
  return !std::filesystem::exists(dir + "/" + node + "/run/" + id + ".0.run");
}

void ExpectNoOverlap(const std::string& stamps, const std::string& first,
                     const std::string& second) {
  auto spans = Stamps(stamps);
  ASSERT_GT(spans[first].count, 0);
  ASSERT_GT(spans[second].count, 0);
  EXPECT_LT(spans[first].last, spans[second].first)
      << "both copies ran for " << (spans[first].last - spans[second].first) / 1000000 << " ms";
}

struct TwoNodes {
  explicit TwoNodes(const std::string& dir, bool n1_through_proxy = false,
                    const std::string& node_timeout = "5s")
      : server(dir + "/server", {"--node-timeout", node_timeout}, "server"),
        proxy(std::stoi(server.url().substr(server.url().rfind(':') + 1))),
        n1(server, "n1", dir + "/n1", "1xH100-80GB",
           n1_through_proxy ? std::vector<std::string>{"--server", "https://127.0.0.1:" +
                                                                       std::to_string(proxy.port())}
                            : std::vector<std::string>{}),
        n2(server, "n2", dir + "/n2", "1xH100-80GB") {}
  // Waits for both nodes, starts the stamping job and waits for its stamps; its id.
  std::string StartJob(const std::string& stamps) {
    EXPECT_TRUE(NodesReady(*server.Client(), 2));
    return StartStamping(server, stamps);
  }
  BatonProcess server;
  TcpProxy proxy;
  AgentProcess n1, n2;
};

TEST(Fencing, TheStampsOfACopyStoppedInMidLineDoNotHideTheOthers) {
  TempDir dir;
  const std::string path = dir.path() + "/stamps";
  std::ofstream(path) << "n1 5\nn1 \nn1 9\nn2 12\n";  // n1 stopped while `date` ran
  auto spans = Stamps(path);
  EXPECT_EQ(spans["n1"].count, 2);
  EXPECT_EQ(spans["n1"].last, 9);
  EXPECT_EQ(spans["n2"].count, 1);
  EXPECT_EQ(spans["n2"].first, 12);
}

TEST(Fencing, AStoppedAgentsJobIsStoppedBeforeItRunsElsewhere) {
  TempDir dir;
  TwoNodes c(dir.path());
  const std::string stamps = dir.path() + "/stamps";
  const std::string id = c.StartJob(stamps);
  const std::string first = NodeOf(c.server, id);
  ASSERT_FALSE(first.empty());
  AgentProcess& stalled = first == "n1" ? c.n1 : c.n2;

  kill(stalled.pid(), SIGSTOP);  // holds its sockets, answers nothing, runs nothing
  struct Continue {              // however the test ends: a stopped agent would not hear SIGTERM
    pid_t pid;
    ~Continue() { kill(pid, SIGCONT); }
  } resume{stalled.pid()};
  const std::string second = WaitForSecondCopy(c.server, id, first, stamps);
  ExpectNoOverlap(stamps, first, second);
  // A lost node spends no retry: with none to spend, the job would have failed.
  EXPECT_EQ(Show(c.server, id).at("retries").as_int64(), 0);

  // The agent wakes: its copy is gone for good, reported as stopped by its fence (its trap's
  // exit 143 on the fence's SIGTERM), and the controller has that end.
  kill(stalled.pid(), SIGCONT);
  int64_t last = Stamps(stamps)[first].last;
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(Stamps(stamps)[first].last, last);
  EXPECT_EQ(NodeOf(c.server, id), second);
  EXPECT_EQ(Show(c.server, id).at("state"), "running");
  EXPECT_TRUE(Within(30s, [&] { return EndAcknowledged(dir.path(), first, id); }));
}

// Slurm's --no-requeue: a job that must not run twice ends failed with its lost node, once its
// fence has passed, instead of running a second copy elsewhere.
TEST(Fencing, ANoRequeueJobOfAStoppedAgentFailsAndNeverRunsAgain) {
  TempDir dir;
  TwoNodes c(dir.path());
  ASSERT_TRUE(NodesReady(*c.server.Client(), 2));
  const std::string stamps = dir.path() + "/stamps";
  const std::string script = dir.path() + "/once.sh";
  std::ofstream(script) << "#!/bin/bash\n#SBATCH --gres=gpu:1\n#SBATCH --no-requeue\n"
                        << StampingJob(stamps) << "\n";
  CliResult r = RunCliIn(c.server, dir.path(), {"submit", script});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string id = FirstLine(r.out);
  ASSERT_TRUE(Within(15s, [&] { return !Stamps(stamps).empty(); }))
      << RunCli(c.server, {"show", id}).out;
  const std::string first = NodeOf(c.server, id);
  AgentProcess& stalled = first == "n1" ? c.n1 : c.n2;
  kill(stalled.pid(), SIGSTOP);
  struct Continue {
    pid_t pid;
    ~Continue() { kill(pid, SIGCONT); }
  } resume{stalled.pid()};
  ASSERT_TRUE(Within(60s, [&] { return Show(c.server, id).at("state") == "failed"; }))
      << RunCli(c.server, {"show", id}).out;
  json::value job = Show(c.server, id);
  EXPECT_EQ(job.at("reason_detail"),
            "its node was lost while it ran; not requeued (requeue: false)")
      << job;
  EXPECT_EQ(job.at("restarts").as_int64(), 0) << job;
  // The other node stays free of it, and the agent that wakes finds its copy stopped.
  kill(stalled.pid(), SIGCONT);
  std::this_thread::sleep_for(2s);
  auto spans = Stamps(stamps);
  EXPECT_EQ(spans.size(), 1u) << "a second copy ran";
  int64_t last = spans[first].last;
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(Stamps(stamps)[first].last, last);
  EXPECT_EQ(Show(c.server, id).at("state"), "failed");
}

TEST(Fencing, ACutOffAgentsJobIsStoppedBeforeItRunsElsewhere) {
  TempDir dir;
  TwoNodes c(dir.path(), /*n1_through_proxy=*/true);
  auto client = c.server.Client();
  ASSERT_TRUE(NodesReady(*client, 2));
  // n1 is the only node while the job starts, so that it runs behind the proxy.
  ASSERT_EQ(RunCli(c.server, {"drain", "n2"}).exit_code, 0);
  const std::string stamps = dir.path() + "/stamps";
  const std::string id = StartStamping(c.server, stamps);
  ASSERT_EQ(NodeOf(c.server, id), "n1");
  ASSERT_EQ(RunCli(c.server, {"undrain", "n2"}).exit_code, 0);

  c.proxy.Cut();  // a partition: the agent and its job live on, the controller hears nothing
  const std::string second = WaitForSecondCopy(c.server, id, "n1", stamps);
  EXPECT_EQ(second, "n2");
  ExpectNoOverlap(stamps, "n1", second);

  // The partition heals: n1 comes back, and the job still runs once, on n2.
  c.proxy.Heal();
  ASSERT_TRUE(Within(60s, [&] {
    return RunCli(c.server, {"nodes"}).out.find("lost") == std::string::npos;
  })) << RunCli(c.server, {"nodes"}).out;
  int64_t last = Stamps(stamps)["n1"].last;
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(Stamps(stamps)["n1"].last, last);
  EXPECT_EQ(NodeOf(c.server, id), "n2");
  // And the end of its fenced copy reaches the controller: a job that ends by itself on the
  // fence's SIGTERM (exit 143) once kept n1 from ever reporting or registering again.
  EXPECT_TRUE(Within(30s, [&] { return EndAcknowledged(dir.path(), "n1", id); }));
  EXPECT_EQ(RunCli(c.server, {"nodes"}).out.find("lost"), std::string::npos);
}

// A controller that restarts within the node timeout finds its nodes again before any
// fence: running jobs run on (the agents' leases are renewed when they reach it again).
// What the restart may take without a fence: the node timeout less the agents' report
// interval (2 s: the lease was last renewed up to that long before the stop) and their retry
// gap (a tenth of the node timeout, with a quarter more at random). With 5 s that left 1.75 s
// for the stop, the pause and the start, less than a loaded CI machine's sanitizer build
// took once; with 10 s, 5.75 s for a pause of 1 s.
TEST(Fencing, AControllerRestartKillsNoRunningJob) {
  TempDir dir;
  TwoNodes c(dir.path(), /*n1_through_proxy=*/false, /*node_timeout=*/"10s");
  const std::string stamps = dir.path() + "/stamps";
  const std::string id = c.StartJob(stamps);
  const std::string first = NodeOf(c.server, id);
  c.server.Stop();
  std::this_thread::sleep_for(1s);
  c.server.Start();
  ASSERT_TRUE(NodesReady(*c.server.Client(), 2));
  // Past the agents' fence had they not reached it again (10 s and a grace of 10 s).
  std::this_thread::sleep_for(21s);
  json::value job = Show(c.server, id);
  EXPECT_EQ(job.at("state"), "running") << job;
  EXPECT_EQ(job.at("restarts").as_int64(), 0) << job;
  auto spans = Stamps(stamps);
  EXPECT_EQ(spans.size(), 1u);
  EXPECT_GT(spans[first].last, spans[first].first + 20'000'000'000LL);  // it stamped on throughout
}

}  // namespace
}  // namespace baton::testing
