// `baton top` in a real terminal: tmux runs it, capture-pane reads the screen, and a q ends it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "harness.h"

namespace baton::testing {
namespace {

std::string Shell(const std::string& cmd, int* rc = nullptr) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return "";
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  int status = pclose(p);
  if (rc != nullptr) *rc = WEXITSTATUS(status);
  return out;
}

class Tmux {
 public:
  explicit Tmux(const std::string& command)
      : socket_("baton-top-test-" + std::to_string(getpid())) {
    Shell("command -v tmux >/dev/null || " + std::string(BATON_SOURCE_DIR) +
          "/scripts/install-test-server tmux");
    int rc = 0;
    std::string out = Shell(tmux() + " new-session -d -s top -x 150 -y 45 '" + command + "'", &rc);
    EXPECT_EQ(rc, 0) << out;
  }
  ~Tmux() { Shell(tmux() + " kill-server"); }
  std::string Screen() { return Shell(tmux() + " capture-pane -p -t top"); }
  void Keys(const std::string& keys) { Shell(tmux() + " send-keys -t top " + keys); }
  bool Running() {
    int rc = 0;
    Shell(tmux() + " has-session -t top", &rc);
    return rc == 0;
  }

 private:
  std::string tmux() const { return "tmux -L " + socket_; }
  std::string socket_;
};

TEST(Top, ShowsTheGpuGridTheQueueWithReasonsAndRunningJobsAndQuitsOnQ) {
  TempDir dir;
  BatonProcess baton(dir.path() + "/data", {"--gpus", "4xA100-80GB"});
  auto c = baton.Client();
  ASSERT_GT(
      Submit(*c, R"({"name": "trainer", "command": ["sleep", "60"], "resources": {"gpus": 2}})"),
      0);
  ASSERT_GT(Submit(*c, R"({"name": "big", "command": ["true"], "resources": {"gpus": 4}})"), 0);
  // tmux gives the command a terminal; the environment names the server.
  Tmux tmux("env BATON_HOME=" + baton.data_dir() + " " + BATON_BINARY + " top -d 0.3; sleep 30");
  std::string screen;
  bool shown = Within(std::chrono::seconds(15), [&] {
    screen = tmux.Screen();
    return screen.find("trainer") != std::string::npos && screen.find("%") != std::string::npos &&
           screen.find("1(root)") != std::string::npos;
  });
  ASSERT_TRUE(shown) << screen;
  EXPECT_NE(screen.find("GPUs 4: 2 busy, 2 idle, 0 failed, 0 drained"), std::string::npos)
      << screen;
  EXPECT_NE(screen.find("A100-80GB"), std::string::npos) << screen;
  EXPECT_NE(screen.find("QUEUE"), std::string::npos) << screen;
  EXPECT_NE(screen.find("resources: waiting for 4 GPUs"), std::string::npos) << screen;
  EXPECT_NE(screen.find("RUNNING"), std::string::npos) << screen;
  EXPECT_NE(screen.find("vm:0,1"), std::string::npos) << screen;
  // It redraws: a job submitted now appears without a key press. Whether it runs on an idle
  // GPU or waits behind the hold a full pass makes for "big" depends on which pass sees it
  // first; its project shows in the running list and in the queue alike.
  ASSERT_GT(Submit(*c, R"({"name": "late", "project": "latecomers", "command": ["sleep", "60"],
                          "resources": {"gpus": 1}})"),
            0);
  EXPECT_TRUE(Within(std::chrono::seconds(10), [&] {
    screen = tmux.Screen();
    return screen.find("latecomers") != std::string::npos;
  })) << screen;
  // q leaves top (the alternate screen is left; the shell's `sleep 30` keeps the pane).
  tmux.Keys("q");
  EXPECT_TRUE(Within(std::chrono::seconds(5), [&] {
    screen = tmux.Screen();
    return screen.find("QUEUE") == std::string::npos;
  })) << screen;
  EXPECT_TRUE(tmux.Running());
}

TEST(Top, OnceWithoutATerminalPrintsOneFrame) {
  TempDir dir;
  BatonProcess baton(dir.path() + "/data", {"--gpus", "2xH100-80GB"});
  CliResult r = RunCli(baton, {"top", "--once"});
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("GPUs 2: 0 busy, 2 idle"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(empty)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(none)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\x1b["), std::string::npos) << "no terminal codes when not on a terminal";
}

}  // namespace
}  // namespace baton::testing
