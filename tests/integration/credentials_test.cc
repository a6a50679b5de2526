// Per-node credentials (issue 18): an agent joins with a join token and gets a credential bound
// to its node; that credential acts for its node only, a join token only joins, a one-time join
// token joins once, a revoked node is refused, and no secret reaches a job. Secret files that
// others may read stop the server and the agent at start.
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "harness.h"

namespace baton::testing {
namespace {

namespace fs = std::filesystem;

int StatusOf(net::HttpClient& c, const std::string& method, const std::string& target,
             const std::string& body = "", std::string* out = nullptr) {
  auto r = c.Request(method, target, body);
  if (!r) return 0;
  if (out != nullptr) *out = r->body;
  return r->status;
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

TEST(Credentials, AnAgentsCredentialActsForItsNodeOnly) {
  TempDir dir;
  BatonProcess server(dir.path() + "/s", {}, "server");
  AgentProcess n1(server, "n1", dir.path() + "/n1", "1xH100-80GB");
  auto admin = server.Client();
  ASSERT_TRUE(NodesReady(*admin, 1));
  // The credential it was given, private to the agent's user.
  std::string credential_file = dir.path() + "/n1/credential";
  struct stat st {};
  ASSERT_EQ(stat(credential_file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::string credential = Trimmed(ReadFile(credential_file));
  ASSERT_EQ(credential.size(), 64u);

  auto as_n1 = server.Client(credential);
  std::string body;
  EXPECT_EQ(StatusOf(*as_n1, "GET", "/v1/agent/orders?node=n2&session=1&after=0", "", &body), 403);
  EXPECT_NE(body.find("node n1's, not node n2's"), std::string::npos) << body;
  EXPECT_EQ(StatusOf(*as_n1, "POST", "/v1/agent/register",
                     R"({"node": {"name": "n2", "gpus": []}, "jobs": []})"),
            403);
  EXPECT_EQ(StatusOf(*as_n1, "POST", "/v1/agent/report", R"({"node": "n2", "session": 1})"), 403);
  EXPECT_EQ(StatusOf(*as_n1, "GET", "/v1/jobs"), 403);  // and none of the REST API

  // The join token (agent.token) only joins: no orders, no reports, no jobs.
  std::string join = Trimmed(ReadFile(server.data_dir() + "/agent.token"));
  auto joiner = server.Client(join);
  EXPECT_EQ(StatusOf(*joiner, "GET", "/v1/agent/orders?node=n1&session=1&after=0", "", &body), 403);
  EXPECT_NE(body.find("only for joining"), std::string::npos) << body;
  EXPECT_EQ(StatusOf(*joiner, "GET", "/v1/jobs"), 403);
  // Nor joins it as a node that has a credential.
  EXPECT_EQ(StatusOf(*joiner, "POST", "/v1/agent/join", R"({"node": "n1"})", &body), 409);
  EXPECT_NE(body.find("node n1 has joined already"), std::string::npos) << body;

  // Revoked: the agent is refused from then on, and says why.
  CliResult revoke = RunCli(server, {"node", "revoke", "n1"});
  ASSERT_EQ(revoke.exit_code, 0) << revoke.out;
  EXPECT_EQ(StatusOf(*as_n1, "POST", "/v1/agent/report", R"({"node": "n1", "session": 1})"), 401);
  n1.Stop();
  n1.Start();
  ASSERT_TRUE(Within(std::chrono::seconds(10), [&] {
    return ReadFile(dir.path() + "/n1.out").find("refused this node's credential") !=
           std::string::npos;
  })) << ReadFile(dir.path() + "/n1.out");
  EXPECT_NE(RunCli(server, {"node", "revoke", "n1"}).exit_code, 0);  // nothing left to revoke
}

TEST(Credentials, AOneTimeJoinTokenJoinsOneNodeOnce) {
  TempDir dir;
  BatonProcess server(dir.path() + "/s", {}, "server");
  CliResult made = RunCli(server, {"node", "join-token"});
  ASSERT_EQ(made.exit_code, 0) << made.out;
  std::string once = FirstLine(made.out);
  ASSERT_EQ(once.size(), 64u) << made.out;
  auto joiner = server.Client(once);
  std::string body;
  ASSERT_EQ(StatusOf(*joiner, "POST", "/v1/agent/join", R"({"node": "gpu07"})", &body), 201);
  EXPECT_EQ(JsonString(body, "node"), "gpu07");
  EXPECT_EQ(JsonString(body, "credential").size(), 64u);
  EXPECT_EQ(StatusOf(*joiner, "POST", "/v1/agent/join", R"({"node": "gpu08"})", &body), 401);
  // A user cannot make join tokens.
  CliResult list = RunCli(server, {"token", "list"});
  EXPECT_NE(list.out.find("join"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("gpu07"), std::string::npos) << list.out;
}

TEST(Credentials, NoSecretReachesAJob) {
  if (geteuid() != 0 || getpwnam("nobody") == nullptr)
    GTEST_SKIP() << "jobs run as their user only under root";
  TempDir dir;
  BatonProcess baton(dir.path(), {"--gpus", "1xH100-80GB"});
  auto admin = baton.Client();
  ASSERT_TRUE(NodesReady(*admin, 1));  // the local agent has joined
  std::string secrets[] = {Trimmed(ReadFile(dir.path() + "/admin.token")),
                           Trimmed(ReadFile(dir.path() + "/agent.token")),
                           Trimmed(ReadFile(dir.path() + "/agent/credential"))};
  CliResult token = RunCli(baton, {"token", "create", "--user", "nobody"});
  ASSERT_EQ(token.exit_code, 0) << token.out;
  auto nobody = baton.Client(FirstLine(token.out));
  // Everything the job can see: its environment, its directory, the agent's secrets.
  std::string cmd = "env; ls -la .; cat " + dir.path() + "/agent/credential " + dir.path() +
                    "/agent.token " + dir.path() + "/admin.token " + dir.path() + "/tls/ca.key " +
                    dir.path() + "/tls/server.key; true";
  int64_t id = Submit(*nobody, R"({"command": ")" + cmd + R"(", "workdir": "/tmp"})");
  ASSERT_GT(id, 0);
  ASSERT_FALSE(WaitForJob(*nobody, id).empty());
  std::string log = LogsUntil(*nobody, id, "Permission denied");
  EXPECT_NE(log.find("USER=nobody"), std::string::npos) << log;
  EXPECT_NE(log.find("Permission denied"), std::string::npos) << log;
  for (const std::string& s : secrets) {
    ASSERT_EQ(s.size(), 64u);
    EXPECT_EQ(log.find(s), std::string::npos) << "a secret reached the job:\n" << log;
  }
  // Nor the TLS keys (the server's, and its CA's that signs certificates).
  EXPECT_EQ(log.find("PRIVATE KEY"), std::string::npos) << "a TLS key reached the job:\n" << log;
}

TEST(Credentials, SecretFilesOthersMayReadStopTheServerAndTheAgent) {
  TempDir dir;
  std::string data = dir.path() + "/s";
  { BatonProcess first(data, {}, "server"); }
  chmod((data + "/admin.token").c_str(), 0644);
  try {
    BatonProcess refused(data, {}, "server");
    ADD_FAILURE() << "the server started with an admin token others may read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "admin.token (the admin token) may be read by others (mode 0644)"),
              std::string::npos)
        << e.what();
  }
  chmod((data + "/admin.token").c_str(), 0600);
  BatonProcess server(data, {}, "server");
  {
    AgentProcess n1(server, "n1", dir.path() + "/n1", "1xH100-80GB");
    ASSERT_TRUE(NodesReady(*server.Client(), 1));
  }
  chmod((dir.path() + "/n1/credential").c_str(), 0640);
  CliResult agent = RunCli(server, {"agent", "--server", server.url(), "--name", "n1", "--data",
                                    dir.path() + "/n1", "--gpus", "1xH100-80GB"});
  EXPECT_EQ(agent.exit_code, 1) << agent.out;
  EXPECT_NE(agent.out.find("credential (this node's credential) may be read by others"),
            std::string::npos)
      << agent.out;
}

// A node's credential reaches only the jobs placed on it: it fetches no other job's code, and
// output it sends for another node's job, or for a job that does not exist, is never written.
TEST(Credentials, ANodeReachesOnlyTheJobsPlacedOnIt) {
  TempDir dir;
  BatonProcess server(dir.path() + "/s", {}, "server");
  AgentProcess n1(server, "n1", dir.path() + "/n1", "1xH100-80GB");
  AgentProcess n2(server, "n2", dir.path() + "/n2", "1xH100-80GB");
  auto admin = server.Client();
  ASSERT_TRUE(NodesReady(*admin, 2));
  std::string proj = dir.path() + "/proj";
  fs::create_directories(proj);
  std::ofstream(proj + "/train.py") << "print('private code')\n";
  CliResult r = RunCli(server, {"submit", "-g", "1", "--code", proj, "--", "sleep", "600"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  int64_t id = std::stoll(r.out.substr(r.out.find_last_of('\n', r.out.size() - 2) + 1));
  std::string job;
  ASSERT_TRUE(Within(std::chrono::seconds(20), [&] {
    job = GetJob(*admin, id);
    return JsonString(job, "state") == "running";
  })) << job;
  std::string code = JsonString(job, "code");
  ASSERT_EQ(code.size(), 64u) << job;
  bool on_n1 = job.find(R"("node":"n1")") != std::string::npos;
  std::string here = on_n1 ? "n1" : "n2", other = on_n1 ? "n2" : "n1";
  auto as_here = server.Client(Trimmed(ReadFile(dir.path() + "/" + here + "/credential")));
  auto as_other = server.Client(Trimmed(ReadFile(dir.path() + "/" + other + "/credential")));

  std::string body;
  EXPECT_EQ(StatusOf(*as_other, "GET", "/v1/code/" + code, "", &body), 403);
  EXPECT_NE(body.find("node " + other + " runs no job with the code snapshot"), std::string::npos)
      << body;
  EXPECT_EQ(StatusOf(*as_here, "GET", "/v1/code/" + code), 200);
  EXPECT_EQ(StatusOf(*admin, "GET", "/v1/code/" + code), 200);

  // The other node's report carries output for this job and for job 999: none is written,
  // whether the controller takes the report (its session) or refuses it (a made-up one).
  auto chunk = [](int64_t job) {
    return R"({"job": )" + std::to_string(job) +
           R"(, "offset": 0, "data_b64": "aGlqYWNrZWQ=", "stream": "output"})";
  };
  for (const char* session : {"1", "999999"}) {
    StatusOf(*as_other, "POST", "/v1/agent/report",
             R"({"node": ")" + other + R"(", "session": )" + session + R"(, "logs": [)" +
                 chunk(id) + ", " + chunk(999) + "]}");
  }
  std::string logs_dir = server.data_dir() + "/logs";
  EXPECT_FALSE(fs::exists(logs_dir + "/999")) << "output of a job that does not exist";
  EXPECT_FALSE(fs::exists(logs_dir + "/" + std::to_string(id) + "/" + other + ".log"));
  CliResult shown = RunCli(server, {"logs", std::to_string(id), "--node", other});
  EXPECT_EQ(shown.out.find("hijacked"), std::string::npos) << shown.out;
  EXPECT_NE(ReadFile(dir.path() + "/s/baton.out")
                .find("node " + other + " sent output of job " + std::to_string(id) +
                      ", which is not placed on it: not written"),
            std::string::npos);
  RunCli(server, {"cancel", std::to_string(id)});
}

}  // namespace
}  // namespace baton::testing
