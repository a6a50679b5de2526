// TLS through the real binary (issue 18): `baton up` makes its own CA and certificate on first
// start and serves https:// (server.url says so); the CLI trusts the local CA by itself and
// another with --tls-ca / BATON_TLS_CA; an agent joins over https with --tls-ca and is refused,
// saying why, without it; a server given --tls-cert/--tls-key serves that certificate; bad or
// readable key files stop the start with a clear message; a restart keeps the CA.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "harness.h"

namespace baton::testing {
namespace {

namespace fs = std::filesystem;

// Runs `command` with `env` (NAME=VALUE ...) and none of the caller's BATON_ variables: its
// output, and its exit code in *code.
std::string Sh(const std::string& env, const std::string& command, int* code = nullptr) {
  CliResult r = RunShell("unset BATON_SERVER BATON_TOKEN BATON_TLS_CA; " +
                         (env.empty() ? "" : "export " + env + "; ") + command);
  if (code != nullptr) *code = r.exit_code;
  return r.out;
}

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  ::stat(path.c_str(), &st);
  return st.st_mode & 0777;
}

const std::string kBaton = BATON_BINARY;

TEST(Tls, BatonUpServesHttpsAndTheCommandLineTrustsItsOwnCa) {
  TempDir dir;
  BatonProcess baton(dir.path() + "/s");
  ASSERT_EQ(baton.url().rfind("https://127.0.0.1:", 0), 0u) << baton.url();
  std::string tls = baton.data_dir() + "/tls";
  EXPECT_EQ(ModeOf(tls), 0700u);
  EXPECT_EQ(ModeOf(tls + "/ca.key"), 0600u);
  EXPECT_EQ(ModeOf(tls + "/server.key"), 0600u);
  EXPECT_TRUE(fs::exists(tls + "/ca.crt"));
  EXPECT_TRUE(fs::exists(tls + "/server.crt"));

  // A user's commands, as typed: nothing but BATON_HOME (the local server.url and CA).
  CliResult submitted = RunCli(baton, {"submit", "--gpus", "1", "--", "echo", "over tls"});
  ASSERT_EQ(submitted.exit_code, 0) << submitted.out;
  std::string id = FirstLine(submitted.out);
  CliResult waited = RunCli(baton, {"wait", id});
  EXPECT_EQ(waited.exit_code, 0) << waited.out;
  CliResult logs = RunCli(baton, {"logs", id});
  EXPECT_NE(logs.out.find("over tls"), std::string::npos) << logs.out;

  // The same server from a user whose home has no CA: refused, saying what to do; then with
  // BATON_TLS_CA (what a remote user is given), and with --tls-ca, it works.
  std::string elsewhere = "BATON_HOME=" + dir.path() + "/nobody BATON_SERVER=" + baton.url() +
                          " BATON_TOKEN=" + baton.token();
  int code = 0;
  std::string out = Sh(elsewhere, kBaton + " jobs", &code);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("the server's certificate is not trusted"), std::string::npos) << out;
  EXPECT_NE(out.find("--tls-ca"), std::string::npos) << out;
  out = Sh(elsewhere + " BATON_TLS_CA=" + tls + "/ca.crt", kBaton + " jobs --all", &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find(id), std::string::npos) << out;
  out = Sh(elsewhere, kBaton + " --tls-ca " + tls + "/ca.crt show " + id, &code);
  EXPECT_EQ(code, 0) << out;
  // A --tls-ca that is not a certificate file: named.
  out = Sh(elsewhere, kBaton + " jobs --tls-ca /etc/hostname", &code);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("--tls-ca /etc/hostname"), std::string::npos) << out;

  // Plain HTTP from this machine (loopback) is still answered on the same port.
  std::string plain = "http" + baton.url().substr(5);
  out = Sh("", "curl -s " + plain + "/healthz", &code);
  EXPECT_NE(out.find("\"status\""), std::string::npos) << out;
  // And curl over https with the CA.
  out = Sh("", "curl -s --cacert " + tls + "/ca.crt " + baton.url() + "/healthz", &code);
  EXPECT_NE(out.find("\"status\""), std::string::npos) << out;

  // A restart keeps the CA (agents and users keep their --tls-ca) and the certificate.
  std::string ca = ReadFile(tls + "/ca.crt"), cert = ReadFile(tls + "/server.crt");
  baton.Stop();
  baton.Start();
  EXPECT_EQ(ReadFile(tls + "/ca.crt"), ca);
  EXPECT_EQ(ReadFile(tls + "/server.crt"), cert);
  EXPECT_EQ(RunCli(baton, {"show", id}).exit_code, 0);
}

TEST(Tls, AnAgentJoinsOverHttpsWithTheCaAndIsToldWhyWithoutIt) {
  TempDir dir;
  BatonProcess server(dir.path() + "/s", {}, "server");
  ASSERT_EQ(server.url().rfind("https://", 0), 0u) << server.url();
  // Without --tls-ca: the system's CAs do not know this server's.
  std::string token = ReadFile(server.data_dir() + "/agent.token");
  token.erase(token.find_last_not_of("\n") + 1);
  std::string log = dir.path() + "/lost.out";
  std::string cmd = kBaton + " agent --server " + server.url() + " --token " + token +
                    " --name lost --data " + dir.path() + "/lost --gpus 1xH100-80GB > " + log +
                    " 2>&1 & echo $!";
  std::string pid = Sh("BATON_NVML_LIBRARY=/nonexistent", cmd);
  ASSERT_FALSE(pid.empty());
  EXPECT_TRUE(Within(std::chrono::seconds(20), [&] {
    return ReadFile(log).find("the server's certificate is not trusted") != std::string::npos;
  })) << ReadFile(log);
  Sh("", "kill " + pid);

  // With it (the harness passes --tls-ca DATA/tls/ca.crt): it joins and runs a job, whose
  // output comes back over the same link.
  AgentProcess agent(server, "n1", dir.path() + "/n1", "1xH100-80GB");
  auto client = server.Client();
  ASSERT_TRUE(NodesReady(*client, 1));
  int64_t id = Submit(
      *client, R"({"command": ["sh", "-c", "echo joined over tls"], "resources": {"gpus": 1}})");
  std::string job = WaitForJob(*client, id);
  EXPECT_EQ(JsonString(job, "state"), "succeeded") << job;
  EXPECT_NE(LogsUntil(*client, id, "joined over tls").find("joined over tls"), std::string::npos);
  // The lost one never joined.
  EXPECT_EQ(ReadFile(log).find("as node lost"), std::string::npos) << ReadFile(log);
}

TEST(Tls, AServerGivenACertificateServesIt) {
  TempDir dir;
  // An operator's certificate: here one made by `openssl`, for 127.0.0.1, from a CA of theirs.
  std::string pki = dir.path() + "/pki";
  fs::create_directories(pki);
  int code = 0;
  std::string out = Sh("",
                       "cd " + pki +
                           " && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 "
                           "-nodes -subj /CN=ops-ca -days 30 -keyout ca.key -out ca.crt "
                           "&& openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
                           "-subj /CN=ctl -keyout ctl.key -out ctl.csr "
                           "&& printf 'subjectAltName=IP:127.0.0.1\\n' > ext "
                           "&& openssl x509 -req -in ctl.csr -CA ca.crt -CAkey ca.key "
                           "-CAcreateserial -days 30 -extfile ext -out ctl.crt && chmod 600 "
                           "ctl.key",
                       &code);
  ASSERT_EQ(code, 0) << out;
  BatonProcess server(dir.path() + "/s",
                      {"--tls-cert", pki + "/ctl.crt", "--tls-key", pki + "/ctl.key"}, "server");
  // Its own CA is not made; local tools use loopback (plain HTTP is served to loopback).
  EXPECT_FALSE(fs::exists(server.data_dir() + "/tls/ca.crt"));
  EXPECT_EQ(server.url().rfind("http://127.0.0.1:", 0), 0u) << server.url();
  std::string https = "https" + server.url().substr(4);
  out = Sh("BATON_HOME=" + server.data_dir() + " BATON_SERVER=" + https + " BATON_TLS_CA=" + pki +
               "/ca.crt",
           kBaton + " nodes", &code);
  EXPECT_EQ(code, 0) << out;
  // The subject the server presents is the operator's.
  out = Sh("", "echo | openssl s_client -connect 127.0.0.1:" + https.substr(https.rfind(':') + 1) +
                   " -CAfile " + pki + "/ca.crt 2>/dev/null | openssl x509 -noout -subject");
  EXPECT_NE(out.find("CN = ctl"), std::string::npos) << out;
}

TEST(Tls, BadKeysStopTheStartWithAClearMessage) {
  TempDir dir;
  std::string pki = dir.path() + "/pki";
  fs::create_directories(pki);
  int code = 0;
  std::string out =
      Sh("",
         "cd " + pki +
             " && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
             "-subj /CN=a -days 1 -keyout a.key -out a.crt && openssl req -x509 -newkey ec "
             "-pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=b -days 1 -keyout b.key "
             "-out b.crt && chmod 600 a.key b.key",
         &code);
  ASSERT_EQ(code, 0) << out;
  auto serve = [&](const std::string& flags) {
    return Sh("BATON_NVML_LIBRARY=/nonexistent",
              kBaton + " server --data " + dir.path() + "/s --listen 127.0.0.1:0 " + flags, &code);
  };
  out = serve("--tls-cert " + pki + "/a.crt --tls-key " + pki + "/b.key");
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("--tls-key " + pki + "/b.key: not the key of the certificate"),
            std::string::npos)
      << out;
  out = serve("--tls-cert " + pki + "/a.crt");
  EXPECT_NE(out.find("--tls-cert and --tls-key go together"), std::string::npos) << out;
  ::chmod((pki + "/a.key").c_str(), 0644);
  out = serve("--tls-cert " + pki + "/a.crt --tls-key " + pki + "/a.key");
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("chmod 600 " + pki + "/a.key"), std::string::npos) << out;

  // The server's own key made readable by others: refused at the next start.
  { BatonProcess once(dir.path() + "/own", {}, "server"); }
  ::chmod((dir.path() + "/own/tls/server.key").c_str(), 0644);
  out = Sh("BATON_NVML_LIBRARY=/nonexistent",
           kBaton + " server --data " + dir.path() + "/own --listen 127.0.0.1:0", &code);
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("server.key"), std::string::npos) << out;
  EXPECT_NE(out.find("chmod 600"), std::string::npos) << out;
}

}  // namespace
}  // namespace baton::testing
