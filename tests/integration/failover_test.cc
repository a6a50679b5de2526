// Several controllers on one PostgreSQL store (issue 18): three `baton server`s, one leading
// and two standing by, two agents that know all three, and a steady stream of submits through
// the command line, as a user's script would send them. kill -9 of the leader: a standby takes
// over; no acknowledged job is lost, no job runs twice, and the jobs running at the time run
// on untouched and are re-adopted by the new leader. The time from the kill to the next
// acknowledged submit is printed (docs/ha.md reports it).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "../support/pg_server.h"
#include "harness.h"

namespace baton::testing {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Three data directories with one admin token, one agent token and one TLS CA between them (as
// an operator gives every controller the same secrets), and the controllers on them.
struct Controllers {
  std::vector<std::unique_ptr<BatonProcess>> servers;
  std::string urls;  // comma-separated, as agents and clients are given them

  Controllers(const std::string& root, const std::string& store_url) {
    for (int i = 0; i < 3; ++i) {
      std::string dir = root + "/c" + std::to_string(i);
      fs::create_directories(dir);
      // And one CA: each controller's certificate is signed by it, so that agents and clients
      // trust every controller with one --tls-ca.
      for (const char* secret : {"admin.token", "agent.token", "tls/ca.crt", "tls/ca.key"}) {
        fs::create_directories(dir + "/tls");
        if (i > 0) fs::copy_file(root + "/c0/" + secret, dir + "/" + secret);
      }
      // Logs and code snapshots on a directory all three share, as on an NFS mount.
      servers.push_back(std::make_unique<BatonProcess>(
          dir,
          std::vector<std::string>{"--store", store_url, "--lease-ttl", "3s", "--shared-dir",
                                   root + "/shared"},
          "server"));
      urls += (i > 0 ? "," : "") + servers.back()->url();
    }
  }

  // The one whose /healthz says it leads (not "standby"), or -1.
  int Leader() {
    for (size_t i = 0; i < servers.size(); ++i) {
      if (!servers[i]->Alive()) continue;
      auto r = servers[i]->Client()->Request("GET", "/healthz");
      if (r && r->status == 200 && r->body.find("standby") == std::string::npos) {
        return static_cast<int>(i);
      }
    }
    return -1;
  }
};

size_t Lines(const std::string& path) { return CountOf(ReadFile(path), "\n"); }

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// The job id `baton submit` printed (its stdout line of digits; stderr may come first).
int64_t IdIn(const std::string& out) {
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.find_first_not_of("0123456789") == std::string::npos) {
      return std::stoll(line);
    }
  }
  return 0;
}

TEST(Failover, KillNineOfTheLeaderUnderLoadLosesNothingAndRunsNothingTwice) {
  PgServer pg(BATON_SOURCE_DIR);
  ASSERT_TRUE(pg.ok()) << pg.error();
  TempDir dir;
  std::string runs = dir.path() + "/runs";
  fs::create_directories(runs);
  Controllers c(dir.path(), pg.NewDatabase("failover"));
  ASSERT_EQ(c.Leader(), 0) << "the first controller started takes the lease";
  std::vector<std::string> to_all = {"--server", c.urls};
  AgentProcess a1(*c.servers[0], "n1", dir.path() + "/a1", "2xH100-80GB", to_all);
  AgentProcess a2(*c.servers[0], "n2", dir.path() + "/a2", "2xH100-80GB", to_all);
  auto leader_client = c.servers[0]->Client();
  ASSERT_TRUE(NodesReady(*leader_client, 2));

  // One long job per node: each line of long-ID is a start.
  auto submit = [&](const std::string& server_list, const std::string& cmd, int gpus) {
    return RunCli(*c.servers[0], {"--server", server_list, "submit", "--gpus", std::to_string(gpus),
                                  "--", "sh", "-c", cmd});
  };
  std::vector<int64_t> long_jobs;
  for (int i = 0; i < 2; ++i) {
    CliResult r = submit(
        c.urls,
        "echo $$ >> " + runs + "/long-$BATON_JOB_ID; echo started-$BATON_JOB_ID; exec sleep 600",
        2);
    ASSERT_EQ(r.exit_code, 0) << r.out;
    long_jobs.push_back(IdIn(r.out));
  }
  for (int64_t id : long_jobs) {
    ASSERT_TRUE(Within(std::chrono::seconds(20),
                       [&] { return Lines(runs + "/long-" + std::to_string(id)) == 1; }))
        << "long job " << id << " did not start";
  }

  // A job held with a code snapshot, sent to the first leader, released after the failover.
  fs::create_directories(dir.path() + "/code");
  { std::ofstream(dir.path() + "/code/marker.txt") << "from-the-snapshot\n"; }
  CliResult coded = RunCli(*c.servers[0], {"--server", c.urls, "submit", "--hold", "--code",
                                           dir.path() + "/code", "--", "cat", "marker.txt"});
  ASSERT_EQ(coded.exit_code, 0) << coded.out;
  int64_t coded_id = IdIn(coded.out);
  ASSERT_GT(coded_id, 0) << coded.out;

  // Steady submits: each acknowledged id is kept with the time it was acknowledged.
  std::mutex mu;
  std::vector<std::pair<int64_t, Clock::time_point>> acked;
  std::vector<std::string> failures;
  std::atomic<bool> stop{false};
  std::thread load([&] {
    while (!stop) {
      CliResult r =
          submit(c.urls, "echo run >> " + runs + "/quick-$BATON_JOB_ID; echo ran-$BATON_JOB_ID", 0);
      std::lock_guard lock(mu);
      if (r.exit_code == 0) {
        acked.emplace_back(IdIn(r.out), Clock::now());
      } else {
        failures.push_back(r.out);
      }
    }
  });
  auto acked_count = [&] {
    std::lock_guard lock(mu);
    return acked.size();
  };
  ASSERT_TRUE(Within(std::chrono::seconds(30), [&] { return acked_count() >= 10; }));

  Clock::time_point killed = Clock::now();
  c.servers[0]->Kill9();
  size_t before = acked_count();
  ASSERT_TRUE(Within(std::chrono::seconds(30), [&] { return acked_count() >= before + 10; }))
      << "no standby took over";
  stop = true;
  load.join();
  int leader = c.Leader();
  ASSERT_GT(leader, 0);
  Clock::time_point served{};
  {
    std::lock_guard lock(mu);
    for (const auto& [id, at] : acked) {
      if (at > killed && served == Clock::time_point{}) served = at;
    }
  }
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(served - killed).count();
  std::printf("failover: the first submit acknowledged after kill -9 came %lld ms after it\n",
              static_cast<long long>(ms));
  EXPECT_TRUE(failures.empty()) << "a submit failed for good: " << failures.front();

  auto client = c.servers[leader]->Client();
  // Every acknowledged job is there and runs exactly once.
  for (const auto& [id, at] : acked) {
    std::string job = WaitForJob(*client, id, 60000);
    ASSERT_FALSE(job.empty()) << "job " << id << " never ended";
    EXPECT_EQ(JsonString(job, "state"), "succeeded") << job;
    EXPECT_EQ(Lines(runs + "/quick-" + std::to_string(id)), 1u) << "job " << id;
  }
  // The long jobs ran on untouched: started once, running now under the new leader.
  ASSERT_TRUE(NodesReady(*client, 2));
  for (int64_t id : long_jobs) {
    EXPECT_EQ(Lines(runs + "/long-" + std::to_string(id)), 1u) << "long job " << id;
    EXPECT_EQ(JsonString(GetJob(*client, id), "state"), "running");
    std::string pid = FirstLine(ReadFile(runs + "/long-" + std::to_string(id)));
    EXPECT_EQ(kill(std::stoi(pid), 0), 0) << "long job " << id << "'s process is gone";
    // Its output, sent to the old leader before the kill, was sent again to the new one.
    std::string marker = "started-" + std::to_string(id);
    EXPECT_NE(LogsUntil(*client, id, marker).find(marker), std::string::npos);
  }
  // The output of a job that ended before the kill, and the code sent before it.
  int64_t first = acked.front().first;
  std::string ran = "ran-" + std::to_string(first);
  EXPECT_NE(LogsUntil(*client, first, ran).find(ran), std::string::npos);
  ASSERT_EQ(RunCli(*c.servers[leader], {"release", std::to_string(coded_id)}).exit_code, 0);
  std::string coded_job = WaitForJob(*client, coded_id, 60000);
  EXPECT_EQ(JsonString(coded_job, "state"), "succeeded") << coded_job;
  EXPECT_NE(LogsUntil(*client, coded_id, "from-the-snapshot").find("from-the-snapshot"),
            std::string::npos);
  // And nothing else: a submit in flight at the kill, committed by the old leader and sent
  // again by the command line to the new one with the same Idempotency-Key, is one job.
  size_t jobs = CountOf(client->Request("GET", "/v1/jobs?limit=1000")->body, "{\"id\":");
  EXPECT_EQ(jobs, acked.size() + long_jobs.size() + 1) << "a retried submit made a second job";
  size_t runs_made = 0;
  for (const auto& entry : fs::directory_iterator(runs)) {
    runs_made += entry.path().filename().string().starts_with("quick-");
  }
  EXPECT_EQ(runs_made, acked.size());
  // The deposed leader's epoch is older: agents now hold the new one.
  EXPECT_EQ(FirstLine(ReadFile(dir.path() + "/a1/epoch")), "2");
  for (int64_t id : long_jobs) RunCli(*c.servers[leader], {"cancel", std::to_string(id)});
}

// A clean stop hands the lease over at once; a standby then answers with the leader's address.
TEST(Failover, AStandbyPointsAtTheLeaderAndACleanStopHandsOver) {
  PgServer pg(BATON_SOURCE_DIR);
  ASSERT_TRUE(pg.ok()) << pg.error();
  TempDir dir;
  Controllers c(dir.path(), pg.NewDatabase("handover"));
  ASSERT_EQ(c.Leader(), 0);
  auto standby = c.servers[1]->Client();
  auto r = standby->Request("GET", "/v1/jobs?state=pending");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 307);
  EXPECT_TRUE(r->standby);
  EXPECT_EQ(r->leader, c.servers[0]->url());
  // Its body is an error as every other: a code and a message.
  EXPECT_EQ(r->body, R"({"error":{"code":"unavailable","message":"this controller is a standby: )"
                     R"(the leader is )" +
                         c.servers[0]->url() + R"("}})");
  // The command line follows it, given only the standby.
  CliResult submitted =
      RunCli(*c.servers[1], {"--server", c.servers[1]->url(), "submit", "--", "true"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out;
  Clock::time_point stopped = Clock::now();
  c.servers[0]->Stop();
  ASSERT_TRUE(Within(std::chrono::seconds(10), [&] { return c.Leader() > 0; }));
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - stopped).count();
  std::printf("handover: a standby led %lld ms after the leader's SIGTERM\n",
              static_cast<long long>(ms));
  int leader = c.Leader();
  CliResult listed = RunCli(*c.servers[leader], {"--server", c.urls, "jobs", "--all"});
  EXPECT_EQ(listed.exit_code, 0) << listed.out;
  EXPECT_NE(listed.out.find(FirstLine(submitted.out) + " "), std::string::npos) << listed.out;
}

// A client that sent a submit, lost the answer and sends it again with the same
// Idempotency-Key, as `baton submit` does across servers: after kill -9 of the leader that
// committed it, the next leader answers with the same job (200, not 201), and there is one.
TEST(Failover, ASubmitRetriedOnTheNextLeaderMakesNoSecondJob) {
  PgServer pg(BATON_SOURCE_DIR);
  ASSERT_TRUE(pg.ok()) << pg.error();
  TempDir dir;
  Controllers c(dir.path(), pg.NewDatabase("retried"));
  ASSERT_EQ(c.Leader(), 0);
  const std::string body = R"({"command": ["true"], "name": "only-once", "hold": true})";
  const net::Headers key = {{"Idempotency-Key", "retry-after-failover"}};
  auto first = c.servers[0]->Client()->Request("POST", "/v1/jobs", body, key);
  ASSERT_TRUE(first.has_value()) << first.error().message();
  ASSERT_EQ(first->status, 201) << first->body;
  std::string id = JsonField(first->body, "id");

  c.servers[0]->Kill9();
  int leader = -1;
  ASSERT_TRUE(Within(std::chrono::seconds(30), [&] { return (leader = c.Leader()) > 0; }))
      << "no standby took over";
  auto client = c.servers[leader]->Client();
  auto again = client->Request("POST", "/v1/jobs", body, key);
  ASSERT_TRUE(again.has_value()) << again.error().message();
  EXPECT_EQ(again->status, 200) << again->body;
  EXPECT_EQ(JsonField(again->body, "id"), id) << again->body;
  std::string list = client->Request("GET", "/v1/jobs?limit=1000")->body;
  EXPECT_EQ(CountOf(list, "\"only-once\""), 1u) << list;
}

// A leader stalled (SIGSTOP: it holds its sockets and answers nothing): a standby takes over
// once the lease runs out, and a command given every address, the stalled one first, answers
// about as fast as against one controller (it asks them all at once), rather than waiting
// 10 s on the stalled one before each command.
TEST(Failover, AStalledLeaderHoldsNoCommandUp) {
  PgServer pg(BATON_SOURCE_DIR);
  ASSERT_TRUE(pg.ok()) << pg.error();
  TempDir dir;
  Controllers c(dir.path(), pg.NewDatabase("stalled"));
  ASSERT_EQ(c.Leader(), 0);
  c.servers[0]->Signal(SIGSTOP);
  auto live_leader = [&] {
    for (int i : {1, 2}) {
      auto r = c.servers[i]->Client()->Request("GET", "/healthz");
      if (r && r->status == 200 && r->body.find("standby") == std::string::npos) return i;
    }
    return -1;
  };
  bool took_over = Within(std::chrono::seconds(30), [&] { return live_leader() > 0; });
  int leader = live_leader();
  if (took_over) {
    for (std::vector<std::string> args :
         {std::vector<std::string>{"--server", c.urls, "jobs", "--all"},
          std::vector<std::string>{"--server", c.urls, "submit", "--", "true"}}) {
      Clock::time_point start = Clock::now();
      CliResult r = RunCli(*c.servers[leader], args);
      auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
      std::printf("stalled leader: `baton %s` answered in %lld ms\n", args[2].c_str(),
                  static_cast<long long>(ms.count()));
      EXPECT_EQ(r.exit_code, 0) << r.out;
      EXPECT_LT(ms, std::chrono::seconds(5)) << "waited on the stalled leader";
    }
  }
  c.servers[0]->Signal(SIGCONT);  // so that it can be stopped
  ASSERT_TRUE(took_over) << "no standby took over from the stalled leader";
}

// A leader cut off from PostgreSQL (its network to the database partitioned, the process
// alive): it can no longer renew its lease, so it stops with exit 75 (EX_TEMPFAIL: systemd's
// Restart=always brings it back as a standby) and acknowledges nothing after the cut; a
// controller that then leads finds every job acknowledged before.
TEST(Failover, ALeaderCutOffFromPostgresStopsWithExit75AndAcknowledgesNothingAfter) {
  PgServer pg(BATON_SOURCE_DIR);
  ASSERT_TRUE(pg.ok()) << pg.error();
  TempDir dir;
  std::string direct = pg.NewDatabase("cutoff");
  TcpProxy proxy(pg.port());
  std::string via_proxy = direct;
  via_proxy.replace(via_proxy.find(":" + std::to_string(pg.port()) + "/"),
                    std::to_string(pg.port()).size() + 2, ":" + std::to_string(proxy.port()) + "/");
  // Spawned here, not by BatonProcess, to see its exit status.
  std::string data = dir.path() + "/leader";
  std::filesystem::create_directories(data);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open((data + "/baton.out").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    execl(BATON_BINARY, BATON_BINARY, "server", "--data", data.c_str(), "--listen", "127.0.0.1:0",
          "--store", via_proxy.c_str(), "--lease-ttl", "3s", nullptr);
    _exit(127);
  }
  ASSERT_GT(pid, 0);
  std::string url;
  ASSERT_TRUE(Within(std::chrono::seconds(30), [&] {
    std::ifstream in(data + "/server.url");
    return static_cast<bool>(in >> url) && !url.empty();
  })) << ReadFile(data + "/baton.out");
  auto c = net::HttpClient::Create(url, Trimmed(ReadFile(data + "/admin.token")),
                                   {.ca_file = data + "/tls/ca.crt"});
  ASSERT_TRUE(c.has_value()) << c.error().message();
  ASSERT_TRUE(Within(std::chrono::seconds(30), [&] {
    auto r = (*c)->Request("GET", "/healthz");
    return r && r->status == 200 && r->body.find("standby") == std::string::npos;
  }));
  std::vector<int64_t> before;
  for (int i = 0; i < 3; ++i) before.push_back(Submit(**c, R"({"command": ["true"]})"));

  proxy.Cut();
  Clock::time_point cut = Clock::now();
  std::vector<int64_t> after;  // acknowledged after the cut: there must be none
  int status = 0;
  pid_t done = 0;
  while (done == 0 && Clock::now() - cut < std::chrono::seconds(40)) {
    auto r =
        (*c)->Request("POST", "/v1/jobs", R"({"command": ["true"]})", {}, std::chrono::seconds(2));
    if (r && r->status == 201) after.push_back(std::stoll(JsonField(r->body, "id")));
    done = waitpid(pid, &status, WNOHANG);
  }
  if (done == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    FAIL() << "the cut-off leader still ran 40 s after the cut: " << ReadFile(data + "/baton.out");
  }
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - cut).count();
  std::printf("cut off from PostgreSQL: the leader stopped %lld ms after the cut\n",
              static_cast<long long>(ms));
  ASSERT_TRUE(WIFEXITED(status)) << ReadFile(data + "/baton.out");
  EXPECT_EQ(WEXITSTATUS(status), 75) << ReadFile(data + "/baton.out");
  EXPECT_NE(ReadFile(data + "/baton.out").find("lost the lease"), std::string::npos);
  EXPECT_TRUE(after.empty()) << after.size() << " submits acknowledged after the cut";

  // Another controller, on the database directly: every job acknowledged before is there.
  proxy.Heal();
  BatonProcess next(dir.path() + "/next", {"--store", direct, "--lease-ttl", "3s"}, "server");
  auto n = next.Client();
  ASSERT_TRUE(Within(std::chrono::seconds(30), [&] {
    auto r = n->Request("GET", "/healthz");
    return r && r->status == 200 && r->body.find("standby") == std::string::npos;
  }));
  for (int64_t id : before) {
    auto r = n->Request("GET", "/v1/jobs/" + std::to_string(id));
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->status, 200) << "job " << id << " acknowledged before the cut was lost";
  }
}

}  // namespace
}  // namespace baton::testing
