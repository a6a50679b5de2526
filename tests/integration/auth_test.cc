// Users and tokens through the real binary: an admin creates a user's token, the user works
// with it, is refused what is not theirs (401, 403), and a revoked token stops working, across
// a restart too.
#include <gtest/gtest.h>
#include <pwd.h>
#include <unistd.h>

#include <sstream>
#include <string>

#include "harness.h"

namespace baton::testing {
namespace {

int Status(net::HttpClient& c, const std::string& method, const std::string& target,
           const std::string& body = "", std::string* out = nullptr) {
  auto r = c.Request(method, target, body);
  if (!r) return 0;
  if (out != nullptr) *out = r->body;
  return r->status;
}

// `baton token create` as the admin: the secret it prints (and its id).
std::string CreateToken(const BatonProcess& baton, const std::vector<std::string>& flags,
                        std::string* id = nullptr) {
  std::vector<std::string> args = {"token", "create"};
  args.insert(args.end(), flags.begin(), flags.end());
  CliResult r = RunCli(baton, args);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  std::string secret = r.out.substr(0, r.out.find('\n'));
  if (id != nullptr) {
    // "ID USER ..." then "2   nobody ...": the first column of the newest user-role line (the
    // local agent's node credential, role agent, may come before or after it).
    CliResult list = RunCli(baton, {"token", "list"});
    std::istringstream lines(list.out);
    for (std::string line; std::getline(lines, line);) {
      if (line.find(" user ") != std::string::npos) *id = line.substr(0, line.find(' '));
    }
  }
  return secret;
}

// The first node's name in GET /v1/nodes.
std::string FirstNode(net::HttpClient& c) {
  auto r = c.Request("GET", "/v1/nodes");
  if (!r) return "";
  size_t at = r->body.find("\"name\":\"");
  if (at == std::string::npos) return "";
  at += 8;
  return r->body.substr(at, r->body.find('"', at) - at);
}

TEST(Auth, AnAdminMakesAUserTokenThatWorksUntilRevokedAcrossARestart) {
  TempDir dir;
  auto baton = std::make_unique<BatonProcess>(dir.path());
  std::string id;
  std::string secret = CreateToken(*baton, {"--user", "nobody", "--name", "laptop"}, &id);
  EXPECT_FALSE(id.empty());
  ASSERT_EQ(secret.size(), 64u) << secret;
  CliResult list = RunCli(*baton, {"token", "list"});
  EXPECT_NE(list.out.find("nobody"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("laptop"), std::string::npos) << list.out;
  EXPECT_EQ(list.out.find(secret), std::string::npos) << list.out;  // never shown again
  auto user = baton->Client(secret);
  EXPECT_EQ(Status(*user, "GET", "/v1/jobs"), 200);

  // A restart: the token still works (only its hash was stored).
  baton->Stop();
  baton->Start();
  user = baton->Client(secret);
  EXPECT_EQ(Status(*user, "GET", "/v1/jobs"), 200);

  ASSERT_EQ(RunCli(*baton, {"token", "revoke", id}).exit_code, 0);
  std::string body;
  EXPECT_EQ(Status(*user, "GET", "/v1/jobs", "", &body), 401);
  EXPECT_NE(body.find("unknown token"), std::string::npos) << body;
  baton->Stop();
  baton->Start();
  EXPECT_EQ(Status(*baton->Client(secret), "GET", "/v1/jobs"), 401);  // revoked for good
  EXPECT_EQ(Status(*baton->Client(), "GET", "/v1/jobs"), 200);        // the admin's still works
}

TEST(Auth, AUserIsRefusedWhatIsNotTheirs) {
  if (geteuid() != 0 || getpwnam("nobody") == nullptr)
    GTEST_SKIP() << "jobs run as their user only under root";
  TempDir dir;
  BatonProcess baton(dir.path(), {"--gpus", "2xH100-80GB"});
  auto admin = baton.Client();
  std::string secret = CreateToken(baton, {"--user", "nobody"});
  auto user = baton.Client(secret);

  // The admin's job, with a secret in its environment.
  int64_t theirs = Submit(*admin, R"({"command": ["sleep", "60"], "env": {"API_KEY": "s3cr3t"}})");
  // The user's own job runs as the user.
  int64_t mine =
      Submit(*user, R"({"command": "id -un", "workdir": "/tmp", "env": {"MINE": "yes"}})");
  ASSERT_GT(mine, 0);
  std::string job = WaitForJob(*user, mine);
  EXPECT_EQ(JsonString(job, "user"), "nobody") << job;
  EXPECT_EQ(JsonString(job, "state"), "succeeded") << job;
  EXPECT_NE(job.find("\"MINE\":\"yes\""), std::string::npos) << job;  // their own env, in full
  EXPECT_NE(LogsUntil(*user, mine, "nobody").find("nobody\n"), std::string::npos);

  std::string body;
  // Another's job: visible, but not its environment, nor its logs; and not theirs to cancel.
  ASSERT_EQ(Status(*user, "GET", "/v1/jobs/" + std::to_string(theirs), "", &body), 200);
  EXPECT_EQ(body.find("s3cr3t"), std::string::npos) << body;
  ASSERT_EQ(Status(*user, "GET", "/v1/jobs", "", &body), 200);
  EXPECT_EQ(body.find("s3cr3t"), std::string::npos) << body;
  EXPECT_EQ(Status(*user, "GET", "/v1/jobs/" + std::to_string(theirs) + "/logs"), 403);
  EXPECT_EQ(Status(*user, "POST", "/v1/jobs/" + std::to_string(theirs) + "/cancel"), 403);
  // Admin work.
  std::string node = FirstNode(*admin);
  ASSERT_FALSE(node.empty());
  EXPECT_EQ(Status(*user, "POST", "/v1/nodes/" + node + "/drain"), 403);
  EXPECT_EQ(
      Status(*user, "POST", "/v1/nodes/" + node + "/inject", R"({"gpu": 0, "fault": "lost"})"),
      403);
  EXPECT_EQ(Status(*user, "POST", "/v1/tokens", R"({"user": "nobody", "role": "admin"})", &body),
            403)
      << body;
  EXPECT_EQ(Status(*user, "POST", "/v1/tokens", R"({"user": "root"})", &body), 403) << body;
  EXPECT_EQ(Status(*user, "GET", "/v1/agent/orders?node=x&session=1"), 403);
  // Their own: a second token for themself, which they may list and revoke.
  ASSERT_EQ(Status(*user, "POST", "/v1/tokens", R"({"name": "ci"})", &body), 201) << body;
  EXPECT_EQ(JsonString(body, "user"), "nobody");
  // No token, or a wrong one: 401.
  EXPECT_EQ(Status(*baton.Client("wrong"), "GET", "/v1/jobs"), 401);
  EXPECT_EQ(Status(*baton.Client(""), "GET", "/v1/jobs"), 401);
  // The admin sees everything.
  ASSERT_EQ(Status(*admin, "GET", "/v1/jobs/" + std::to_string(theirs), "", &body), 200);
  EXPECT_NE(body.find("s3cr3t"), std::string::npos) << body;
  RunCli(baton, {"cancel", std::to_string(theirs)});
}

}  // namespace
}  // namespace baton::testing
