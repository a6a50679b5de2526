// Code snapshots through the real binary (issue 17): `baton submit --code DIR` packs what git
// shows in DIR (or every file outside a git work tree), uploads it, and the job runs in its own
// copy: an edit after submit does not reach a queued job, ignored files stay out, and a
// snapshot over the default 1 MiB body limit is taken.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "harness.h"

namespace baton::testing {
namespace {

using namespace std::chrono_literals;

int Sh(const std::string& command) { return system(command.c_str()); }

TEST(Code, AQueuedJobRunsTheSnapshotNotTheEditsAfterIt) {
  TempDir dir;
  BatonProcess baton(dir.path() + "/data", {"--gpus", "1xA100-40GB"});
  std::string proj = dir.path() + "/proj";
  ASSERT_EQ(
      Sh("mkdir -p " + proj + "/data && cd " + proj + " && git init -q && " +
         "echo 'echo version one' > run.sh && echo 'data/' > .gitignore && " +
         "echo scratch > data/ignored.bin && echo untracked > notes.txt && " +
         "git add run.sh .gitignore && " + "git -c user.email=t@t -c user.name=t commit -qm init"),
      0);
  // The one GPU is busy: the job waits while its code is edited.
  std::string blocker = FirstLine(RunCli(baton, {"submit", "-g", "1", "--", "sleep", "3"}).out);
  CliResult r = RunCli(baton, {"submit", "-g", "1", "--code", proj, "--", "sh", "-c",
                               "pwd; ls -A; sh run.sh; echo edited-by-job >> run.sh"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("code snapshot of " + proj + ": 3 files"), std::string::npos) << r.out;
  std::string id = FirstLine(r.out.substr(r.out.find('\n') + 1));
  if (id.find_first_not_of("0123456789") != std::string::npos) id = FirstLine(r.out);
  std::ofstream(proj + "/run.sh") << "echo version two\n";
  EXPECT_EQ(RunCli(baton, {"wait", id}).exit_code, 0);
  std::string log = RunCli(baton, {"logs", id}).out;
  EXPECT_NE(log.find("version one"), std::string::npos) << log;
  EXPECT_EQ(log.find("version two"), std::string::npos) << log;
  EXPECT_NE(log.find("/jobs/" + id + "/code"), std::string::npos) << log;
  EXPECT_NE(log.find("notes.txt"), std::string::npos) << log;    // untracked, not ignored
  EXPECT_EQ(log.find("ignored.bin"), std::string::npos) << log;  // in .gitignore
  EXPECT_EQ(ReadFile(proj + "/run.sh"), "echo version two\n");   // the job wrote in its copy
  EXPECT_NE(RunCli(baton, {"show", id}).out.find("its own copy of code snapshot"),
            std::string::npos);
  RunCli(baton, {"cancel", blocker});
}

TEST(Code, ALargeSnapshotOutsideGitIsTakenAndBadOnesAreRefused) {
  TempDir dir;
  BatonProcess baton(dir.path() + "/data");
  std::string proj = dir.path() + "/plain";
  // 3 MiB that do not compress: over the 1 MiB limit of other bodies.
  ASSERT_EQ(Sh("mkdir -p " + proj + "/sub && head -c 3145728 /dev/urandom > " + proj +
               "/weights.bin && echo hi > " + proj + "/sub/x.txt"),
            0);
  CliResult r = RunCli(
      baton, {"submit", "--code", proj, "--", "sh", "-c", "wc -c < weights.bin; cat sub/x.txt"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::string id = r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1);
  id = FirstLine(id);
  EXPECT_EQ(RunCli(baton, {"wait", id}).exit_code, 0);
  std::string log = RunCli(baton, {"logs", id}).out;
  EXPECT_NE(log.find("3145728"), std::string::npos) << log;
  EXPECT_NE(log.find("hi"), std::string::npos) << log;

  CliResult missing = RunCli(baton, {"submit", "--code", dir.path() + "/nowhere", "--", "true"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.out.find("is not a directory"), std::string::npos) << missing.out;
  CliResult both = RunCli(baton, {"submit", "--code", proj, "--workdir", "/tmp", "--", "true"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.out.find("not with workdir"), std::string::npos) << both.out;
  auto client = baton.Client();
  auto unknown = client->Request(
      "POST", "/v1/jobs", R"({"command": ["true"], "code": ")" + std::string(64, 'a') + "\"}");
  ASSERT_TRUE(unknown.has_value());
  EXPECT_EQ(unknown->status, 400) << unknown->body;
  EXPECT_NE(unknown->body.find("no snapshot aaaaaaaaaaaa here"), std::string::npos)
      << unknown->body;
  auto not_gzip = client->Request("POST", "/v1/code", "plain text");
  ASSERT_TRUE(not_gzip.has_value());
  EXPECT_EQ(not_gzip->status, 400) << not_gzip->body;
  EXPECT_NE(not_gzip->body.find("not a gzip archive"), std::string::npos) << not_gzip->body;

  // A gzip cut short (a client cut off mid-upload) or damaged is refused at once, not when
  // every node fails to unpack it (issue 37).
  ASSERT_EQ(Sh("head -c 200000 /dev/urandom | gzip > " + dir.path() + "/whole.gz"), 0);
  std::string whole = ReadFile(dir.path() + "/whole.gz");
  ASSERT_GT(whole.size(), 200000u);
  auto cut = client->Request("POST", "/v1/code", whole.substr(0, whole.size() - 5000));
  ASSERT_TRUE(cut.has_value());
  EXPECT_EQ(cut->status, 400) << cut->body;
  EXPECT_NE(cut->body.find("the gzip archive is truncated"), std::string::npos) << cut->body;
  std::string damaged = whole;
  for (size_t i = 100; i < 200; ++i) damaged[i] = static_cast<char>(damaged[i] ^ 0x5a);
  auto bad = client->Request("POST", "/v1/code", damaged);
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->status, 400) << bad->body;
  EXPECT_NE(bad->body.find("not a valid gzip archive"), std::string::npos) << bad->body;
  auto kept = client->Request("POST", "/v1/code", whole);
  ASSERT_TRUE(kept.has_value());
  EXPECT_EQ(kept->status, 201) << kept->body;
  // Over the upload's limit: the answer names that limit (64 MiB), not other bodies' 1 MiB.
  std::string big =
      RawExchange(baton.url(), "POST /v1/code HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                                   baton.token() + "\r\nContent-Length: 70000000\r\n\r\n");
  EXPECT_EQ(RawStatus(big), 413) << big;
  EXPECT_NE(big.find("body: larger than 64 MiB"), std::string::npos) << big;
}

}  // namespace
}  // namespace baton::testing
