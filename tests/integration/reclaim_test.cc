// Issue 40, "spot nodes and reclaim notices", through the real binaries: a spot agent watching a
// small EC2 metadata server on loopback (`baton agent --spot --reclaim-notice aws:URL`, IMDSv2
// tokens and all) sees a reclaim notice; its job gets SIGTERM at once with the deadline in its
// $BATON_PREEMPT_DEADLINE, checkpoints to the shared root and is requeued without a retry spent;
// the node takes no more jobs; the job resumes from its checkpoint on an on-demand node while the
// spot agent is killed at the deadline. The time of each step is printed (docs/performance.md).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <thread>

#include "core/time.h"
#include "harness.h"

namespace baton::testing {
namespace {

namespace json = boost::json;
using Clock = std::chrono::system_clock;

// EC2's instance metadata as the spot agent asks it: PUT /latest/api/token gives a session
// token; GET /latest/meta-data/spot/instance-action with that token is 404 until Notice(), then
// AWS's JSON. A GET without the token is 401 (IMDSv2 required, as AWS recommends).
class FakeImds {
 public:
  FakeImds() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    listen(fd_, 16);
    socklen_t len = sizeof addr;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~FakeImds() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // From now on the instance is to be taken back at `deadline`.
  void Notice(const std::string& deadline) {
    std::lock_guard lock(mu_);
    deadline_ = deadline;
  }
  int looks() const { return looks_; }
  int untokened() const { return untokened_; }

 private:
  void Serve() {
    while (!stop_) {
      pollfd p{.fd = fd_, .events = POLLIN, .revents = 0};
      if (poll(&p, 1, 50) <= 0) continue;
      int c = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      std::string req;
      char buf[4096];
      while (req.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = read(c, buf, sizeof buf);
        if (n <= 0) break;
        req.append(buf, static_cast<size_t>(n));
      }
      std::string reply = Answer(req);
      (void)!write(c, reply.data(), reply.size());
      close(c);
    }
  }
  std::string Answer(const std::string& req) {
    auto answer = [](int status, const std::string& body) {
      return "HTTP/1.1 " + std::to_string(status) +
             " X\r\nContent-Length: " + std::to_string(body.size()) +
             "\r\nConnection: close\r\n\r\n" + body;
    };
    if (req.starts_with("PUT /latest/api/token ")) {
      return req.find("X-aws-ec2-metadata-token-ttl-seconds: 21600") != std::string::npos
                 ? answer(200, "imds-token-1")
                 : answer(400, "");
    }
    if (!req.starts_with("GET /latest/meta-data/spot/instance-action ")) return answer(404, "");
    ++looks_;
    if (req.find("X-aws-ec2-metadata-token: imds-token-1") == std::string::npos) {
      ++untokened_;
      return answer(401, "");
    }
    std::lock_guard lock(mu_);
    if (deadline_.empty()) return answer(404, "Not Found");
    return answer(200, R"({"action": "terminate", "time": ")" + deadline_ + R"("})");
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> looks_{0};
  std::atomic<int> untokened_{0};
  std::mutex mu_;
  std::string deadline_;
  std::thread thread_;
};

std::string Rfc3339(Clock::time_point t) {
  std::time_t s = Clock::to_time_t(t);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&s));
  return buf;
}

double Seconds(Clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

// The number after `key` in the job's log ("SIGTERM-at 1790000000.123").
double Stamp(const std::string& log, const std::string& key) {
  size_t at = log.find(key + " ");
  return at == std::string::npos ? 0 : std::atof(log.c_str() + at + key.size() + 1);
}

TEST(Reclaim, ANoticeStopsTheJobAtOnceAndItResumesElsewhereWithoutSpendingARetry) {
  TempDir dir;
  FakeImds imds;
  const std::string root = dir.path() + "/shared-ckpt";
  const std::string config = dir.path() + "/baton.yaml";
  std::ofstream(config) << "checkpoint_root: " << root << "/\n";
  BatonProcess server(dir.path() + "/server", {"--config", config}, "server");
  AgentProcess spot(server, "spot01", dir.path() + "/spot01", "1xH100-80GB",
                    {"--spot", "--reclaim-notice", "aws:" + imds.url(), "--reclaim-poll", "200ms"});
  auto c = server.Client();
  ASSERT_TRUE(NodesReady(*c, 1));

  // The first attempt counts until SIGTERM, then saves its count and says what it was told;
  // the next finds the count and ends.
  const std::string script =
      "f=$BATON_CHECKPOINT_DIR/step; if [ -e $f ]; then echo \"resumed-at $(date +%s.%N) from "
      "$(cat $f) on $BATON_NODE_NAME\"; exit 0; fi; n=0; trap 'echo \"SIGTERM-at $(date +%s.%N) "
      "deadline $(cat $BATON_PREEMPT_DEADLINE) mode $(stat -c %a $BATON_PREEMPT_DEADLINE)\"; "
      "echo $n > $f; exit 143' TERM; echo started; while true; do n=$((n+1)); sleep 0.05; done";
  CliResult r = RunCli(server, {"submit", "-g", "1", "--", script});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const int64_t id = std::atoll(FirstLine(r.out).c_str());
  ASSERT_NE(LogsUntil(*c, id, "started").find("started"), std::string::npos);
  json::value job = json::parse(GetJob(*c, id));
  ASSERT_EQ(job.at("allocation").at(0).at("node"), "spot01");
  EXPECT_GT(imds.looks(), 0);
  EXPECT_EQ(imds.untokened(), 0);  // IMDSv2: every look with its session token

  // On-demand capacity comes; then the cloud says the spot node goes in 20 s.
  AgentProcess on_demand(server, "od01", dir.path() + "/od01", "1xH100-80GB");
  ASSERT_TRUE(NodesReady(*c, 2));
  // The job's launcher waits for its preemption as Determined's do (GET .../preemption).
  std::string waited;
  std::thread long_poll([&] {
    auto pc = server.Client();
    auto res = pc->Request("GET", "/v1/jobs/" + std::to_string(id) + "/preemption?timeout=60", {},
                           {}, std::chrono::seconds(90));
    waited = res ? std::to_string(res->status) + " " + res->body : res.error().message();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // its request parked
  const Clock::time_point noticed = Clock::now();
  const std::string deadline = Rfc3339(noticed + std::chrono::seconds(20));
  imds.Notice(deadline);
  const std::string said = deadline.substr(0, 19) + ".000Z";  // as Baton writes times
  long_poll.join();
  // Its deadline as the controller reckons it: the notice's time left, from when it came.
  EXPECT_NE(waited.find("200 {\"job\":" + std::to_string(id) +
                        ",\"state\":\"running\",\"preempting\":true,\"deadline\":\""),
            std::string::npos)
      << waited;
  auto reckoned =
      ParseRfc3339(JsonString(waited.substr(std::min<size_t>(4, waited.size())), "deadline"));
  ASSERT_TRUE(reckoned.has_value()) << waited;
  EXPECT_LE(std::chrono::abs(*reckoned - *ParseRfc3339(said)), std::chrono::seconds(1)) << waited;

  std::string resumed_log = LogsUntil(*c, id, "resumed-at");
  ASSERT_NE(resumed_log.find("resumed-at"), std::string::npos) << resumed_log << GetJob(*c, id);
  auto first_log = c->Request("GET", "/v1/jobs/" + std::to_string(id) + "/logs?node=spot01");
  ASSERT_TRUE(first_log);
  const std::string log = first_log->body + resumed_log;
  // SIGTERM at once, the deadline the cloud gave in $BATON_PREEMPT_DEADLINE (the job's own
  // file, 0600), and the checkpoint it wrote read back on the other node.
  EXPECT_NE(log.find("deadline " + said + " mode 600"), std::string::npos) << log;
  EXPECT_NE(log.find("on od01"), std::string::npos) << log;
  const double term = Stamp(log, "SIGTERM-at");
  const double resumed = Stamp(log, "resumed-at");
  ASSERT_GT(term, 0) << log;
  std::cout << "reclaim timing: notice -> SIGTERM " << term - Seconds(noticed)
            << " s; notice -> running elsewhere " << resumed - Seconds(noticed)
            << " s (metadata looked at every 200ms)\n";
  EXPECT_LT(term - Seconds(noticed), 10.0);  // well before the deadline; a bound, not a target
  // The deadlines' directory is the agent's: a job's user passes through it by name only.
  struct stat st {};
  ASSERT_EQ(stat((dir.path() + "/spot01/deadlines").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0711u);

  // No preemption under way now: the long-poll with no wait says so at once.
  auto now_poll = c->Request("GET", "/v1/jobs/" + std::to_string(id) + "/preemption?timeout=0");
  ASSERT_TRUE(now_poll);
  EXPECT_NE(now_poll->body.find("\"preempting\":false,\"deadline\":null,\"reason\":null"),
            std::string::npos)
      << now_poll->body;
  // The machine goes at its deadline, its agent with it.
  spot.Kill9();
  std::string done = WaitForJob(*c, id);
  ASSERT_EQ(JsonString(done, "state"), "succeeded") << done;
  job = json::parse(done);
  EXPECT_EQ(job.at("restarts"), 1);
  EXPECT_EQ(job.at("preemptions"), 1);
  // Its retries are 0: had the preemption spent one, it would have ended failed.
  EXPECT_NE(JsonString(done, "last_requeue")
                .find("requeued: preempted: its spot node spot01 is taken back (aws reclaim "
                      "notice, deadline " +
                      said + ")"),
            std::string::npos)
      << done;

  // The node said why it took no more jobs, and the event says what happened.
  auto events = c->Request("GET", "/v1/events");
  ASSERT_TRUE(events);
  EXPECT_NE(events->body.find("node spot01: spot reclaim notice (aws): taken back at " + said +
                              "; 1 job stops to be requeued elsewhere"),
            std::string::npos)
      << events->body;
  EXPECT_NE(events->body.find("\"node_reclaimed\""), std::string::npos);
}

TEST(Reclaim, ANodeWithANoticeTakesNoJobAndTheAgentRefusesANoticeOffSpot) {
  TempDir dir;
  const std::string notice = dir.path() + "/notice";
  BatonProcess server(dir.path() + "/server", {}, "server");
  // A notice file an operator's tool writes; empty: two minutes from when it is seen.
  std::ofstream(notice) << "";
  AgentProcess spot(server, "spot01", dir.path() + "/spot01", "1xH100-80GB",
                    {"--spot", "--reclaim-notice", "file:" + notice, "--reclaim-poll", "100ms"});
  auto c = server.Client();
  ASSERT_TRUE(Within(std::chrono::seconds(20), [&] {
    auto nodes = c->Request("GET", "/v1/nodes");
    return nodes &&
           nodes->body.find("spot reclaim notice (file): taken back at") != std::string::npos;
  }));
  CliResult nodes = RunCli(server, {"nodes"});
  EXPECT_NE(nodes.out.find("drained"), std::string::npos) << nodes.out;
  EXPECT_NE(nodes.out.find("spot reclaim notice (file)"), std::string::npos) << nodes.out;
  int64_t id = std::atoll(FirstLine(RunCli(server, {"submit", "-g", "1", "true"}).out).c_str());
  std::string waiting = WaitUntilWaiting(*c, id, "resources");
  EXPECT_FALSE(waiting.empty()) << GetJob(*c, id);

  // Its agent started again looks before it registers: the node is never ready meanwhile.
  spot.Stop();
  spot.Start();
  bool ever_ready = false;
  for (int i = 0; i < 30; ++i) {  // 3 s: its registration and first reports
    auto listed = c->Request("GET", "/v1/nodes");
    ASSERT_TRUE(listed);
    ever_ready |= listed->body.find("\"state\":\"ready\"") != std::string::npos;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_FALSE(ever_ready);
  EXPECT_EQ(JsonString(GetJob(*c, id), "state"), "pending");

  // Off spot, a notice means nothing: the agent says so and does not start.
  CliResult off =
      RunShell(std::string(BATON_BINARY) + " agent --server " + server.url() + " --name x --data " +
               dir.path() + "/x --reclaim-notice file:" + notice + " 2>&1");
  EXPECT_NE(off.exit_code, 0);
  EXPECT_NE(off.out.find("--reclaim-notice: only a spot node gets reclaim notices (--spot)"),
            std::string::npos)
      << off.out;
  CliResult bad =
      RunShell(std::string(BATON_BINARY) + " agent --server " + server.url() + " --name x --data " +
               dir.path() + "/x --spot --reclaim-notice azure 2>&1");
  EXPECT_NE(bad.out.find("--reclaim-notice azure: must be aws[:URL], gcp[:URL] or file:PATH"),
            std::string::npos)
      << bad.out;
}

}  // namespace
}  // namespace baton::testing
