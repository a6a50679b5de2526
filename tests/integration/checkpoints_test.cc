// A shared checkpoint root (issue 17): with `checkpoint_root:` configured, BATON_CHECKPOINT_DIR
// is ROOT/USER/JOB_ID on every node and attempt, so a job whose node is lost resumes on another
// node from the checkpoint it wrote on the first.
#include <gtest/gtest.h>
#include <signal.h>

#include <boost/json.hpp>
#include <fstream>
#include <string>
#include <thread>

#include "harness.h"

namespace baton::testing {
namespace {

namespace json = boost::json;

TEST(Checkpoints, AJobLostWithItsNodeResumesElsewhereFromTheSharedRoot) {
  TempDir dir;
  std::string root = dir.path() + "/shared-ckpt";
  std::string config = dir.path() + "/baton.yaml";
  std::ofstream(config) << "checkpoint_root: " << root << "/\n";
  BatonProcess server(dir.path() + "/server", {"--config", config, "--node-timeout", "5s"},
                      "server");
  AgentProcess n1(server, "n1", dir.path() + "/n1", "1xH100-80GB");
  AgentProcess n2(server, "n2", dir.path() + "/n2", "1xH100-80GB");
  auto c = server.Client();
  ASSERT_TRUE(NodesReady(*c, 2));

  // The first attempt saves "step 40" and runs on; an attempt that finds it resumes and ends.
  std::string script =
      "f=$BATON_CHECKPOINT_DIR/step; if [ -e $f ]; then echo \"resumed at $(cat $f) on "
      "$BATON_NODE_NAME from $BATON_CHECKPOINT_DIR\"; exit 0; fi; echo 40 > $f; echo \"saved on "
      "$BATON_NODE_NAME\"; sleep 300";
  CliResult r = RunCli(server, {"submit", "-g", "1", "--", script});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::string id = FirstLine(r.out);
  // ROOT/USER/ID: each user's checkpoints in a directory of their own.
  std::string user = JsonString(RunCli(server, {"show", id, "--json"}).out, "user");
  std::string ckpt = root + "/" + user + "/" + id;
  ASSERT_TRUE(Within(std::chrono::seconds(15), [&] { return ReadFile(ckpt + "/step") == "40\n"; }))
      << RunCli(server, {"show", id}).out;
  json::value job = json::parse(RunCli(server, {"show", id, "--json"}).out);
  std::string first = std::string(job.at("allocation").at(0).at("node").as_string());

  // Its node goes, with the job's processes.
  AgentProcess& lost = first == "n1" ? n1 : n2;
  std::string agent_dir = dir.path() + "/" + first;
  lost.Kill9();
  std::string run = agent_dir + "/run/" + id + ".0.run";
  pid_t shim = 0, pid = 0;
  std::ifstream(run) >> shim >> pid;
  if (pid == 0) std::ifstream(run + ".pid") >> pid;
  if (shim > 0) kill(shim, SIGKILL);
  if (pid > 0) kill(-pid, SIGKILL);

  CliResult waited = RunCli(server, {"wait", id});
  EXPECT_EQ(waited.exit_code, 0) << waited.out;
  job = json::parse(RunCli(server, {"show", id, "--json"}).out);
  EXPECT_EQ(job.at("restarts").as_int64(), 1) << job;
  std::string second = std::string(job.at("allocation").at(0).at("node").as_string());
  EXPECT_NE(second, first);
  std::string log = RunCli(server, {"logs", id, "--node", second}).out;
  EXPECT_NE(log.find("resumed at 40 on " + second + " from " + ckpt + "\n"), std::string::npos)
      << log;

  std::string bad = dir.path() + "/bad.yaml";
  std::ofstream(bad) << "checkpoint_root: shared/ckpt\n";
  r = RunCli(server, {"config", "check", bad});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("line 1: checkpoint_root: must be an absolute path"), std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace baton::testing

namespace baton::testing {
namespace {

// `--best-metric loss:min`: the last value and the best of the metric its metrics file
// reports, with the checkpoint of the best (its line's, else the latest before it), in `baton
// show` and the API; the last lines before the job ends count too.
TEST(Checkpoints, TheBestValueOfANamedMetricAndItsCheckpointAreTracked) {
  TempDir dir;
  BatonProcess baton(dir.path() + "/data");
  std::string script =
      "m=$BATON_METRICS_FILE; "
      "echo '{\"step\": 1, \"loss\": 0.9}' >> $m; "
      "echo '{\"step\": 2, \"loss\": 0.5, \"checkpoint\": \"/ck/2\"}' >> $m; "
      "echo '{\"checkpoint\": \"/ck/3\"}' >> $m; sleep 1; "
      "echo '{\"step\": 3, \"loss\": 0.7}' >> $m; "
      "echo '{\"step\": 4, \"loss\": 0.45}' >> $m; "
      "echo '{\"step\": 5, \"loss\": \"nan\", \"acc\": 1}' >> $m; "
      "echo '{\"step\": 6, \"loss\": 0.6}' >> $m";
  CliResult r = RunCli(baton, {"submit", "--best-metric", "loss:min", "--", script});
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::string id = FirstLine(r.out);
  ASSERT_EQ(RunCli(baton, {"wait", id}).exit_code, 0);
  json::value job = json::parse(RunCli(baton, {"show", id, "--json"}).out);
  EXPECT_EQ(job.at("best_metric"), "loss:min") << job;
  const json::value& m = job.at("metric");
  EXPECT_EQ(m.at("goal"), "min") << m;
  EXPECT_EQ(m.at("best").at("value").as_double(), 0.45) << m;
  EXPECT_EQ(m.at("best").at("step").as_int64(), 4) << m;
  EXPECT_EQ(m.at("best").at("checkpoint"), "/ck/3") << m;  // the latest before its line
  EXPECT_EQ(m.at("last").at("value").as_double(), 0.6) << m;
  EXPECT_EQ(m.at("last").at("step").as_int64(), 6) << m;
  CliResult shown = RunCli(baton, {"show", id});
  EXPECT_NE(shown.out.find("loss (lower is better)"), std::string::npos) << shown.out;
  EXPECT_NE(shown.out.find("0.45 at step 4 (checkpoint /ck/3)"), std::string::npos) << shown.out;

  // Higher is better for accuracy; a bad goal is a usage error.
  r = RunCli(baton, {"submit", "--best-metric", "acc:best", "--", "true"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--best-metric: \"acc:best\": NAME:min (lower is better) or NAME:max"),
            std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace baton::testing
