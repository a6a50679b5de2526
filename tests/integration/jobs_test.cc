// End to end through the real binary: GPU isolation, time limits, cancel of a process tree,
// the command line.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "harness.h"

namespace baton::testing {
namespace {

std::string SubmitBody(const std::string& shell_command, const std::string& extra = "") {
  std::string escaped;
  for (char c : shell_command) {
    if (c == '"' || c == '\\') escaped += '\\';
    escaped += c;
  }
  return R"({"command": ")" + escaped + R"(", "resources": {"gpus": 1})" + extra + "}";
}

TEST(Jobs, TwentyFourOneGpuJobsOnEightGpusNeverShareAGpu) {
  TempDir dir;
  BatonProcess baton(dir.path(), {"--gpus", "8xH100-80GB"});
  auto c = baton.Client();
  // Each job prints the GPUs it sees and when it held them (ns since the epoch).
  const std::string script =
      "echo \"gpus=$CUDA_VISIBLE_DEVICES start=$(date +%s%N)\"; sleep 0.3; echo \"end=$(date "
      "+%s%N)\"";
  std::vector<int64_t> ids;
  for (int i = 0; i < 24; ++i) ids.push_back(Submit(*c, SubmitBody(script)));
  struct Span {
    int64_t start, end, job;
  };
  std::map<int, std::vector<Span>> by_gpu;
  for (int64_t id : ids) {
    std::string job = WaitForJob(*c, id, 60000);
    ASSERT_EQ(JsonString(job, "state"), "succeeded") << job;
    std::string log = LogsUntil(*c, id, "end=");
    std::istringstream in(log);
    std::string gpus, start, end;
    in >> gpus >> start >> end;
    ASSERT_EQ(gpus.rfind("gpus=", 0), 0u) << log;
    std::string visible = gpus.substr(5);
    ASSERT_FALSE(visible.empty()) << "job " << id << " saw no GPU";
    ASSERT_EQ(visible.find(','), std::string::npos)
        << "job " << id << " saw more than one GPU: " << visible;
    int gpu = std::stoi(visible);
    ASSERT_GE(gpu, 0);
    ASSERT_LT(gpu, 8);
    // The job's allocation names the same GPU the job saw.
    EXPECT_NE(JsonField(job, "allocation").find("[" + visible + "]"), std::string::npos) << job;
    by_gpu[gpu].push_back(Span{std::stoll(start.substr(6)), std::stoll(end.substr(4)), id});
  }
  int spans = 0;
  for (auto& [gpu, list] : by_gpu) {
    std::sort(list.begin(), list.end(),
              [](const Span& a, const Span& b) { return a.start < b.start; });
    for (size_t i = 1; i < list.size(); ++i) {
      EXPECT_LE(list[i - 1].end, list[i].start) << "GPU " << gpu << " ran jobs " << list[i - 1].job
                                                << " and " << list[i].job << " at once";
    }
    spans += static_cast<int>(list.size());
  }
  EXPECT_EQ(spans, 24);
  EXPECT_GE(by_gpu.size(), 4u) << "the jobs should have spread over the GPUs";
}

TEST(Jobs, ATimeLimitKillsAJobThatIgnoresSigterm) {
  TempDir dir;
  BatonProcess baton(dir.path());
  auto c = baton.Client();
  auto start = std::chrono::steady_clock::now();
  int64_t id = Submit(*c, SubmitBody("trap 'echo got-usr1' USR1; trap 'echo got-term' TERM; "
                                     "while true; do sleep 0.05; done",
                                     R"(, "time_limit": "1s", "grace_period": 1)"));
  std::string job = WaitForJob(*c, id, 30000);
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(JsonString(job, "state"), "timed_out") << job;
  EXPECT_EQ(JsonField(job, "exit_signal"), "9") << job;
  EXPECT_GE(took, std::chrono::milliseconds(1900));  // 1 s limit + 1 s grace
  // PRODUCT.md §4: SIGTERM, grace, SIGKILL; a job that did not ask gets no SIGUSR1.
  std::string log = LogsUntil(*c, id, "got-term");
  EXPECT_NE(log.find("got-term"), std::string::npos) << log;
  EXPECT_EQ(log.find("got-usr1"), std::string::npos) << log;
}

// Issue 16: a cancel sent SIGUSR1 first, which killed a job without a handler and showed it
// as `signal SIGUSR1 (10)`. Now SIGTERM; a cancelled job shows as cancelled in `baton jobs`.
TEST(Jobs, CancelSendsSigtermAndTheJobShowsAsCancelled) {
  TempDir dir;
  BatonProcess baton(dir.path());
  auto c = baton.Client();
  std::string marks = dir.path() + "/marks";
  int64_t id = Submit(*c, SubmitBody("trap 'echo term >> " + marks + "; exit 0' TERM; echo up >> " +
                                     marks + "; while true; do sleep 0.05; done"));
  ASSERT_TRUE(Within(std::chrono::seconds(10), [&] { return ReadFile(marks) == "up\n"; }));
  CliResult cancel = RunCli(baton, {"cancel", std::to_string(id)});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.out;
  std::string job = WaitForJob(*c, id, 30000);
  EXPECT_EQ(JsonString(job, "state"), "cancelled") << job;
  EXPECT_EQ(ReadFile(marks), "up\nterm\n");  // its TERM handler ran, no other signal killed it
  CliResult all = RunCli(baton, {"jobs", "--all"});
  EXPECT_NE(all.out.find("cancelled"), std::string::npos) << all.out;
  EXPECT_EQ(all.out.find("SIGUSR1"), std::string::npos) << all.out;
  // A job without a handler ends at SIGTERM, and shows as cancelled, not as a crash.
  int64_t plain = Submit(*c, SubmitBody("sleep 300"));
  ASSERT_TRUE(Within(std::chrono::seconds(10),
                     [&] { return JsonString(GetJob(*c, plain), "state") == "running"; }));
  EXPECT_EQ(RunCli(baton, {"cancel", std::to_string(plain)}).exit_code, 0);
  std::string ended = WaitForJob(*c, plain, 30000);
  EXPECT_EQ(JsonString(ended, "state"), "cancelled") << ended;
  EXPECT_EQ(JsonField(ended, "exit_signal"), "15") << ended;
  CliResult shown = RunCli(baton, {"jobs", "--all"});
  EXPECT_EQ(shown.out.find("signal SIG"), std::string::npos) << shown.out;
}

TEST(Jobs, CancelEndsTheWholeProcessTree) {
  TempDir dir;
  BatonProcess baton(dir.path());
  auto c = baton.Client();
  std::string pids = dir.path() + "/pids";
  // Grandchildren in the background, one ignoring SIGTERM and SIGUSR1, each recording its pid.
  int64_t id =
      Submit(*c, SubmitBody("(trap '' TERM USR1; sleep 300 & echo $! >> " + pids +
                                "; wait) & (sleep 300 & echo $! >> " + pids + "; wait) & wait",
                            R"(, "grace_period": 1)"));
  std::vector<pid_t> children;
  for (int i = 0; i < 500 && children.size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    children.clear();
    std::ifstream in(pids);
    pid_t p;
    while (in >> p) children.push_back(p);
  }
  ASSERT_EQ(children.size(), 2u);
  auto r = c->Request("POST", "/v1/jobs/" + std::to_string(id) + "/cancel");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200) << r->body;
  std::string job = WaitForJob(*c, id, 30000);
  EXPECT_EQ(JsonString(job, "state"), "cancelled") << job;
  for (pid_t p : children) {
    bool gone = false;
    for (int i = 0; i < 200 && !gone; ++i) {
      gone = kill(p, 0) != 0;
      if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_TRUE(gone) << "process " << p << " of the cancelled job is still alive";
  }
}

TEST(Jobs, TheJobEnvironment) {
  TempDir dir;
  BatonProcess baton(dir.path(), {"--gpus", "4xA100-40GB"});
  auto c = baton.Client();
  int64_t id = Submit(
      *c,
      R"({"name": "envcheck", "command": "env | grep -E '^(CUDA_VISIBLE_DEVICES|BATON_)' | sort; echo END",
                               "resources": {"gpus": 2}, "env": {"SEED": "7"}})");
  std::string job = WaitForJob(*c, id);
  ASSERT_EQ(JsonString(job, "state"), "succeeded") << job;
  std::string log = LogsUntil(*c, id, "END");
  EXPECT_NE(log.find("BATON_JOB_ID=" + std::to_string(id) + "\n"), std::string::npos) << log;
  EXPECT_NE(log.find("BATON_JOB_NAME=envcheck\n"), std::string::npos) << log;
  EXPECT_NE(log.find("BATON_RESTART_COUNT=0\n"), std::string::npos) << log;
  EXPECT_NE(log.find("BATON_CHECKPOINT_DIR="), std::string::npos) << log;
  EXPECT_NE(log.find("BATON_METRICS_FILE="), std::string::npos) << log;
  EXPECT_NE(log.find("BATON_NODELIST="), std::string::npos) << log;
  EXPECT_NE(log.find("CUDA_VISIBLE_DEVICES=0,1\n"), std::string::npos) << log;
}

TEST(Jobs, AJobInheritsNoDescriptorOfTheServer) {
  TempDir dir;
  BatonProcess baton(dir.path());
  auto c = baton.Client();
  // `ls` opens the directory it lists as descriptor 3; anything more came from the server.
  int64_t id = Submit(*c, R"({"command": "ls /proc/self/fd | tr '\n' ' '; echo END"})");
  ASSERT_EQ(JsonString(WaitForJob(*c, id), "state"), "succeeded");
  std::string log = LogsUntil(*c, id, "END");
  EXPECT_NE(log.find("0 1 2 3 END"), std::string::npos) << log;
}

TEST(Jobs, FailedJobsRecordTheirExitCodeAndCpuJobsSeeNoGpu) {
  TempDir dir;
  BatonProcess baton(dir.path());
  auto c = baton.Client();
  int64_t failing = Submit(*c, R"({"command": ["sh", "-c", "exit 7"]})");
  int64_t cpu = Submit(*c, R"({"command": ["sh", "-c", "echo \"[$CUDA_VISIBLE_DEVICES]\""]})");
  std::string f = WaitForJob(*c, failing);
  EXPECT_EQ(JsonString(f, "state"), "failed") << f;
  EXPECT_EQ(JsonField(f, "exit_code"), "7");
  EXPECT_EQ(JsonString(WaitForJob(*c, cpu), "state"), "succeeded");
  EXPECT_NE(LogsUntil(*c, cpu, "[]").find("[]"), std::string::npos);
}

// Issue 39: a dry run (POST /v1/jobs?dry_run=true) checks what the submit checks, answers the
// jobs it would make, and makes none; a body refused as written names its field.
TEST(Jobs, ADryRunAnswersTheJobsItWouldMakeAndMakesNone) {
  TempDir dir;
  BatonProcess baton(dir.path(), {"--gpus", "4xH100-80GB"});
  auto c = baton.Client();
  auto dry = c->Request("POST", "/v1/jobs?dry_run=true",
                        R"({"command": ["true"], "resources": {"gpus": "0.5"}, "array": "0-2"})");
  ASSERT_TRUE(dry.has_value()) << dry.error().message();
  EXPECT_EQ(dry->status, 200) << dry->body;
  EXPECT_EQ(JsonField(dry->body, "dry_run"), "true") << dry->body;
  EXPECT_EQ(CountOf(dry->body, R"("state":"pending")"), 3u) << dry->body;
  EXPECT_EQ(CountOf(dry->body, R"("gpus":5E-1)"), 3u) << dry->body;  // "0.5" read as --gpus
  EXPECT_EQ(dry->body.find(R"("id":)"), std::string::npos) << dry->body;
  auto batch = c->Request("POST", "/v1/jobs/batch?dry_run=1",
                          R"({"jobs": [{"command": ["true"]}, {"command": "x", "hold": true}]})");
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->status, 200) << batch->body;
  EXPECT_NE(batch->body.find(R"("state":"held")"), std::string::npos) << batch->body;
  auto yaml = c->Request("POST", "/v1/jobs?dry_run=true", "command: sleep 1\ntime_limit: 2h\n",
                         {{"Content-Type", "application/yaml"}});
  ASSERT_TRUE(yaml.has_value());
  EXPECT_NE(yaml->body.find(R"("time_limit_s":7.2E3)"), std::string::npos) << yaml->body;
  // Nothing was made: no job listed, and the first real submit gets id 1.
  auto list = c->Request("GET", "/v1/jobs");
  ASSERT_TRUE(list.has_value());
  EXPECT_EQ(JsonField(list->body, "jobs"), "[]") << list->body;
  // Refused as the submit refuses: a body wrong as written names its field; what the
  // cluster refuses does not.
  auto bad =
      c->Request("POST", "/v1/jobs?dry_run=true", R"({"command": ["true"], "time_limit": "1.5x"})");
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find(R"("field":"time_limit")"), std::string::npos) << bad->body;
  auto nested = c->Request("POST", "/v1/jobs/batch?dry_run=true",
                           R"({"jobs": [{"command": ["true"]}, {"command": ["true"],
                               "resources": {"gpus": "0.1234"}}]})");
  ASSERT_TRUE(nested.has_value());
  EXPECT_NE(nested->body.find(R"("field":"jobs[1].resources.gpus")"), std::string::npos)
      << nested->body;
  EXPECT_NE(nested->body.find(R"(not a number with at most 3 decimals (got \"0.1234\"))"),
            std::string::npos)
      << nested->body;
  auto after =
      c->Request("POST", "/v1/jobs?dry_run=true", R"({"command": ["true"], "after": [9]})");
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->status, 400);
  EXPECT_NE(after->body.find("after: job 9 does not exist"), std::string::npos) << after->body;
  EXPECT_EQ(after->body.find(R"("field")"), std::string::npos) << after->body;
  // A mistyped flag is refused, never taken for a real submit.
  auto typo = c->Request("POST", "/v1/jobs?dry_run=maybe", R"({"command": ["true"]})");
  ASSERT_TRUE(typo.has_value());
  EXPECT_EQ(typo->status, 400) << typo->body;
  EXPECT_NE(typo->body.find("dry_run: true or false"), std::string::npos) << typo->body;
  EXPECT_EQ(Submit(*c, R"({"command": ["true"]})"), 1);
}

// sbatch --test-only, on the dry run: what the submit would make, said; nothing made.
TEST(Cli, TestOnlySaysWhatTheSubmitWouldMakeAndSubmitsNothing) {
  TempDir dir;
  BatonProcess baton(dir.path(), {"--gpus", "4xH100-80GB"});
  CliResult array = RunCli(
      baton, {"submit", "--test-only", "-g", "2", "-t", "2h", "--array", "0-3", "--", "true"});
  EXPECT_EQ(array.exit_code, 0) << array.out;
  EXPECT_EQ(array.out,
            "true (4 tasks, 0-3) would be pending: 2 GPUs on 1 node of pool default, time limit "
            "2h\nnothing submitted (--test-only)\n");
  CliResult held = RunCli(baton, {"submit", "--test-only", "--hold", "--", "sleep", "1"});
  EXPECT_EQ(held.exit_code, 0) << held.out;
  EXPECT_EQ(FirstLine(held.out),
            "sleep would be held: no GPU on 1 node of pool default, no time limit");
  CliResult json = RunCli(baton, {"submit", "--test-only", "--json", "--", "true"});
  EXPECT_EQ(json.exit_code, 0) << json.out;
  EXPECT_EQ(JsonField(json.out, "dry_run"), "true") << json.out;
  // Refused as the submit is, in its words: exit 1.
  CliResult big = RunCli(baton, {"submit", "--test-only", "-g", "16", "--", "true"});
  EXPECT_EQ(big.exit_code, 1) << big.out;
  EXPECT_NE(big.out.find("resources.gpus: no set of nodes can ever hold 16 GPUs"),
            std::string::npos)
      << big.out;
  CliResult after = RunCli(baton, {"submit", "--test-only", "--after", "99", "--", "true"});
  EXPECT_EQ(after.exit_code, 1) << after.out;
  EXPECT_NE(after.out.find("after: job 99 does not exist"), std::string::npos) << after.out;
  // A flag typed wins over the script's line in whichever of Slurm's spellings each is
  // (a script's --gres=gpu:1 reads as --gpus-per-node 1).
  std::string sized = dir.path() + "/sized.sh";
  std::ofstream(sized) << "#!/bin/bash\n#SBATCH --gres=gpu:1\n#SBATCH --mem-per-gpu=1G\n"
                          "#SBATCH -c 2\necho hi\n";
  for (const auto& [typed, said] :
       {std::pair{std::vector<std::string>{"--gres=gpu:2"}, "2 GPUs"},
        std::pair{std::vector<std::string>{"-G", "3"}, "3 GPUs"},
        std::pair{std::vector<std::string>{"--gpus-per-task", "4"}, "4 GPUs"},
        std::pair{std::vector<std::string>{}, "1 GPU"}}) {
    std::vector<std::string> args = {"submit", "--test-only"};
    args.insert(args.end(), typed.begin(), typed.end());
    args.push_back(sized);
    CliResult r = RunCli(baton, args);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("would be pending: " + std::string(said) + " on 1 node"),
              std::string::npos)
        << r.out;
  }
  // `--preemptible=false` is `--no-preemptible`, typed or in a script, and a typed one wins
  // over the script's (a job that must never be stopped is not preempted for a spelling).
  std::string spot = dir.path() + "/spot.sh", steady = dir.path() + "/steady.sh";
  std::ofstream(spot) << "#!/bin/bash\n#BATON --preemptible\necho hi\n";
  std::ofstream(steady) << "#!/bin/bash\n#BATON --preemptible=false\necho hi\n";
  for (const auto& [words, preemptible] :
       {std::pair{std::vector<std::string>{"--", "true"}, "true"},  // a batch job's default
        std::pair{std::vector<std::string>{"--preemptible=false", "--", "true"}, "false"},
        std::pair{std::vector<std::string>{"--no-preemptible=false", "--", "true"}, "true"},
        std::pair{std::vector<std::string>{spot}, "true"},
        std::pair{std::vector<std::string>{"--no-preemptible", spot}, "false"},
        std::pair{std::vector<std::string>{"--preemptible=false", spot}, "false"},
        std::pair{std::vector<std::string>{steady}, "false"},
        std::pair{std::vector<std::string>{"--preemptible", steady}, "true"}}) {
    std::vector<std::string> args = {"submit", "--test-only", "--json"};
    args.insert(args.end(), words.begin(), words.end());
    CliResult r = RunCli(baton, args);
    EXPECT_EQ(r.exit_code, 0) << words.front() << ": " << r.out;
    EXPECT_NE(r.out.find(std::string("\"preemptible\":") + preemptible + ","), std::string::npos)
        << words.front() << ": " << r.out;
  }
  // A script of another language without directives is a command, as any program is; asked
  // to be a batch script, it is refused, saying why.
  std::string perl = dir.path() + "/count.pl";
  std::ofstream(perl) << "#!/usr/bin/perl\nprint 1;\n";
  CliResult plain = RunCli(baton, {"submit", "--test-only", perl});
  EXPECT_EQ(plain.exit_code, 0) << plain.out;
  EXPECT_EQ(FirstLine(plain.out),
            "count.pl would be pending: no GPU on 1 node of pool default, "
            "no time limit")
      << plain.out;
  CliResult batch = RunCli(baton, {"submit", "--test-only", "--batch-script", perl});
  EXPECT_EQ(batch.exit_code, 2) << batch.out;
  EXPECT_NE(batch.out.find("Baton runs batch scripts of sh, bash, dash, zsh, ksh or python"),
            std::string::npos)
      << batch.out;
  // A script's directive cannot ask for it: it is typed.
  std::string script = dir.path() + "/t.sh";
  std::ofstream(script) << "#!/bin/bash\n#SBATCH --test-only\necho hi\n";
  CliResult directive = RunCli(baton, {"submit", script});
  EXPECT_EQ(directive.exit_code, 2) << directive.out;
  EXPECT_NE(directive.out.find("--test-only: type it: baton submit --test-only SCRIPT"),
            std::string::npos)
      << directive.out;
  // Nothing was made: the first real submit is job 1.
  CliResult real = RunCli(baton, {"submit", "--", "true"});
  EXPECT_EQ(real.exit_code, 0) << real.out;
  EXPECT_EQ(real.out, "1\n");
}

TEST(Cli, TheTourWorks) {
  TempDir dir;
  BatonProcess baton(dir.path());
  CliResult sub =
      RunCli(baton, {"submit", "-g", "1", "--name", "hello", "--", "echo", "hello", "world"});
  ASSERT_EQ(sub.exit_code, 0) << sub.out;
  std::string id = sub.out.substr(0, sub.out.find('\n'));
  CliResult wait = RunCli(baton, {"wait", id, "--timeout", "30s"});
  EXPECT_EQ(wait.exit_code, 0) << wait.out;
  CliResult all = RunCli(baton, {"jobs", "--all"});
  EXPECT_EQ(all.exit_code, 0);
  EXPECT_NE(all.out.find("hello"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("succeeded"), std::string::npos) << all.out;
  CliResult logs;
  for (int i = 0; i < 100; ++i) {
    logs = RunCli(baton, {"logs", id});
    if (logs.out.find("hello world") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(logs.out, "hello world\n");
  CliResult show = RunCli(baton, {"show", id, "--json"});
  EXPECT_EQ(show.exit_code, 0);
  EXPECT_EQ(JsonString(show.out, "state"), "succeeded") << show.out;

  CliResult bad = RunCli(baton, {"submit", "-g", "1", "--", "sh", "-c", "exit 3"});
  ASSERT_EQ(bad.exit_code, 0) << bad.out;
  std::string bad_id = bad.out.substr(0, bad.out.find('\n'));
  EXPECT_EQ(RunCli(baton, {"wait", bad_id, "--timeout", "30s"}).exit_code, 1);

  CliResult usage = RunCli(baton, {"submit", "--gpus"});
  EXPECT_EQ(usage.exit_code, 2) << usage.out;
  CliResult invalid = RunCli(baton, {"submit", "-g", "-3", "--", "true"});
  EXPECT_EQ(invalid.exit_code, 2) << invalid.out;  // caught before asking the server
  EXPECT_NE(invalid.out.find("gpus"), std::string::npos) << invalid.out;
  CliResult typo = RunCli(baton, {"submit", "--gpu", "1", "python", "train.py"});
  EXPECT_EQ(typo.exit_code, 2) << typo.out;  // not a job whose program is "--gpu"
  EXPECT_NE(typo.out.find("unknown option '--gpu'"), std::string::npos) << typo.out;
  CliResult missing = RunCli(baton, {"show", "999999"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.out.find("999999"), std::string::npos) << missing.out;

  CliResult held = RunCli(baton, {"submit", "--hold", "--", "true"});
  std::string held_id = held.out.substr(0, held.out.find('\n'));
  CliResult pending = RunCli(baton, {"jobs"});
  EXPECT_NE(pending.out.find("held"), std::string::npos) << pending.out;
  EXPECT_EQ(RunCli(baton, {"release", held_id}).exit_code, 0);
  EXPECT_EQ(RunCli(baton, {"wait", held_id, "--timeout", "30s"}).exit_code, 0);
  CliResult nodes = RunCli(baton, {"nodes"});
  EXPECT_NE(nodes.out.find("H100-80GB"), std::string::npos) << nodes.out;
}

// Issue 16: `baton wait ID` without --timeout returned at once ("timed out waiting for 1
// job(s)", exit 1). Without --timeout it waits as long as it takes, as users type it.
TEST(Cli, WaitWithoutATimeoutWaitsForTheJobToEnd) {
  TempDir dir;
  BatonProcess baton(dir.path());
  CliResult sub = RunCli(baton, {"submit", "--", "sh", "-c", "sleep 2; echo done"});
  ASSERT_EQ(sub.exit_code, 0) << sub.out;
  std::string id = sub.out.substr(0, sub.out.find('\n'));
  auto start = std::chrono::steady_clock::now();
  CliResult wait = RunCli(baton, {"wait", id});
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(wait.exit_code, 0) << wait.out;
  EXPECT_EQ(wait.out.find("timed out"), std::string::npos) << wait.out;
  EXPECT_GE(waited, std::chrono::milliseconds(1500)) << wait.out;
  CliResult show = RunCli(baton, {"show", id, "--json"});
  EXPECT_EQ(JsonString(show.out, "state"), "succeeded") << show.out;
  // A job that fails: wait reports it and exits 1, still without a timeout.
  CliResult bad = RunCli(baton, {"submit", "--", "sh", "-c", "sleep 1; exit 3"});
  std::string bad_id = bad.out.substr(0, bad.out.find('\n'));
  CliResult failed = RunCli(baton, {"wait", bad_id});
  EXPECT_EQ(failed.exit_code, 1) << failed.out;
  EXPECT_NE(failed.out.find("job " + bad_id + " failed"), std::string::npos) << failed.out;
  EXPECT_EQ(failed.out.find("timed out"), std::string::npos) << failed.out;
}

TEST(Cli, JobFileSubmitsEveryJob) {
  TempDir dir;
  BatonProcess baton(dir.path());
  std::string file = dir.path() + "/jobs.yaml";
  std::ofstream(file)
      << "jobs:\n  - name: a\n    command: [echo, a]\n  - name: b\n    command: echo b\n"
         "    resources: {gpus: 0.5}\n";
  CliResult sub = RunCli(baton, {"submit", "-f", file});
  ASSERT_EQ(sub.exit_code, 0) << sub.out;
  EXPECT_EQ(std::count(sub.out.begin(), sub.out.end(), '\n'), 2) << sub.out;
  std::ofstream(file) << "name: [broken\n";
  CliResult bad = RunCli(baton, {"submit", "-f", file});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.out.find("jobs.yaml"), std::string::npos) << bad.out;
}

// Issue 16: `submit -f FILE` silently ignored the other flags. Flags given with -f override the
// file's fields (for a list, in each job); a command after -- with -f is an error.
TEST(Cli, FlagsGivenWithAFileOverrideItsFields) {
  TempDir dir;
  BatonProcess baton(dir.path());
  auto c = baton.Client();
  std::string file = dir.path() + "/job.yaml";
  std::ofstream(file) << "name: a\ncommand: [sleep, '60']\nproject: vision\n"
                         "resources: {gpus: 1}\nenv: {LR: '0.1', SEED: '1'}\n";
  CliResult one = RunCli(baton, {"submit", "-f", file, "-g", "2", "--project", "speech", "--name",
                                 "b", "--env", "LR=0.3", "--hold"});
  ASSERT_EQ(one.exit_code, 0) << one.out;
  std::string job = GetJob(*c, std::stoll(one.out));
  EXPECT_EQ(JsonString(job, "state"), "held") << job;
  EXPECT_EQ(JsonString(job, "project"), "speech") << job;
  EXPECT_EQ(JsonString(job, "name"), "b") << job;
  EXPECT_NE(job.find("\"gpus\":2"), std::string::npos) << job;
  EXPECT_NE(job.find("\"LR\":\"0.3\""), std::string::npos) << job;  // the flag's value
  EXPECT_NE(job.find("\"SEED\":\"1\""), std::string::npos) << job;  // the file's others stay
  // Not given: the file's fields stay, not the flags' defaults.
  CliResult plain = RunCli(baton, {"submit", "-f", file, "--hold"});
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  std::string kept = GetJob(*c, std::stoll(plain.out));
  EXPECT_EQ(JsonString(kept, "project"), "vision") << kept;
  EXPECT_NE(kept.find("\"gpus\":1"), std::string::npos) << kept;
  // A list: the flags apply to each job.
  std::string list = dir.path() + "/jobs.yaml";
  std::ofstream(list) << "- {name: x, command: [true]}\n- {name: y, command: [true]}\n";
  CliResult both = RunCli(baton, {"submit", "-f", list, "-p", "high", "--hold"});
  ASSERT_EQ(both.exit_code, 0) << both.out;
  std::stringstream ids(both.out);
  for (std::string id; std::getline(ids, id);) {
    std::string j = GetJob(*c, std::stoll(id));
    EXPECT_EQ(JsonString(j, "priority"), "high") << j;
    EXPECT_EQ(JsonString(j, "state"), "held") << j;
  }
  CliResult mixed = RunCli(baton, {"submit", "-f", file, "--", "echo", "hi"});
  EXPECT_EQ(mixed.exit_code, 2) << mixed.out;
  EXPECT_NE(mixed.out.find("cannot go together"), std::string::npos) << mixed.out;
  CliResult bad = RunCli(baton, {"submit", "-f", file, "-g", "-1"});
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
}

// Issue 16: right after `baton wait` said a job ended, `baton logs` could stop at exactly
// 262,144 bytes (one shipped chunk); the rest came seconds later. An end is reported only with
// the last of the job's output.
TEST(Cli, LogsRightAfterWaitHaveTheWholeOutput) {
  TempDir dir;
  BatonProcess baton(dir.path());
  CliResult sub = RunCli(baton, {"submit", "--", "bash", "-c", "seq 1 400000; exit 7"});
  ASSERT_EQ(sub.exit_code, 0) << sub.out;
  std::string id = sub.out.substr(0, sub.out.find('\n'));
  CliResult wait = RunCli(baton, {"wait", id});
  EXPECT_EQ(wait.exit_code, 1) << wait.out;  // it failed, with exit 7
  CliResult logs = RunCli(baton, {"logs", id});
  EXPECT_EQ(logs.exit_code, 0);
  std::string expected;
  for (int i = 1; i <= 400000; ++i) expected += std::to_string(i) + "\n";
  ASSERT_EQ(logs.out.size(), expected.size()) << "the log stopped at " << logs.out.size();
  EXPECT_TRUE(logs.out == expected);
  CliResult followed = RunCli(baton, {"logs", "-f", id});
  EXPECT_EQ(followed.out.size(), expected.size());
}

// Issue 16: Slurm's --signal SIG[@TIME], typed as users type it, and `signal:` in job files.
TEST(Cli, SignalAsksForANoticeBeforeTheTimeLimit) {
  TempDir dir;
  BatonProcess baton(dir.path());
  std::string script =
      "trap 'echo notice' USR1; trap 'echo term; exit 0' TERM; while :; do sleep 0.05; done";
  CliResult sub = RunCli(baton, {"submit", "-t", "3s", "--grace", "2s", "--signal", "USR1@2s", "--",
                                 "sh", "-c", script});
  ASSERT_EQ(sub.exit_code, 0) << sub.out;
  std::string id = sub.out.substr(0, sub.out.find('\n'));
  CliResult show = RunCli(baton, {"show", id});
  EXPECT_NE(show.out.find("USR1@2s before its limit"), std::string::npos) << show.out;
  CliResult wait = RunCli(baton, {"wait", id});
  EXPECT_EQ(wait.exit_code, 1) << wait.out;  // timed out
  auto c = baton.Client();
  std::string job = GetJob(*c, std::stoll(id));
  EXPECT_EQ(JsonString(job, "state"), "timed_out") << job;
  EXPECT_EQ(JsonString(job, "signal"), "USR1@2s") << job;
  std::string log = LogsUntil(*c, std::stoll(id), "term");
  // The notice once (the shell also reports its sleep killed by each signal), then SIGTERM.
  size_t notice = log.find("notice\n");
  ASSERT_NE(notice, std::string::npos) << log;
  EXPECT_EQ(log.find("notice\n", notice + 1), std::string::npos) << log;
  EXPECT_LT(notice, log.find("\nterm\n")) << log;

  std::string file = dir.path() + "/job.yaml";
  std::ofstream(file) << "command: [true]\ntime_limit: 1h\nsignal: USR2@5m\n";
  CliResult filed = RunCli(baton, {"submit", "-f", file});
  ASSERT_EQ(filed.exit_code, 0) << filed.out;
  std::string filed_id = filed.out.substr(0, filed.out.find('\n'));
  EXPECT_EQ(JsonString(GetJob(*c, std::stoll(filed_id)), "signal"), "USR2@5m");

  CliResult kill = RunCli(baton, {"submit", "--signal", "KILL", "--", "true"});
  EXPECT_EQ(kill.exit_code, 2) << kill.out;
  EXPECT_NE(kill.out.find("cannot be caught"), std::string::npos) << kill.out;
}

}  // namespace
}  // namespace baton::testing
