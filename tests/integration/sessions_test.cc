// Interactive sessions through the real binary (issue 17): `baton run` attached (output, stdin,
// exit code, Ctrl-C), `baton run -it` on a real pseudo-terminal (util-linux's `script` gives the
// CLI one, as a user's terminal would: keys, Ctrl-C to the remote shell, the window size,
// Ctrl-P Ctrl-Q to detach), `baton sessions`, `baton attach`, and `baton forward` to a real
// HTTP server in a job. Every byte goes through the controller's relay and the job's agent.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace baton::testing {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

// A command run on a pseudo-terminal of its own (`script -qefc CMD /dev/null`), driven as a
// person at a terminal would: wait for some output, type, wait again.
class Terminal {
 public:
  Terminal(const BatonProcess& server, const std::string& command) {
    int in[2], out[2];
    // Close-on-exec, as RunCliIn's (harness.cc): no other command a test starts keeps them.
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    pid_ = fork();
    if (pid_ == 0) {
      dup2(in[0], 0);
      dup2(out[1], 1);
      dup2(out[1], 2);
      for (int fd : {in[0], in[1], out[0], out[1]}) close(fd);
      setenv("BATON_HOME", server.data_dir().c_str(), 1);
      unsetenv("BATON_SERVER");
      unsetenv("BATON_TOKEN");
      execlp("script", "script", "-qefc", command.c_str(), "/dev/null", nullptr);
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    to_ = in[1];
    from_ = out[0];
  }
  ~Terminal() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (to_ >= 0) close(to_);
    close(from_);
  }

  // Reads until `text` has appeared after what earlier Expects consumed; whether it did.
  bool Expect(const std::string& text, std::chrono::milliseconds limit = 20s) {
    auto end = std::chrono::steady_clock::now() + limit;
    for (;;) {
      if (size_t at = seen_.find(text, consumed_); at != std::string::npos) {
        consumed_ = at + text.size();
        return true;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          end - std::chrono::steady_clock::now());
      if (left.count() <= 0 || !ReadSome(left)) return false;
    }
  }
  void Type(const std::string& keys) {
    EXPECT_EQ(write(to_, keys.data(), keys.size()), static_cast<ssize_t>(keys.size()));
  }
  // Waits for the command to end (reading what it still says); its exit code.
  int Wait() {
    while (ReadSome(20s)) {
    }
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  const std::string& seen() const { return seen_; }

 private:
  bool ReadSome(std::chrono::milliseconds limit) {
    pollfd p{.fd = from_, .events = POLLIN, .revents = 0};
    if (poll(&p, 1, static_cast<int>(limit.count())) <= 0) return false;
    char buf[4096];
    ssize_t n = read(from_, buf, sizeof buf);
    if (n <= 0) return false;
    seen_.append(buf, static_cast<size_t>(n));
    return true;
  }

  pid_t pid_ = 0;
  int to_ = -1, from_ = -1;
  std::string seen_;
  size_t consumed_ = 0;
};

// `sh -c COMMAND` with the server's BATON_HOME; stdout and stderr together.
std::string Sh(const BatonProcess& b, const std::string& command) {
  std::string full = "BATON_HOME='" + b.data_dir() + "' " + command + " 2>&1";
  FILE* p = popen(full.c_str(), "r");
  if (p == nullptr) return "";
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

json::value Show(const BatonProcess& b, const std::string& id) {
  return json::parse(RunCli(b, {"show", id, "--json"}).out);
}

TEST(Sessions, RunPrintsTheOutputPassesStdinAndEndsWithTheJobsExitCode) {
  TempDir dir;
  BatonProcess baton(dir.path());
  CliResult hi = RunCli(baton, {"run", "--", "echo", "hello from the node"});
  EXPECT_EQ(hi.exit_code, 0) << hi.out;
  EXPECT_NE(hi.out.find("hello from the node"), std::string::npos) << hi.out;
  EXPECT_NE(hi.out.find("baton: job 1 submitted"), std::string::npos) << hi.out;

  CliResult code = RunCli(baton, {"run", "--", "sh", "-c", "echo failing; exit 3"});
  EXPECT_EQ(code.exit_code, 3) << code.out;
  EXPECT_NE(code.out.find("failing"), std::string::npos) << code.out;

  // stdin reaches the job's first process; its end is the job's end of input.
  std::string input;
  for (int i = 0; i < 2000; ++i) input += "line " + std::to_string(i) + "\n";
  std::ofstream(dir.path() + "/in.txt") << input;
  std::ofstream(dir.path() + "/count.sh") << "awk 'END { print NR \": \" $0 }'\n";
  Terminal piped(baton, "exec < " + dir.path() + "/in.txt " + BATON_BINARY + " run -- sh " +
                            dir.path() + "/count.sh");
  EXPECT_TRUE(piped.Expect("2000: line 1999")) << piped.seen();
  EXPECT_EQ(piped.Wait(), 0) << piped.seen();
  EXPECT_EQ(Show(baton, "3").at("interactive"), "stdin");
}

TEST(Sessions, RunWaitsSayingWhyAndCtrlCCancelsTheJob) {
  TempDir dir;
  BatonProcess baton(dir.path(), {"--gpus", "1xA100-40GB"});
  // With a time limit, so that the waiting job has an estimate, whose "in ~Nm" changes as
  // time passes: the reason is said once for each change of reason, not for each estimate.
  std::string blocker =
      FirstLine(RunCli(baton, {"submit", "-g", "1", "-t", "1h", "--", "sleep", "60"}).out);
  Terminal t(baton, std::string(BATON_BINARY) + " run -g 1 -- echo never");
  ASSERT_TRUE(t.Expect("is pending")) << t.seen();
  EXPECT_TRUE(t.Expect("resources") || t.seen().find("priority") != std::string::npos) << t.seen();
  ASSERT_TRUE(Within(10s, [&] {
    return json::serialize(Show(baton, "2")).find("expected start in ~") != std::string::npos;
  })) << json::serialize(Show(baton, "2"));
  std::this_thread::sleep_for(3s);  // a time in which it asks six times or more
  t.Expect("never seen", 100ms);    // reads what came meanwhile
  EXPECT_LE(CountOf(t.seen(), "is pending"), 2u) << t.seen();
  t.Type("\x03");  // the terminal is not raw: Ctrl-C is SIGINT to baton run
  EXPECT_TRUE(t.Expect("cancelling job 2")) << t.seen();
  EXPECT_EQ(t.Wait(), 130) << t.seen();
  EXPECT_EQ(Show(baton, "2").at("state"), "cancelled");
  RunCli(baton, {"cancel", blocker});
}

TEST(Sessions, RunItGivesARealTerminalThatDetachesAndAttachesAgain) {
  TempDir dir;
  BatonProcess baton(dir.path());
  // The CLI's terminal is 40x100: the job's is too.
  Terminal t(baton, "stty rows 40 cols 100; " + std::string(BATON_BINARY) +
                        " run -it --env 'PS1=prompt> ' -- bash --norc --noprofile -i");
  ASSERT_TRUE(t.Expect("prompt> ")) << t.seen();
  t.Type("tty; stty size; X=kept\n");
  EXPECT_TRUE(t.Expect("/dev/pts/")) << t.seen();
  EXPECT_TRUE(t.Expect("40 100")) << t.seen();
  // Ctrl-C reaches the remote shell's foreground job, not baton.
  t.Type("sleep 101\n");
  // The sleep runs (the remote shell's foreground job) before Ctrl-C is typed.
  ASSERT_TRUE(Within(std::chrono::seconds(10),
                     [] { return RunShell("pgrep -f '^sleep 101$'").exit_code == 0; }));
  t.Type("\x03");
  ASSERT_TRUE(t.Expect("prompt> ")) << t.seen();
  t.Type("echo status-$?\n");
  EXPECT_TRUE(t.Expect("status-130")) << t.seen();
  t.Type("\x10\x11");  // Ctrl-P Ctrl-Q
  EXPECT_TRUE(t.Expect("detached from job 1")) << t.seen();
  EXPECT_EQ(t.Wait(), 0) << t.seen();

  EXPECT_NE(RunCli(baton, {"show", "1"}).out.find("a terminal (`baton attach 1`)"),
            std::string::npos);
  CliResult listed = RunCli(baton, {"sessions"});
  EXPECT_NE(listed.out.find("terminal"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("running"), std::string::npos) << listed.out;

  Terminal back(baton, std::string(BATON_BINARY) + " attach 1");
  ASSERT_TRUE(back.Expect("status-130")) << back.seen();  // the screen so far, replayed
  back.Type("echo X=$X\n");
  EXPECT_TRUE(back.Expect("X=kept")) << back.seen();
  back.Type("exit 7\n");
  EXPECT_EQ(back.Wait(), 7) << back.seen();
  json::value job = Show(baton, "1");
  EXPECT_EQ(job.at("state"), "failed") << job;
  EXPECT_EQ(job.at("interactive"), "tty") << job;
  // What the terminal showed is the job's log too.
  EXPECT_NE(RunCli(baton, {"logs", "1"}).out.find("status-130"), std::string::npos);
  EXPECT_EQ(RunCli(baton, {"sessions", "--json"}).out.find("\"id\""), std::string::npos);
}

// A command that ends at once, before the client attaches to its terminal (issue 38: it lost
// its output and exited 1 in most tries): each keeps its whole output and its exit code,
// under a terminal and not, with no byte that the command did not write.
TEST(Sessions, AShortCommandKeepsItsWholeOutputAndItsExitCode) {
  TempDir dir;
  BatonProcess baton(dir.path(), {"--gpus", "2xH100-80GB"});
  for (int i = 0; i < 8; ++i) {
    const std::string word = "hi-" + std::to_string(i);
    Terminal t(baton,
               std::string(BATON_BINARY) + " run -it -- bash -c 'echo " + word + "; exit 5'");
    EXPECT_EQ(t.Wait(), 5) << t.seen();
    EXPECT_NE(t.seen().find(word + "\r"), std::string::npos) << t.seen();
    EXPECT_EQ(t.seen().find("lost job"), std::string::npos) << t.seen();
    EXPECT_EQ(t.seen().find('\0'), std::string::npos) << "a stray NUL: " << t.seen();
  }
  Terminal ls(baton, std::string(BATON_BINARY) + " run -it -- ls /");
  EXPECT_EQ(ls.Wait(), 0) << ls.seen();
  EXPECT_NE(ls.seen().find("etc"), std::string::npos) << ls.seen();
  Terminal quiet(baton, std::string(BATON_BINARY) + " run -it -- true");
  EXPECT_EQ(quiet.Wait(), 0) << quiet.seen();
  EXPECT_EQ(quiet.seen().find("lost job"), std::string::npos) << quiet.seen();
  // Without a terminal (`baton run` in a script, stdin piped): the same.
  CliResult piped = RunCli(baton, {"run", "--", "bash", "-c", "echo piped; exit 3"});
  EXPECT_EQ(piped.exit_code, 3) << piped.out;
  EXPECT_NE(piped.out.find("piped"), std::string::npos) << piped.out;
  EXPECT_EQ(piped.out.find('\0'), std::string::npos) << piped.out;
}

TEST(Sessions, ASessionOutlivesItsAgentAndControllerAndSubmitLikeMakesABatchJobOfIt) {
  TempDir dir;
  BatonProcess baton(dir.path(), {"--gpus", "2xA100-40GB"});
  // The remote shell's prompt (from its environment) says when it is there to type to.
  Terminal t(baton, std::string(BATON_BINARY) + " run -it -g 1 --env STAGE=dev --time 2h " +
                        "--env 'PS1=ready> ' -- bash --norc --noprofile -i");
  ASSERT_TRUE(t.Expect("ready> ")) << t.seen();
  t.Type("Y=still-here\n");
  ASSERT_TRUE(t.Expect("ready> ")) << t.seen();
  t.Type("\x10\x11");
  ASSERT_TRUE(t.Expect("detached from job 1")) << t.seen();
  EXPECT_EQ(t.Wait(), 0);
  // The controller and its agent die; the terminal belongs to the job's shim, which lives on.
  baton.Kill9();
  baton.Start();
  Terminal back(baton, std::string(BATON_BINARY) + " attach 1");
  ASSERT_TRUE(back.Expect("ready> ")) << back.seen();
  back.Type("echo Y=$Y STAGE=$STAGE GPUS=$CUDA_VISIBLE_DEVICES\n");
  EXPECT_TRUE(back.Expect("Y=still-here STAGE=dev GPUS=")) << back.seen();
  back.Type("\x10\x11");
  EXPECT_TRUE(back.Expect("detached")) << back.seen();
  EXPECT_EQ(back.Wait(), 0);

  // From the session to production: its resources and environment, a batch command.
  CliResult like = RunCli(baton, {"submit", "--like", "1", "--", "sh", "-c", "echo $STAGE"});
  ASSERT_EQ(like.exit_code, 0) << like.out;
  std::string id = FirstLine(like.out);
  json::value job = Show(baton, id);
  EXPECT_EQ(job.as_object().count("interactive"), 0u) << job;
  EXPECT_EQ(job.at("resources").at("gpus").to_number<double>(), 1.0) << job;
  EXPECT_EQ(job.at("time_limit_s").to_number<double>(), 7200.0) << job;
  EXPECT_EQ(job.at("name"), "sh") << job;
  EXPECT_EQ(job.at("preemptible"), true) << job;  // a batch job's default, not the session's
  EXPECT_EQ(Show(baton, "1").at("preemptible"), false);
  EXPECT_EQ(RunCli(baton, {"wait", id}).exit_code, 0);
  EXPECT_NE(RunCli(baton, {"logs", id}).out.find("dev"), std::string::npos);
  EXPECT_EQ(RunCli(baton, {"submit", "--like", "1", "-f", "x.yaml"}).exit_code, 2);
  RunCli(baton, {"cancel", "1"});
}

TEST(Sessions, AnInteractivePoolStopsSessionsLeftIdleAfterAWarning) {
  TempDir dir;
  std::string config = dir.path() + "/baton.yaml";
  std::ofstream(config) << "pools:\n  default:\n    interactive: true\n"
                        << "    session_time_limit: 1h\n    max_sessions_per_user: 3\n"
                        << "    idle_timeout: 6s\n    idle_warning: 3s\n";
  BatonProcess baton(dir.path() + "/data", {"--config", config, "--gpus", "2xA100-40GB"});
  // Attached all along: in use, however idle its GPUs.
  Terminal t(baton, std::string(BATON_BINARY) +
                        " run -it -g 1 --env 'PS1=ready> ' -- bash --norc --noprofile -i");
  ASSERT_TRUE(t.Expect("ready> ")) << t.seen();
  std::this_thread::sleep_for(9s);
  json::value job = Show(baton, "1");
  EXPECT_EQ(job.at("state"), "running") << job;
  EXPECT_EQ(job.at("time_limit_s").to_number<double>(), 3600.0) << job;
  // Detached: idle from now, warned in its terminal (and log), then stopped.
  t.Type("\x10\x11");
  ASSERT_TRUE(t.Expect("detached from job 1")) << t.seen();
  EXPECT_EQ(t.Wait(), 0);
  auto client = baton.Client();
  std::string ended = WaitForJob(*client, 1, 30000);
  EXPECT_EQ(JsonString(ended, "state"), "cancelled") << ended;
  EXPECT_NE(JsonString(ended, "reason_detail").find("cancelled: an idle session"),
            std::string::npos)
      << ended;
  std::string log = RunCli(baton, {"logs", "1"}).out;
  EXPECT_NE(log.find("this session has been idle for"), std::string::npos) << log;
  CliResult events = RunCli(baton, {"events"});
  EXPECT_NE(events.out.find("session_reclaimed"), std::string::npos) << events.out;
  EXPECT_NE(events.out.find("GPU-hours of its time limit freed"), std::string::npos) << events.out;
  auto metrics = client->Request("GET", "/metrics");
  ASSERT_TRUE(metrics.has_value());
  EXPECT_NE(metrics->body.find("baton_sessions_reclaimed_total 1"), std::string::npos);
  EXPECT_NE(metrics->body.find("baton_reclaimed_gpu_seconds_total 35"), std::string::npos)
      << metrics->body.substr(metrics->body.find("baton_reclaimed"), 120);
}

TEST(Sessions, ForwardReachesAnHttpServerInTheJob) {
  TempDir dir;
  BatonProcess baton(dir.path());
  // python3 serves the page (python3 -m http.server), as a notebook would.
  Sh(baton, std::string(BATON_SOURCE_DIR) + "/scripts/install-test-server python3");
  ASSERT_EQ(access("/usr/bin/python3", X_OK), 0) << "python3 could not be installed";
  std::string www = dir.path() + "/www";
  ASSERT_EQ(system(("mkdir -p " + www).c_str()), 0);
  std::ofstream(www + "/index.html") << "served by the job\n";
  int port = FreePort();
  std::string id =
      FirstLine(RunCli(baton, {"submit", "--workdir", www, "--", "python3", "-m", "http.server",
                               std::to_string(port), "--bind", "127.0.0.1"})
                    .out);
  auto client = baton.Client();
  ASSERT_TRUE(Within(
      20s, [&] { return JsonString(GetJob(*client, std::stoll(id)), "state") == "running"; }));
  Terminal fwd(baton, std::string(BATON_BINARY) + " forward " + id + " 0:" + std::to_string(port));
  ASSERT_TRUE(fwd.Expect("forwarding 127.0.0.1:")) << fwd.seen();
  ASSERT_TRUE(fwd.Expect(" to port")) << fwd.seen();
  std::string seen = fwd.seen();
  size_t colon = seen.find("127.0.0.1:") + 10;
  std::string local = seen.substr(colon, seen.find(' ', colon) - colon);
  // The server may take a moment to listen; each fetch is a new connection through the relay.
  std::string got;
  ASSERT_TRUE(Within(20s, [&] {
    got = Sh(baton, "curl -s http://127.0.0.1:" + local + "/index.html");
    return got.find("served by the job") != std::string::npos;
  })) << got;
  for (int i = 0; i < 5; ++i) {
    EXPECT_NE(Sh(baton, "curl -s http://127.0.0.1:" + local + "/").find("served by the job"),
              std::string::npos);
  }
  RunCli(baton, {"cancel", id});
  EXPECT_TRUE(fwd.Expect("forwarding stops")) << fwd.seen();
  EXPECT_EQ(fwd.Wait(), 0);
}

// A forward reaches only what the job's user listens on. Another user's process at the port
// (taken first: a notebook's port follows from its job id) gets none of the job's bytes and
// gives none of its own: `baton run --jupyter` finds its notebook through such a forward, so
// it can no longer print a URL, with its token, that leads to someone else's server.
TEST(Sessions, AForwardReachesOnlyWhatTheJobsUserListensOn) {
  if (geteuid() != 0) GTEST_SKIP() << "jobs run as their users only under root";
  ASSERT_GE(TestUser("btn-alice"), 0);
  ASSERT_GE(TestUser("btn-bob"), 0);
  TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0711), 0);  // the users pass through to their pages
  BatonProcess baton(dir.path() + "/server");
  Sh(baton, std::string(BATON_SOURCE_DIR) + "/scripts/install-test-server python3");
  ASSERT_EQ(access("/usr/bin/python3", X_OK), 0) << "python3 could not be installed";
  ASSERT_TRUE(WaitForNodes(*baton.Client()));
  auto token = [&](const char* user) {
    CliResult r = RunCli(baton, {"token", "create", "--user", user});
    EXPECT_EQ(r.exit_code, 0) << r.out;
    return FirstLine(r.out);
  };
  // Each user's job serves a page saying whose it is, on its own port.
  auto serve = [&](const char* user, int port) {
    std::string www = dir.path() + "/" + user;
    EXPECT_EQ(mkdir(www.c_str(), 0755), 0);
    std::ofstream(www + "/index.html") << "served for " << user << "\n";
    CliResult r = RunCliWithToken(
        baton, token(user),
        {"submit", "--workdir", "/tmp", "--", "/usr/bin/python3", "-m", "http.server",
         std::to_string(port), "--bind", "127.0.0.1", "--directory", www});
    EXPECT_EQ(r.exit_code, 0) << r.out;
    std::string id = FirstLine(r.out);
    EXPECT_TRUE(Within(20s, [&] {
      return Sh(baton, "curl -s http://127.0.0.1:" + std::to_string(port) + "/")
                 .find(std::string("served for ") + user) != std::string::npos;
    })) << RunCli(baton, {"logs", id}).out;
    return id;
  };
  const int alice_port = FreePort();
  const std::string alice = serve("btn-alice", alice_port);
  const int bob_port = FreePort();
  const std::string bob = serve("btn-bob", bob_port);
  // What a forward of `job` to `port` gives a client here.
  auto through = [&](const std::string& job, int port) {
    Terminal fwd(baton,
                 std::string(BATON_BINARY) + " forward " + job + " 0:" + std::to_string(port));
    EXPECT_TRUE(fwd.Expect(" to port")) << fwd.seen();
    std::string seen = fwd.seen();
    size_t colon = seen.find("127.0.0.1:") + 10;
    std::string local = seen.substr(colon, seen.find(' ', colon) - colon);
    return Sh(baton, "curl -s -m 10 http://127.0.0.1:" + local + "/");
  };
  EXPECT_NE(through(alice, alice_port).find("served for btn-alice"), std::string::npos);
  EXPECT_NE(through(bob, bob_port).find("served for btn-bob"), std::string::npos);
  // Alice's job forwarded to where bob listens: nothing of bob's, and the agent says why.
  EXPECT_EQ(through(alice, bob_port).find("btn-bob"), std::string::npos);
  std::string text;
  EXPECT_TRUE(Within(10s, [&] {
    std::ifstream log(baton.data_dir() + "/baton.out");
    text.assign(std::istreambuf_iterator<char>(log), std::istreambuf_iterator<char>());
    return text.find("cannot connect to port " + std::to_string(bob_port) +
                     ": what listens there is not the job's user's") != std::string::npos;
  })) << text;
  RunCli(baton, {"cancel", alice, bob});
}

// An agent that is not root runs every job as its own user, whoever submitted it: a forward
// reaches what that user listens on, and the job's user needs no account on the node.
TEST(Sessions, AForwardUnderAnAgentNotRootReachesItsJobsWhoeverSubmittedThem) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run the agent as another user";
  const int uid = TestUser("btn-alice");
  ASSERT_GE(uid, 0);
  const struct passwd* pw = getpwuid(static_cast<uid_t>(uid));
  ASSERT_NE(pw, nullptr);
  const std::string gid = std::to_string(pw->pw_gid);
  TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0711), 0);
  BatonProcess server(dir.path() + "/server", {}, "server");
  Sh(server, std::string(BATON_SOURCE_DIR) + "/scripts/install-test-server python3");
  ASSERT_EQ(access("/usr/bin/python3", X_OK), 0) << "python3 could not be installed";
  // Alice's agent: its files in a directory of hers, as a workstation user would run it.
  const std::string home = dir.path() + "/alice";
  ASSERT_EQ(mkdir(home.c_str(), 0700), 0);
  std::filesystem::copy_file(server.ca_file(), home + "/ca.crt");
  std::filesystem::copy_file(server.data_dir() + "/agent.token", home + "/agent.token");
  ASSERT_EQ(
      Sh(server, "chown -R " + std::to_string(uid) + ":" + gid + " '" + home + "' && echo ok"),
      "ok\n");
  const std::string pid =
      Sh(server, "cd / && setpriv --reuid=" + std::to_string(uid) + " --regid=" + gid +
                     " --clear-groups env HOME='" + home + "' " + BATON_BINARY +
                     " agent --name a1 --gpus 1xH100-80GB --address 127.0.0.1 --server " +
                     server.url() + " --tls-ca '" + home + "/ca.crt' --token-file '" + home +
                     "/agent.token' --data '" + home + "/agent' >> '" + home +
                     "/agent.out' 2>&1 & echo $!");
  ASSERT_GT(std::atoi(pid.c_str()), 0) << pid;
  struct StopAgent {
    int pid;
    ~StopAgent() { kill(pid, SIGTERM); }
  } stop{std::atoi(pid.c_str())};
  ASSERT_TRUE(WaitForNodes(*server.Client())) << Sh(server, "cat '" + home + "/agent.out'");
  // A user with no account anywhere here submits a job serving a page.
  CliResult made = RunCli(server, {"token", "create", "--user", "btn-no-account"});
  ASSERT_EQ(made.exit_code, 0) << made.out;
  // Its secret is the line of 64 hex digits (a warning says no such user is known here).
  std::string secret;
  std::istringstream lines(made.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.size() == 64 && line.find_first_not_of("0123456789abcdef") == std::string::npos)
      secret = line;
  }
  ASSERT_FALSE(secret.empty()) << made.out;
  const std::string www = dir.path() + "/www";
  ASSERT_EQ(mkdir(www.c_str(), 0755), 0);
  std::ofstream(www + "/index.html") << "served by the job\n";
  const int port = FreePort();
  CliResult job =
      RunCliWithToken(server, secret,
                      {"submit", "--workdir", "/tmp", "--", "/usr/bin/python3", "-m", "http.server",
                       std::to_string(port), "--bind", "127.0.0.1", "--directory", www});
  ASSERT_EQ(job.exit_code, 0) << job.out;
  const std::string id = FirstLine(job.out);
  ASSERT_TRUE(Within(20s, [&] {
    return Sh(server, "curl -s http://127.0.0.1:" + std::to_string(port) + "/")
               .find("served by the job") != std::string::npos;
  })) << RunCli(server, {"logs", id}).out;
  Terminal fwd(server, std::string(BATON_BINARY) + " forward " + id + " 0:" + std::to_string(port));
  ASSERT_TRUE(fwd.Expect(" to port")) << fwd.seen();
  std::string seen = fwd.seen();
  size_t colon = seen.find("127.0.0.1:") + 10;
  std::string local = seen.substr(colon, seen.find(' ', colon) - colon);
  EXPECT_NE(Sh(server, "curl -s -m 10 http://127.0.0.1:" + local + "/").find("served by the job"),
            std::string::npos)
      << Sh(server, "cat '" + home + "/agent.out'");
  RunCli(server, {"cancel", id});
  // Gone before its agent stops (a stopped agent leaves its jobs running).
  EXPECT_TRUE(Within(20s, [&] {
    return Sh(server, "curl -s http://127.0.0.1:" + std::to_string(port) + "/").empty();
  }));
}

TEST(Sessions, RunJupyterPrintsAUrlHereThatReachesItAndCtrlCEndsIt) {
  TempDir dir;
  BatonProcess baton(dir.path() + "/data");
  Sh(baton, std::string(BATON_SOURCE_DIR) + "/scripts/install-test-server python3");
  // A stand-in for Jupyter (no PyPI here): `jupyter lab --version`, and `jupyter lab ...
  // --port=N` serving a page that shows the token it was given.
  std::string bin = dir.path() + "/bin";
  ASSERT_EQ(system(("mkdir -p " + bin).c_str()), 0);
  std::ofstream(bin + "/jupyter")
      << "#!/bin/sh\n"
      << "if [ \"$2\" = --version ]; then echo 4.0.0; exit 0; fi\n"
      << "for a in \"$@\"; do case $a in --port=*) port=${a#--port=};; esac; done\n"
      << "mkdir -p \"$BATON_CHECKPOINT_DIR/www\" && cd \"$BATON_CHECKPOINT_DIR/www\" && "
      << "echo \"jupyter $1, token $JUPYTER_TOKEN\" > index.html\n"
      << "exec /usr/bin/python3 -m http.server \"$port\" --bind 127.0.0.1\n";
  ASSERT_EQ(chmod((bin + "/jupyter").c_str(), 0755), 0);
  Terminal t(baton,
             std::string(BATON_BINARY) + " run --jupyter --env PATH=" + bin + ":/usr/bin:/bin");
  ASSERT_TRUE(t.Expect("?token=", 60s)) << t.seen();
  std::string seen = t.seen();
  size_t at = seen.find("http://127.0.0.1:");
  std::string url = seen.substr(at, seen.find_first_of("\r\n", at) - at);
  std::string token = url.substr(url.find("?token=") + 7);
  EXPECT_EQ(token.size(), 32u) << url;
  EXPECT_NE(Sh(baton, "curl -s '" + url + "'").find("jupyter lab, token " + token),
            std::string::npos)
      << url;
  CliResult sessions = RunCli(baton, {"sessions"});
  EXPECT_NE(sessions.out.find("jupyter"), std::string::npos) << sessions.out;
  t.Type("\x03");
  EXPECT_TRUE(t.Expect("cancelling job 1")) << t.seen();
  EXPECT_EQ(t.Wait(), 130) << t.seen();
  EXPECT_EQ(Show(baton, "1").at("state"), "cancelled");

  // A node without Jupyter: the job fails, saying so.
  Terminal none(baton, std::string(BATON_BINARY) + " run --jupyter --env PATH=/nonexistent");
  EXPECT_TRUE(none.Expect("jupyter is not installed on node")) << none.seen();
  EXPECT_EQ(none.Wait(), 127) << none.seen();
}

TEST(Sessions, RunJupyterServesDebiansNotebook) {
  int rc = system((std::string(BATON_SOURCE_DIR) +
                   "/scripts/install-test-server jupyter-notebook >/dev/null 2>&1")
                      .c_str());
  if (rc != 0 || access("/usr/bin/jupyter", X_OK) != 0)
    GTEST_SKIP() << "Debian's jupyter-notebook could not be installed";
  TempDir dir;
  BatonProcess baton(dir.path() + "/data");
  // A session's port on its node is its job id's (20000 + id): the test above, which ctest
  // may run beside this one, has its own controller, whose jobs 1 and 2 are Jupyter sessions
  // on this host too. Three held jobs first make this one job 4.
  for (const char* id : {"1", "2", "3"})
    ASSERT_EQ(FirstLine(RunCli(baton, {"submit", "--hold", "--", "true"}).out), id);
  Terminal t(baton, std::string(BATON_BINARY) + " run --jupyter --env PATH=/usr/bin:/bin");
  ASSERT_TRUE(t.Expect("?token=", 120s)) << t.seen();
  std::string seen = t.seen();
  size_t at = seen.find("http://127.0.0.1:");
  std::string url = seen.substr(at, seen.find_first_of("\r\n", at) - at);
  std::string base = url.substr(0, url.find("/?token="));
  std::string token = url.substr(url.find("?token=") + 7);
  // The notebook server's own API, with the token the URL carries. The URL is printed once
  // the job runs; the server may still be starting: asked until it answers.
  std::string status;
  EXPECT_TRUE(Within(std::chrono::seconds(60), [&] {
    status = Sh(baton, "curl -s '" + base + "/api/status?token=" + token + "'");
    return status.find("\"started\"") != std::string::npos;
  })) << status;
  std::string refused =
      Sh(baton, "curl -s -o /dev/null -w '%{http_code}' '" + base + "/api/contents'");
  EXPECT_EQ(refused, "403") << refused;  // no token, no notebook
  t.Type("\x03");
  EXPECT_EQ(t.Wait(), 130) << t.seen();
}

TEST(Sessions, AttachAndForwardSayWhatIsWrong) {
  TempDir dir;
  BatonProcess baton(dir.path());
  std::string batch = FirstLine(RunCli(baton, {"submit", "--", "sleep", "30"}).out);
  auto client = baton.Client();
  ASSERT_TRUE(Within(
      20s, [&] { return JsonString(GetJob(*client, std::stoll(batch)), "state") == "running"; }));
  CliResult attach = RunCli(baton, {"attach", batch});
  EXPECT_EQ(attach.exit_code, 1);
  EXPECT_NE(attach.out.find("is not a session"), std::string::npos) << attach.out;
  CliResult bad = RunCli(baton, {"forward", batch, "99999"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.out.find("[LOCAL:]REMOTE"), std::string::npos) << bad.out;
  CliResult missing = RunCli(baton, {"attach", "999"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.out.find("does not exist"), std::string::npos) << missing.out;
  CliResult bare = RunCli(baton, {"run"});
  EXPECT_EQ(bare.exit_code, 2);
  EXPECT_NE(bare.out.find("baton run [OPTIONS] -- COMMAND"), std::string::npos) << bare.out;
  // A terminal needs one here.
  CliResult nodes = RunCli(baton, {"run", "-t", "--", "bash"});
  EXPECT_EQ(nodes.exit_code, 2);
  EXPECT_NE(nodes.out.find("stdin is not a terminal"), std::string::npos) << nodes.out;
  // The tunnel routes need an upgraded connection.
  auto raw = client->Request("GET", "/v1/jobs/" + batch + "/attach");
  ASSERT_TRUE(raw.has_value());
  EXPECT_EQ(raw->status, 400) << raw->body;
  EXPECT_NE(raw->body.find("Upgrade: baton-tunnel"), std::string::npos) << raw->body;
  RunCli(baton, {"cancel", batch});
}

}  // namespace
}  // namespace baton::testing
