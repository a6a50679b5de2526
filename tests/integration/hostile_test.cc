// A battery of hostile requests: each gets a 4xx JSON error, nothing is created, and the
// server keeps serving.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "harness.h"

namespace baton::testing {
namespace {

class Hostile : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    baton_ = new BatonProcess(dir_->path());
  }
  static void TearDownTestSuite() {
    delete baton_;
    delete dir_;
  }
  void TearDown() override {
    // Nothing was created, and the server still serves.
    auto c = baton_->Client();
    auto r = c->Request("GET",
                        "/v1/jobs?state=pending,held,running,succeeded,failed,cancelled,timed_out");
    ASSERT_TRUE(r.has_value()) << "server stopped answering";
    ASSERT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(JsonField(r->body, "jobs"), "[]") << "a hostile request created a job";
    EXPECT_TRUE(baton_->Alive());
  }

  void ExpectRejected(const std::string& body, int status = 400, const std::string& mentions = "") {
    auto c = baton_->Client();
    auto r = c->Request("POST", "/v1/jobs", body);
    ASSERT_TRUE(r.has_value()) << r.error().message();
    EXPECT_EQ(r->status, status) << body.substr(0, 200) << " -> " << r->body;
    ExpectJsonError(r->body, mentions);
  }

  static void ExpectJsonError(const std::string& body, const std::string& mentions) {
    std::string error = JsonField(body, "error");
    ASSERT_FALSE(error.empty()) << "not a JSON error: " << body.substr(0, 200);
    EXPECT_FALSE(JsonString(error, "code").empty()) << body;
    std::string message = JsonString(error, "message");
    EXPECT_FALSE(message.empty()) << body;
    if (!mentions.empty()) {
      EXPECT_NE(message.find(mentions), std::string::npos) << message;
    }
  }

  static TempDir* dir_;
  static BatonProcess* baton_;
};

TempDir* Hostile::dir_ = nullptr;
BatonProcess* Hostile::baton_ = nullptr;

TEST_F(Hostile, BadAndTruncatedJson) {
  ExpectRejected("{");
  ExpectRejected(R"({"command": ["echo", "hi")");
  ExpectRejected("not json at all");
  ExpectRejected("");
  ExpectRejected("[1, 2, 3]");
  ExpectRejected(R"({"command": ["a"]} trailing)");
}

TEST_F(Hostile, BadGpuCounts) {
  ExpectRejected(R"({"command": ["a"], "resources": {"gpus": -1}})", 400, "gpus");
  ExpectRejected(R"({"command": ["a"], "resources": {"gpus": 1e308}})", 400, "gpus");
  ExpectRejected(R"({"command": ["a"], "resources": {"gpus": 99999999999999999999999}})", 400,
                 "gpus");
  ExpectRejected(R"({"command": ["a"], "resources": {"gpus": NaN}})");
  ExpectRejected(R"({"command": ["a"], "resources": {"gpus": "NaN"}})", 400, "gpus");
  ExpectRejected(R"({"command": ["a"], "resources": {"gpus": "eight"}})", 400, "gpus");
  ExpectRejected(R"({"command": ["a"], "resources": {"gpus": [1]}})", 400, "gpus");
  ExpectRejected(R"({"command": ["a"], "resources": {"gpus": 1.5}})", 400, "gpus");
  ExpectRejected(R"({"command": ["a"], "resources": {"gpus": 4, "nodes": 3}})", 400, "nodes");
}

TEST_F(Hostile, EmptyOrMissingCommand) {
  ExpectRejected(R"({})", 400, "command");
  ExpectRejected(R"({"command": []})", 400, "command");
  ExpectRejected(R"({"command": ""})", 400, "command");
  ExpectRejected(R"({"command": [""]})", 400, "command");
  ExpectRejected(R"({"command": null})", 400, "command");
  ExpectRejected(R"({"command": [1]})", 400, "command");
}

TEST_F(Hostile, UnknownFields) {
  ExpectRejected(R"({"command": ["a"], "gpus": 1})", 400, "gpus");
  ExpectRejected(R"({"command": ["a"], "resources": {"tpus": 1}})", 400, "tpus");
}

TEST_F(Hostile, BadDurationsAndSizes) {
  ExpectRejected(R"({"command": ["a"], "time_limit": "forever"})", 400, "time_limit");
  ExpectRejected(R"({"command": ["a"], "time_limit": -1})", 400, "time_limit");
  ExpectRejected(R"({"command": ["a"], "time_limit": "9999d"})", 400, "time_limit");
  ExpectRejected(R"({"command": ["a"], "resources": {"memory": "12XB"}})", 400, "memory");
  ExpectRejected(R"({"command": ["a"], "resources": {"memory": -5}})", 400, "memory");
  ExpectRejected(R"({"command": ["a"], "resources": {"gpus": 1, "gpu_memory": "lots"}})", 400,
                 "gpu_memory");
}

TEST_F(Hostile, TwelveMegabyteBody) {
  std::string big = R"({"command": ["echo", ")" + std::string(12 << 20, 'x') + R"("]})";
  std::string request =
      "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + baton_->token() +
      "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(big.size()) +
      "\r\n\r\n" + big;
  std::string response = RawExchange(baton_->url(), request, 30000);
  EXPECT_EQ(RawStatus(response), 413) << response.substr(0, 300);
  size_t body = response.find("\r\n\r\n");
  ASSERT_NE(body, std::string::npos);
  ExpectJsonError(response.substr(body + 4), "");
}

TEST_F(Hostile, TwoHundredThousandNestedBrackets) {
  ExpectRejected(std::string(200'000, '['), 400);
  ExpectRejected(R"({"command": ["a"], "env": )" + std::string(200'000, '{'), 400);
}

TEST_F(Hostile, InvalidUtf8) {
  ExpectRejected("{\"command\": [\"\xc3\x28\"]}", 400);
  ExpectRejected("{\"name\": \"\xff\xff\", \"command\": [\"a\"]}", 400);
}

TEST_F(Hostile, MissingOrWrongToken) {
  auto none = baton_->Client("");
  auto r = none->Request("POST", "/v1/jobs", R"({"command": ["a"]})");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 401);
  ExpectJsonError(r->body, "");
  auto wrong = baton_->Client(std::string(64, 'f'));
  r = wrong->Request("POST", "/v1/jobs", R"({"command": ["a"]})");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 401);
  r = wrong->Request("GET", "/v1/jobs");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 401);
  auto health = none->Request("GET", "/healthz");
  ASSERT_TRUE(health.has_value());
  EXPECT_EQ(health->status, 200);  // the one route without a token
}

TEST_F(Hostile, ABatchWithOneBadJobCreatesNothing) {
  auto c = baton_->Client();
  auto r = c->Request(
      "POST", "/v1/jobs/batch",
      R"({"jobs": [{"command": ["a"]}, {"command": ["b"]}, {"command": ["c"], "resources": {"gpus": -2}}]})");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 400) << r->body;
  ExpectJsonError(r->body, "jobs[2]");
  r = c->Request("POST", "/v1/jobs/batch",
                 R"({"jobs": [{"command": ["a"]}, {"command": ["b"], "after": [777]}]})");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status / 100, 4) << r->body;
}

TEST_F(Hostile, BadRoutesMethodsAndIds) {
  auto c = baton_->Client();
  for (auto [method, target, status] : std::vector<std::tuple<std::string, std::string, int>>{
           {"GET", "/v1/jobs/abc", 400},
           {"GET", "/v1/jobs/-1", 400},
           {"GET", "/v1/jobs/99999999999999999999999", 400},
           {"GET", "/v1/jobs/424242", 404},
           {"POST", "/v1/jobs/424242/cancel", 404},
           {"GET", "/v1/nowhere", 404},
           {"DELETE", "/v1/jobs", 405},
           {"GET", "/v1/jobs?limit=-4", 400},
           {"GET", "/v1/jobs?state=exploded", 400},
           {"GET", "/v1/jobs/1/logs?offset=-1", 400},
           {"GET", "/v1/jobs/1/logs?node=../../admin", 400}}) {
    auto r = c->Request(method, target);
    ASSERT_TRUE(r.has_value()) << target;
    EXPECT_EQ(r->status, status) << method << " " << target << " -> " << r->body;
    ExpectJsonError(r->body, "");
  }
}

TEST_F(Hostile, MalformedHttp) {
  EXPECT_EQ(RawStatus(RawExchange(baton_->url(), "GARBAGE\r\n\r\n")), 400);
  std::string huge_header =
      "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(64 << 10, 'a') + "\r\n\r\n";
  EXPECT_EQ(RawStatus(RawExchange(baton_->url(), huge_header)), 431);
  // A truncated body, then the client goes away: the server just drops the connection.
  RawExchange(baton_->url(),
              "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"comm", 300);
}

// Issue 37: a request's head that stalls holds its connection seconds, not the 300 s an idle
// keep-alive connection may wait: a new connection's first bytes, and a head once begun on a
// kept-alive one, each have 10 s.
TEST_F(Hostile, AStalledRequestHeadIsDroppedInSeconds) {
  for (const std::string& partial :
       {std::string("G"), std::string("GET /v1/jobs HTTP/1.1\r\nHost: x\r\n")}) {
    auto start = std::chrono::steady_clock::now();
    std::string answer = RawExchange(baton_->url(), partial, 60000);
    auto held = std::chrono::steady_clock::now() - start;
    EXPECT_LT(held, std::chrono::seconds(20)) << "held a stalled head for long: " << partial;
    EXPECT_EQ(answer, "");
  }
  // A kept-alive connection that sends its next request's first byte and stalls: dropped too.
  auto start = std::chrono::steady_clock::now();
  std::string answer = RawExchange(
      baton_->url(), "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\n", 60000);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  EXPECT_EQ(RawStatus(answer), 200) << answer;
}

// Opens `count` TCP connections to 127.0.0.1:`port`, each sending one byte; their descriptors.
std::vector<int> IdleConnections(int port, int count) {
  std::vector<int> fds;
  for (int i = 0; i < count; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) break;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) (void)!write(fd, "G", 1);
    fds.push_back(fd);
  }
  return fds;
}

// More idle connections than the server has descriptors (its limit's worth and 1,000 more:
// 21,000 on this VM, whose limit is 20,000, from two processes, as one cannot hold them all),
// each sending one byte: before the caps they took every descriptor, and commands on the local
// socket and over TCP timed out. Now the server keeps its TCP connections under a cap below the
// limit, closing the oldest idle ones for room, and everyone else is answered.
TEST(HostileConnections, TwentyThousandIdleConnectionsKeepNoOneOut) {
  rlimit limit{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &limit), 0);
  if (limit.rlim_max > 30000) {
    GTEST_SKIP() << "the descriptor limit is " << limit.rlim_max
                 << ": more idle connections than that would need more than loopback's "
                    "ephemeral ports";
  }
  rlimit raised{limit.rlim_max, limit.rlim_max};  // as the server raises its own
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &raised), 0);
  TempDir dir;
  BatonProcess baton(dir.path(), {"--gpus", "1xH100-80GB"});
  int port = std::stoi(baton.url().substr(baton.url().rfind(':') + 1));
  int total = static_cast<int>(limit.rlim_max) + 1000;

  // Half from a child process, half from here.
  int ready[2], done[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(done), 0);
  pid_t child = fork();
  if (child == 0) {
    close(ready[0]);
    close(done[1]);  // so that the parent's close is the end of the pipe
    auto fds = IdleConnections(port, total / 2);
    std::string count = std::to_string(fds.size());
    (void)!write(ready[1], count.data(), count.size());
    close(ready[1]);
    char byte;
    (void)!read(done[0], &byte, 1);  // until the parent closes its end
    _exit(0);
  }
  close(ready[1]);
  close(done[0]);
  auto mine = IdleConnections(port, total - total / 2);
  char count[32] = {};
  (void)!read(ready[0], count, sizeof count - 1);
  close(ready[0]);
  EXPECT_EQ(static_cast<int>(mine.size()) + std::atoi(count), total);

  // While the flood holds: the local socket and a new TCP connection are both answered.
  auto start = std::chrono::steady_clock::now();
  CliResult jobs = RunShell("BATON_HOME=" + dir.path() + " timeout 20 " + BATON_BINARY + " jobs");
  auto took = std::chrono::steady_clock::now() - start;
  std::printf(
      "%d idle connections: `baton jobs` answered in %lld ms\n", total,
      static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(took).count()));
  EXPECT_EQ(jobs.exit_code, 0) << jobs.out;
  // (The figure is reported in docs/performance.md; here: answered, not hung.)
  EXPECT_LT(took, std::chrono::seconds(10));
  CliResult over_tcp = RunShell("BATON_HOME=" + dir.path() + " BATON_SERVER=" + baton.url() +
                                " timeout 20 " + BATON_BINARY + " jobs");
  EXPECT_EQ(over_tcp.exit_code, 0) << over_tcp.out;
  auto health = baton.Client()->Request("GET", "/healthz");
  ASSERT_TRUE(health.has_value()) << health.error().message();
  EXPECT_EQ(health->status, 200);

  for (int fd : mine) close(fd);
  close(done[1]);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(baton.Alive());
  setrlimit(RLIMIT_NOFILE, &limit);
}

}  // namespace
}  // namespace baton::testing
