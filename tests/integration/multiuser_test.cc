// Two Unix users on one node (issue 37): a `baton up` run by root, as an operator sets up a
// shared machine, runs alice's and bob's jobs as their own users. Bob's job tries every path
// the documentation names for alice's job (its run file with the whole environment, its
// directory, output, metrics, checkpoints and code on the node; the controller's copy of its
// output; the store and the tokens) and reads nothing, while alice's own jobs, `--code` among
// them, reach all of theirs.
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "harness.h"

namespace baton::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const char kAlice[] = "btn-alice";
const char kBob[] = "btn-bob";
const char kCarol[] = "btn-carol";
const char kVision[] = "btn-vision";  // alice's and bob's group, not carol's

struct Stat {
  mode_t mode = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  bool exists = false;
};

Stat StatOf(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return {};
  return {.mode = st.st_mode & 07777, .uid = st.st_uid, .gid = st.st_gid, .exists = true};
}

std::string Octal(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", mode);
  return text;
}

// A shell loop that tries each path (lists a directory, reads a file, to its own output) and
// says READ or DENIED for each, then DONE.
std::string TryEach(const std::vector<std::string>& paths) {
  std::string list;
  for (const std::string& p : paths) list += " '" + p + "'";
  return "for p in" + list +
         "; do if ls -d \"$p/\" >/dev/null 2>&1; then ls \"$p\" && echo \"READ $p\" || echo "
         "\"DENIED $p\"; elif cat \"$p\" 2>/dev/null; then echo \"READ $p\"; else echo \"DENIED "
         "$p\"; fi; done; echo DONE";
}

class MultiUser : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "jobs run as their users only under root";
    alice_uid_ = TestUser(kAlice);
    bob_uid_ = TestUser(kBob);
    ASSERT_GE(alice_uid_, 0) << "cannot make the test user " << kAlice;
    ASSERT_GE(bob_uid_, 0) << "cannot make the test user " << kBob;
  }
  int alice_uid_ = -1;
  int bob_uid_ = -1;
};

TEST_F(MultiUser, OneUsersJobReadsNothingOfAnothersOnTheirNode) {
  TempDir dir;
  // As an operator's /var/lib/baton: others may pass through to the data directory.
  ASSERT_EQ(chmod(dir.path().c_str(), 0711), 0);
  const std::string data = dir.path() + "/server";
  const std::string agent = data + "/agent";
  const std::string ckpt_root = dir.path() + "/ckpt";
  std::ofstream(dir.path() + "/baton.yaml") << "checkpoint_root: " << ckpt_root << "\n";
  BatonProcess baton(data, {"--gpus", "3xH100-80GB", "--config", dir.path() + "/baton.yaml"});
  auto admin = baton.Client();
  auto token = [&](const char* user) {
    CliResult r = RunCli(baton, {"token", "create", "--user", user});
    EXPECT_EQ(r.exit_code, 0) << r.out;
    return r.out.substr(0, r.out.find('\n'));
  };
  const std::string alice = token(kAlice), bob = token(kBob);

  // Alice's job: a secret in its environment, output, a metrics line and checkpoints, in the
  // job's own directory and the shared root, which it must be able to reach as alice.
  CliResult r = RunCliWithToken(
      baton, alice,
      {"submit", "-g", "1", "--workdir", "/tmp", "--env", "API_KEY=alice-env-s3cr3t", "--",
       "echo alice-output-s3cr3t; echo '{\"loss\": 1, \"note\": \"alice-metric-s3cr3t\"}' >> "
       "$BATON_METRICS_FILE; echo alice-ckpt-s3cr3t > $BATON_CHECKPOINT_DIR/c; d=$(dirname "
       "$BATON_METRICS_FILE); echo local > $d/checkpoints/c && cat $BATON_CHECKPOINT_DIR/c "
       "$d/checkpoints/c && echo own-files-ok; sleep 300"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string id = FirstLine(r.out);
  // And a --code job, whose snapshot is unpacked for alice and runs as her in its copy.
  const std::string code = dir.path() + "/code";
  fs::create_directories(code);
  std::ofstream(code + "/train.sh") << "echo alice-code-s3cr3t\n";
  r = RunCliWithToken(baton, alice,
                      {"submit", "-g", "1", "--code", code, "--",
                       "sh train.sh && id -un && echo x > $BATON_METRICS_FILE && sleep 300"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  // The snapshot's line first, the job's id last.
  const std::string code_id = FirstLine(r.out.substr(r.out.rfind('\n', r.out.size() - 2) + 1));

  auto c = baton.Client();
  ASSERT_NE(LogsUntil(*c, std::stoll(id), "own-files-ok").find("own-files-ok"), std::string::npos)
      << RunCli(baton, {"logs", id}).out;
  std::string code_log = LogsUntil(*c, std::stoll(code_id), std::string(kAlice) + "\n");
  ASSERT_NE(code_log.find(std::string("alice-code-s3cr3t\n") + kAlice + "\n"), std::string::npos)
      << code_log << RunCli(baton, {"show", code_id}).out;
  const std::string node(
      boost::json::parse(GetJob(*c, std::stoll(id))).at("allocation").at(0).at("node").as_string());
  ASSERT_FALSE(node.empty()) << GetJob(*c, std::stoll(id));

  // And a batch script's output file (sbatch's -o), written where the job runs, as alice.
  const std::string out_name = "baton-test-alice-" + std::to_string(getpid()) + "-%j.out";
  r = RunCliWithToken(
      baton, alice,
      {"submit", "--workdir", "/tmp", "-o", out_name, "--wrap", "echo alice-batch-s3cr3t"});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string batch_id = FirstLine(r.out);
  EXPECT_EQ(JsonString(WaitForJob(*c, std::stoll(batch_id)), "state"), "succeeded")
      << RunCli(baton, {"logs", batch_id}).out;
  std::string out_file = "/tmp/" + out_name;
  out_file.replace(out_file.find("%j"), 2, batch_id);

  const std::string run = agent + "/run/" + id + ".0.run";
  const std::string jobdir = agent + "/jobs/" + id;
  const std::string ckpt = ckpt_root + "/" + kAlice + "/" + id;
  ASSERT_TRUE(Within(10s, [&] {
    return StatOf(data + "/logs/" + id + "/" + node + ".metrics.jsonl").exists &&
           StatOf(run + ".pid").exists;
  }));
  pid_t pid = 0;
  std::ifstream(run + ".pid") >> pid;
  ASSERT_GT(pid, 0);
  const std::vector<std::string> paths = {
      out_file,
      run,
      run + ".pid",
      agent + "/run",
      agent + "/jobs",
      agent + "/code-cache",
      agent + "/credential",
      jobdir,
      jobdir + "/output.log",
      jobdir + "/metrics.jsonl",
      jobdir + "/checkpoints",
      jobdir + "/checkpoints/c",
      agent + "/jobs/" + code_id + "/code",
      agent + "/jobs/" + code_id + "/code/train.sh",
      agent + "/jobs/" + code_id + "/metrics.jsonl",
      ckpt,
      ckpt + "/c",
      ckpt_root + "/" + kAlice,
      data + "/logs",
      data + "/logs/" + id,
      data + "/logs/" + id + "/" + node + ".log",
      data + "/logs/" + id + "/" + node + ".metrics.jsonl",
      data + "/code-snapshots",
      data + "/baton.db",
      data + "/baton.db-wal",
      data + "/admin.token",
      data + "/agent.token",
      data + "/tls/ca.key",
      data + "/tls/server.key",
      "/proc/" + std::to_string(pid) + "/environ",
  };
  for (const std::string& p : paths) ASSERT_TRUE(StatOf(p).exists) << p << " should exist";

  // Bob's job on the same node tries each of them.
  // (A workdir the users may enter: `baton submit` would give the test's own, which a fresh
  // clone under a 0700 temporary directory keeps out of their reach.)
  r = RunCliWithToken(
      baton, bob,
      {"submit", "-g", "1", "--workdir", "/tmp", "--name", "snoop", "--", TryEach(paths)});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string snoop = FirstLine(r.out);
  std::string job = WaitForJob(*c, std::stoll(snoop));
  EXPECT_EQ(JsonString(job, "user"), kBob) << job;
  std::string log = LogsUntil(*c, std::stoll(snoop), "DONE");
  ASSERT_NE(log.find("DONE"), std::string::npos) << log;
  for (const std::string& p : paths) {
    EXPECT_NE(log.find("DENIED " + p + "\n"), std::string::npos) << p << "\n" << log;
    EXPECT_EQ(log.find("READ " + p + "\n"), std::string::npos) << p << "\n" << log;
  }
  EXPECT_EQ(log.find("s3cr3t"), std::string::npos) << log;

  // The modes that say so, and who owns what.
  EXPECT_EQ(Octal(StatOf(data).mode), "0711");
  EXPECT_EQ(Octal(StatOf(agent).mode), "0711");
  EXPECT_EQ(Octal(StatOf(agent + "/jobs").mode), "0711");
  EXPECT_EQ(Octal(StatOf(agent + "/run").mode), "0700");
  EXPECT_EQ(Octal(StatOf(run).mode), "0600");
  EXPECT_EQ(Octal(StatOf(run + ".pid").mode), "0600");
  EXPECT_EQ(Octal(StatOf(jobdir).mode), "0700");
  EXPECT_EQ(StatOf(jobdir).uid, static_cast<uid_t>(alice_uid_));
  EXPECT_EQ(Octal(StatOf(jobdir + "/output.log").mode), "0600");
  EXPECT_EQ(StatOf(jobdir + "/output.log").uid, static_cast<uid_t>(alice_uid_));
  EXPECT_EQ(Octal(StatOf(ckpt_root + "/" + kAlice).mode), "0700");
  EXPECT_EQ(StatOf(ckpt).uid, static_cast<uid_t>(alice_uid_));
  EXPECT_EQ(Octal(StatOf(data + "/logs").mode), "0700");
  EXPECT_EQ(Octal(StatOf(data + "/logs/" + id + "/" + node + ".log").mode), "0600");
  EXPECT_EQ(Octal(StatOf(out_file).mode), "0600");
  EXPECT_EQ(StatOf(out_file).uid, static_cast<uid_t>(alice_uid_));
  EXPECT_EQ(ReadFile(out_file), "alice-batch-s3cr3t\n");
  fs::remove(out_file);
}

// A project that shares its checkpoints with its Unix group (`checkpoint_group`): alice's job
// in it saves a checkpoint; bob, in the group, reads it and cannot change it; carol, not in
// the group, reads nothing of it, and her own job in the project still reaches its own.
TEST_F(MultiUser, AProjectsGroupReadsItsCheckpointsAndNoOneElse) {
  ASSERT_GE(TestUser(kCarol), 0) << "cannot make the test user " << kCarol;
  CliResult grouped = RunShell(std::string("PATH=\"$PATH:/usr/sbin:/sbin\"; groupadd -f ") +
                               kVision + " && usermod -aG " + kVision + " " + kAlice +
                               " && usermod -aG " + kVision + " " + kBob);
  ASSERT_EQ(grouped.exit_code, 0) << grouped.out;
  const struct group* vision = getgrnam(kVision);
  ASSERT_NE(vision, nullptr);
  const gid_t vision_gid = vision->gr_gid;

  TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0711), 0);
  const std::string ckpt_root = dir.path() + "/ckpt";
  std::ofstream(dir.path() + "/baton.yaml")
      << "checkpoint_root: " << ckpt_root << "\nprojects:\n  vision: {checkpoint_group: " << kVision
      << "}\n";
  BatonProcess baton(dir.path() + "/server",
                     {"--gpus", "1xH100-80GB", "--config", dir.path() + "/baton.yaml"});
  auto c = baton.Client();
  auto token = [&](const char* user) {
    CliResult r = RunCli(baton, {"token", "create", "--user", user});
    EXPECT_EQ(r.exit_code, 0) << r.out;
    return r.out.substr(0, r.out.find('\n'));
  };
  // Runs `command` as the token's user in /tmp and returns its log once it has ended.
  auto run = [&](const std::string& user_token, std::vector<std::string> flags,
                 const std::string& command) {
    std::vector<std::string> args = {"submit", "--workdir", "/tmp"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", command + "; echo END"});
    CliResult r = RunCliWithToken(baton, user_token, args);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    int64_t id = std::stoll(FirstLine(r.out));
    std::string job = WaitForJob(*c, id);
    return std::make_pair(id, LogsUntil(*c, id, "END") + JsonString(job, "state"));
  };

  auto [saved, log] = run(token(kAlice), {"--project", "vision"},
                          "echo alice-weights > $BATON_CHECKPOINT_DIR/model.pt && echo "
                          "\"dir=$BATON_CHECKPOINT_DIR\"");
  const std::string project_dir = ckpt_root + "/project:vision";
  const std::string job_dir = project_dir + "/" + std::to_string(saved);
  ASSERT_NE(log.find("dir=" + job_dir + "\n"), std::string::npos) << log;
  ASSERT_NE(log.find("succeeded"), std::string::npos) << log;
  EXPECT_EQ(Octal(StatOf(project_dir).mode), "0751");
  EXPECT_EQ(StatOf(project_dir).uid, 0u);
  EXPECT_EQ(StatOf(project_dir).gid, vision_gid);
  EXPECT_EQ(Octal(StatOf(job_dir).mode), "2750");
  EXPECT_EQ(StatOf(job_dir).uid, static_cast<uid_t>(alice_uid_));
  EXPECT_EQ(StatOf(job_dir).gid, vision_gid);
  EXPECT_EQ(StatOf(job_dir + "/model.pt").gid, vision_gid) << "the setgid bit gives it the group";

  // Bob, in the group: reads it, lists the project's jobs, changes nothing.
  std::tie(std::ignore, log) =
      run(token(kBob), {},
          "cat " + job_dir + "/model.pt; ls " + project_dir + "; (echo x > " + job_dir +
              "/bob.pt) 2>/dev/null && echo WROTE || echo NOT-WRITTEN; rm -f " + job_dir +
              "/model.pt 2>/dev/null; test -e " + job_dir + "/model.pt && echo STILL-THERE");
  EXPECT_NE(log.find("alice-weights\n"), std::string::npos) << log;
  EXPECT_NE(log.find(std::to_string(saved) + "\n"), std::string::npos) << log;
  EXPECT_NE(log.find("NOT-WRITTEN"), std::string::npos) << log;
  EXPECT_NE(log.find("STILL-THERE"), std::string::npos) << log;

  // Carol, not in it: nothing of alice's; her own job in the project reaches its own.
  const std::string carol = token(kCarol);
  std::tie(std::ignore, log) =
      run(carol, {}, TryEach({project_dir, job_dir, job_dir + "/model.pt"}));
  for (const std::string& p : {project_dir, job_dir, job_dir + "/model.pt"})
    EXPECT_NE(log.find("DENIED " + p + "\n"), std::string::npos) << p << "\n" << log;
  EXPECT_EQ(log.find("alice-weights"), std::string::npos) << log;
  std::tie(std::ignore, log) = run(carol, {"--project", "vision"},
                                   "echo mine > $BATON_CHECKPOINT_DIR/c && cat "
                                   "$BATON_CHECKPOINT_DIR/c && echo carol-own-ok");
  EXPECT_NE(log.find("carol-own-ok"), std::string::npos) << log;

  // In a project without a checkpoint_group, the same user's checkpoints are theirs alone
  // (ROOT/USER/ID).
  std::tie(saved, log) = run(token(kAlice), {}, "echo \"dir=$BATON_CHECKPOINT_DIR\"");
  EXPECT_NE(log.find("dir=" + ckpt_root + "/" + kAlice + "/" + std::to_string(saved) + "\n"),
            std::string::npos)
      << log;
}

TEST_F(MultiUser, AJobWhoseDirectoryItsUserCannotReachFailsSayingWhy) {
  TempDir dir;  // 0700, as root's home is: alice cannot pass through it
  BatonProcess baton(dir.path() + "/server", {"--gpus", "1xH100-80GB"});
  CliResult made = RunCli(baton, {"token", "create", "--user", kAlice});
  ASSERT_EQ(made.exit_code, 0) << made.out;
  auto alice = baton.Client(made.out.substr(0, made.out.find('\n')));
  const std::string why = "cannot reach its job directory: " + dir.path() + " is mode 0700";
  // Its own directory would be its working directory: it cannot start, and says why.
  int64_t id = Submit(*alice, R"({"command": ["true"]})");
  std::string job = WaitForJob(*alice, id);
  EXPECT_EQ(JsonString(job, "state"), "failed") << job;
  EXPECT_NE(job.find(why), std::string::npos) << job;
  // Working elsewhere, it runs, and its log says what is out of its reach.
  id = Submit(*alice, R"({"command": "echo ran", "workdir": "/tmp"})");
  job = WaitForJob(*alice, id);
  EXPECT_EQ(JsonString(job, "state"), "succeeded") << job;
  std::string log = LogsUntil(*alice, id, "ran");
  EXPECT_NE(log.find("baton: warning: node "), std::string::npos) << log;
  EXPECT_NE(log.find(why), std::string::npos) << log;
}

}  // namespace
}  // namespace baton::testing
