// Issue 38, Slurm as it is typed: batch scripts written for sbatch (tests/slurm/) run unchanged
// through `baton submit SCRIPT`, on one node and on two agents: their #SBATCH lines, output
// files, arrays, dependencies, signals, SLURM_* variables, srun across nodes (real PyTorch
// all-reduces through it) and scontrol; Slurm's spellings on the command line; `baton alloc` and
// `baton run --in`; and a step server that takes tasks only from a caller with the job's key.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/splice.h"
#include "core/step_wire.h"
#include "harness.h"

namespace baton::testing {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

// The last line of `text` that is a job id (notes may come before it).
std::string IdOf(const std::string& text) {
  std::string id, line;
  std::istringstream in(text);
  while (std::getline(in, line)) {
    if (!line.empty() && line.find_first_not_of("0123456789") == std::string::npos) id = line;
  }
  return id;
}

// Two nodes on this host, named and reached as two loopback addresses (so that `scontrol show
// hostnames | head -n1` names a host the other node reaches, as a cluster's DNS would), with
// two simulated H100s each; and a work directory holding the scripts, as a user's project.
class Slurm : public ::testing::Test {
 protected:
  TempDir dir;
  BatonProcess server{dir.path() + "/server", {}, "server"};
  AgentProcess a1{
      server, "127.0.0.1", dir.path() + "/n1", "2xH100-80GB", {"--address", "127.0.0.1"}};
  AgentProcess a2{
      server, "127.0.0.2", dir.path() + "/n2", "2xH100-80GB", {"--address", "127.0.0.2"}};
  std::unique_ptr<net::HttpClient> c = server.Client();
  std::string work = dir.path() + "/project";

  void SetUp() override {
    ASSERT_TRUE(NodesReady(*c, 2));
    fs::create_directories(work);
    for (const auto& entry : fs::directory_iterator(std::string(BATON_SOURCE_DIR) + "/tests/slurm"))
      fs::copy(entry.path(), work + "/" + entry.path().filename().string());
  }

  // `baton submit ARGS` from the project directory: the job's id (the test fails without one).
  std::string Submit(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
                     std::string* said = nullptr) {
    // A rendezvous port of its own (hence step ports too): tests run side by side on one host,
    // each cluster numbering its jobs from 1.
    std::vector<std::string> all = {"submit", "--env",
                                    "MASTER_PORT=" + std::to_string(MasterPort())};
    all.insert(all.end(), args.begin(), args.end());
    CliResult r = RunCliIn(server, work, all, env);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    if (said != nullptr) *said = r.out;
    return IdOf(r.out);
  }

  // Waits for the job; its exit code as `baton wait` gives it.
  int Wait(const std::string& id) {
    CliResult r = RunCli(server, {"wait", id, "--timeout", "120"});
    return r.exit_code;
  }

  json::value Show(const std::string& id) {
    return json::parse(RunCli(server, {"show", id, "--json"}).out);
  }

  std::string File(const std::string& name) { return ReadFile(work + "/" + name); }
  std::string Logs(const std::string& id) { return RunCli(server, {"logs", id}).out; }
};

bool Has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

TEST_F(Slurm, AScriptRunsWithItsDirectivesItsArgumentsAndItsOutputFile) {
  std::string said;
  std::string id = Submit({"hello.sh", "one", "two"}, {}, &said);
  ASSERT_FALSE(id.empty()) << said;
  EXPECT_TRUE(Has(said, "#SBATCH --mail-type: Baton sends no mail")) << said;
  ASSERT_EQ(Wait(id), 0) << Logs(id);
  json::value job = Show(id);
  EXPECT_EQ(job.at("name"), "hello");
  EXPECT_EQ(job.at("time_limit_s").to_number<double>(), 300.0);
  EXPECT_EQ(job.at("batch"), true);
  std::string out = File("hello-" + id + ".out");
  EXPECT_TRUE(Has(out, "job " + id + " (hello) on 1 node(s): 127.0.0.")) << out;
  EXPECT_TRUE(Has(out, "submitted from " + work + "; running in " + work)) << out;
  EXPECT_TRUE(Has(out, "args: one two")) << out;
  EXPECT_TRUE(Has(Logs(id), "args: one two")) << "the output is kept for baton logs too";
  struct stat st {};
  ASSERT_EQ(stat((work + "/hello-" + id + ".out").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "an output file is its user's alone";
  // The script ran as it was at submit: an edit after does not reach a queued job.
  EXPECT_EQ(json::value_to<std::string>(job.at("command").as_array().at(0)), "/bin/bash");
}

TEST_F(Slurm, GpusCpusMemoryAndQosOfAScriptAreTheJobsSize) {
  std::string id = Submit({"gpus.sh"});
  ASSERT_EQ(Wait(id), 0) << Logs(id);
  json::value job = Show(id);
  const json::value& r = job.at("resources");
  EXPECT_EQ(r.at("gpus").to_number<double>(), 2.0) << r;
  EXPECT_EQ(r.at("gpu_type"), "h100") << r;
  EXPECT_EQ(r.at("cpus"), 2) << r;
  EXPECT_EQ(r.at("memory_bytes").as_int64(), int64_t{2} << 30) << r;
  EXPECT_EQ(job.at("priority"), "high");
  EXPECT_EQ(job.at("name"), "finetune");
  std::string out = File("slurm-" + id + ".out");  // sbatch's default name
  EXPECT_TRUE(Has(out, "gpus on node: 2 (CUDA_VISIBLE_DEVICES=")) << out;
  EXPECT_TRUE(Has(out, "cpus per task: 2")) << out;
  EXPECT_TRUE(Has(out, "tasks: 1, procid 0, nodeid 0")) << out;
}

TEST_F(Slurm, AnArrayScriptWritesEachTasksFilesByPattern) {
  fs::create_directories(work + "/logs");  // as with sbatch, the directory must exist
  std::string id = Submit({"array.sh"});
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(Wait(id), 0) << Logs(id);
  const char* lrs[] = {"0.1", "0.01", "0.001", "0.0001"};
  for (int i = 0; i < 4; ++i) {
    std::string base = "logs/lr-sweep_" + id + "_" + std::to_string(i);
    std::string out = File(base + ".out");
    EXPECT_TRUE(Has(out, "task " + std::to_string(i) + " of array " + id + ": lr=" + lrs[i]))
        << base << ": " << out;
    EXPECT_FALSE(Has(out, "a warning")) << out;
    EXPECT_TRUE(Has(File(base + ".err"), "a warning for task " + std::to_string(i)));
  }
  std::ofstream(work + "/params.txt") << "lr=0.1 depth=2\nlr=0.2 depth=4\nlr=0.3 depth=8\n";
  std::string params = Submit({"params_array.sh"});
  EXPECT_EQ(Wait(params), 0) << Logs(params);
  EXPECT_TRUE(Has(File("params-" + params + "-002.out"), "line 2: lr=0.2 depth=4"));
  EXPECT_TRUE(Has(File("params-" + params + "-003.out"), "line 3: lr=0.3 depth=8"));
}

TEST_F(Slurm, ADependencyOnTheCommandLineChainsTwoScripts) {
  std::string first = Submit({"--hold", "preprocess.sh"});
  std::string second = Submit({"-d", "afterok:" + first, "train_after.sh"});
  json::value job = Show(second);
  ASSERT_EQ(job.at("after").as_array().size(), 1u) << job;
  EXPECT_EQ(job.at("after").as_array().at(0).as_int64(), std::stoll(first));
  EXPECT_EQ(job.at("state"), "pending");
  EXPECT_EQ(RunCli(server, {"release", first}).exit_code, 0);
  EXPECT_EQ(Wait(second), 0) << Logs(second);
  EXPECT_TRUE(Has(File("train-" + second + ".out"), "training on: tokenized 1000 documents"));
}

TEST_F(Slurm, AScriptCheckpointsOnItsWarningSignalBeforeTheLimit) {
  std::string said;
  std::string id = Submit({"signal_checkpoint.sh"}, {}, &said);
  EXPECT_FALSE(Has(said, "--requeue")) << "Baton's default, taken without a note: " << said;
  EXPECT_EQ(Wait(id), 0) << Logs(id);
  EXPECT_EQ(Show(id).at("signal"), "B:USR1@15s");  // the batch shell's alone, as asked
  EXPECT_FALSE(Show(id).as_object().contains("requeue")) << "requeued as any job";
  EXPECT_TRUE(Has(File("ckpt-" + id + ".out"), "USR1: checkpointing at step ")) << Logs(id);
}

// Without B:, Slurm's --signal is for the job's steps: srun's tasks get it on every node (here
// from srun on the first, from the step server on the second) and the batch shell is not
// signalled, so `srun python train.py` with Lightning's SIGUSR1 handler checkpoints and the
// script runs on, where a signal to the whole script had ended the shell and srun at once.
TEST_F(Slurm, AWarningSignalWithoutBGoesToTheStepsOnEveryNodeAndNotTheShell) {
  std::string id = Submit({"signal_steps.sh"});
  EXPECT_EQ(Wait(id), 0) << File("steps-" + id + ".out") << Logs(id);
  EXPECT_EQ(Show(id).at("signal"), "USR1@15s");
  std::string out = File("steps-" + id + ".out");
  EXPECT_TRUE(Has(out, "task 0: USR1, checkpointing")) << out;
  EXPECT_TRUE(Has(out, "task 1: USR1, checkpointing")) << out;
  EXPECT_TRUE(Has(out, "the shell ran on: srun exited 0")) << out;
}

// A pool with `slurm: false` gives its jobs no SLURM_* variables, srun or scontrol; a batch
// script still runs, and its output file's %x and %j are named from the job's BATON_* ones.
TEST(SlurmOff, APoolWithoutSlurmStillNamesAScriptsOutputFile) {
  TempDir dir;
  std::string config = dir.path() + "/baton.yaml";
  std::ofstream(config) << "pools:\n  default: {slurm: false}\n";
  BatonProcess baton(dir.path() + "/server", {"--gpus", "2xH100-80GB", "--config", config});
  std::string work = dir.path() + "/project";
  fs::create_directories(work);
  std::ofstream(work + "/quiet.sh") << "#!/bin/bash\n#SBATCH --output=%x-%j.out\n"
                                       "case $PATH in *slurm-bin*) s=on;; *) s=none;; esac\n"
                                       "echo \"job ${BATON_JOB_ID}, srun: $s, slurm id: "
                                       "${SLURM_JOB_ID:-none}\"\n";
  CliResult sub = RunCliIn(baton, work, {"submit", "quiet.sh"});
  ASSERT_EQ(sub.exit_code, 0) << sub.out;
  std::string id = IdOf(sub.out);
  EXPECT_EQ(RunCli(baton, {"wait", id, "--timeout", "60"}).exit_code, 0)
      << RunCli(baton, {"logs", id}).out;
  EXPECT_EQ(ReadFile(work + "/quiet.sh-" + id + ".out"),  // %x: the name, the script's by default
            "job " + id + ", srun: none, slurm id: none\n");
}

// Slurm's --no-requeue: a job that must not run twice fails when it is preempted (or its node
// is lost, tests/integration/fencing_test.cc) instead of going back to the queue.
TEST_F(Slurm, ANoRequeueScriptFailsWhenPreemptedInsteadOfRunningAgain) {
  std::string id = Submit({"export_once.sh"});
  ASSERT_TRUE(Within(std::chrono::seconds(30), [&] {
    return Has(File("export-" + id + ".out"), "exporting from");
  })) << Logs(id);
  EXPECT_EQ(Show(id).at("requeue"), false);
  EXPECT_TRUE(
      Has(RunCli(server, {"show", id}).out, "never (--no-requeue): stopped by Baton, it fails"));
  std::string high = Submit({"-g", "1", "--priority", "high", "--", "true"});
  EXPECT_EQ(Wait(high), 0) << Logs(high);
  EXPECT_EQ(Wait(id), 1);
  json::value job = Show(id);
  EXPECT_EQ(job.at("state"), "failed") << job;
  EXPECT_EQ(job.at("restarts").as_int64(), 0) << job;
  EXPECT_EQ(json::value_to<std::string>(job.at("reason_detail")),
            "preempted (priority) for job " + high + "; not requeued (requeue: false)")
      << job;
  std::string out = File("export-" + id + ".out");
  EXPECT_TRUE(Has(out, "stopped before publishing")) << out;
  EXPECT_FALSE(Has(out, "restart 1")) << out;
  // The flag typed wins over the script's line, as with sbatch.
  std::string again = Submit({"--requeue", "--hold", "export_once.sh"});
  EXPECT_FALSE(Show(again).as_object().contains("requeue")) << Show(again);
  std::string once = Submit({"--no-requeue", "--hold", "hello.sh"});
  EXPECT_EQ(Show(once).at("requeue"), false);
  // A job that is never requeued has no retries to spend: said before anything is sent.
  CliResult both =
      RunCliIn(server, work, {"submit", "--no-requeue", "--retries", "2", "--", "true"});
  EXPECT_EQ(both.exit_code, 2) << both.out;
  EXPECT_TRUE(
      Has(both.out, "retries: a job that is never requeued (requeue: false) has no retries"))
      << both.out;
}

TEST_F(Slurm, ChdirAndExportAreWhereAndWithWhatTheScriptRuns) {
  fs::create_directories(work + "/workdir");
  std::string said;
  std::string id = Submit({"chdir_export.sh"}, {"SEED=7"}, &said);
  EXPECT_TRUE(Has(said, "--export=ALL: the job gets its node's environment")) << said;
  EXPECT_EQ(Wait(id), 0) << Logs(id);
  EXPECT_TRUE(Has(File("workdir/run.out"), "in workdir, experiment baseline, seed 7")) << Logs(id);
}

TEST_F(Slurm, APythonScriptAndAWrappedCommandAreBatchScriptsToo) {
  std::string py = Submit({"train.py", "--epochs", "3"});
  EXPECT_EQ(Wait(py), 0) << Logs(py);
  EXPECT_TRUE(Has(File("pytrain-" + py + ".out"),
                  "python job " + py + " on 127.0.0.1, args ['--epochs', '3']") ||
              Has(File("pytrain-" + py + ".out"),
                  "python job " + py + " on 127.0.0.2, args ['--epochs', '3']"))
      << Logs(py);
  std::string wrapped = Submit({"--wrap", "echo wrapped $SLURM_JOB_ID on $SLURM_NNODES"});
  EXPECT_EQ(Wait(wrapped), 0) << Logs(wrapped);
  EXPECT_TRUE(Has(File("slurm-" + wrapped + ".out"), "wrapped " + wrapped + " on 1"));
}

TEST_F(Slurm, AnUnknownDirectiveIsRefusedWithItsLineAndNothingIsMade) {
  CliResult r = RunCliIn(server, work, {"submit", "unknown_directive.sh"});
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out,
            "baton: unknown_directive.sh:4: #SBATCH --burst-buffer: an sbatch option "
            "Baton does not know\n");
  CliResult typed = RunCliIn(server, work, {"submit", "--constraint", "a100", "hello.sh"});
  EXPECT_EQ(typed.exit_code, 2) << typed.out;
  EXPECT_EQ(RunCli(server, {"jobs", "--all", "--json"}).out.find("\"id\""), std::string::npos);
}

TEST_F(Slurm, SlurmsSpellingsWorkOnTheCommandLine) {
  std::string id =
      Submit({"-N", "2", "-J", "spelled", "--gres=gpu:1", "--mem", "1G", "-A", "default",
              "--partition", "default", "-c", "1", "--qos", "low", "-t", "5", "--", "true"});
  json::value job = Show(id);
  EXPECT_EQ(job.at("name"), "spelled");
  EXPECT_EQ(job.at("resources").at("nodes"), 2);
  EXPECT_EQ(job.at("resources").at("gpus").to_number<double>(), 2.0);
  EXPECT_EQ(job.at("resources").at("memory_bytes").as_int64(), int64_t{1} << 30);
  EXPECT_EQ(job.at("priority"), "low");
  EXPECT_EQ(job.at("time_limit_s").to_number<double>(), 300.0);
  EXPECT_EQ(Wait(id), 0);
  std::string deps =
      Submit({"-d", "afterok:" + id + ":" + id + ",afterany:" + id, "--hold", "--", "true"});
  json::value d = Show(deps);
  EXPECT_EQ(d.at("after").as_array().size(), 2u) << d;
  EXPECT_EQ(d.at("after_any").as_array().size(), 1u) << d;
}

TEST_F(Slurm, SrunSpreadsTasksOverTheNodesAndPyTorchAllReducesThroughThem) {
  if (!TorchThere()) GTEST_FAIL() << "python3-torch could not be installed or imported";
  std::string id = Submit({"multinode_srun.sh"});
  int code = Wait(id);
  std::string out = File("ddp-srun-" + id + ".out");
  ASSERT_EQ(code, 0) << out << Logs(id);
  EXPECT_TRUE(Has(out, "nodes: 127.0.0.1 127.0.0.2 ") || Has(out, "nodes: 127.0.0.2 127.0.0.1 "))
      << out;
  for (int rank = 0; rank < 4; ++rank) {
    std::string line = std::to_string(rank) + ": rank " + std::to_string(rank) + " of 4 on node " +
                       std::to_string(rank / 2) + " local " + std::to_string(rank % 2) + ": sum 10";
    EXPECT_TRUE(Has(out, line)) << line << "\n" << out;
  }
  // The job ended as the script did, on both nodes.
  EXPECT_EQ(Show(id).at("state"), "succeeded");
}

TEST_F(Slurm, AFailingTaskIsNamedAndItsCodeIsTheJobs) {
  std::string id = Submit({"failing_step.sh"});
  EXPECT_NE(Wait(id), 0);
  std::string out = File("failing-" + id + ".out");
  EXPECT_TRUE(Has(out, "task 0 on ")) << out;
  EXPECT_TRUE(Has(out, "task 1 on ")) << out;
  EXPECT_TRUE(Has(out, ": task 1: Exited with exit code 3")) << out;
  EXPECT_TRUE(Has(out, "srun exited 3")) << out;
  json::value job = Show(id);
  EXPECT_EQ(job.at("state"), "failed");
  EXPECT_EQ(job.at("exit_code"), 3);
}

// torchrun through srun on both nodes. Debian 12's torch 1.13 cannot run torchrun under Python
// 3.11 (its elastic agent fails reading its --tee default: "'NoneType' object has no attribute
// 'get'"); there the test still asserts what Baton does: srun started torchrun on each node
// with that node's rank, and reported each task's failure.
TEST_F(Slurm, TorchrunOnEachNodeMeetsAtTheNodeScontrolNames) {
  if (!TorchThere()) GTEST_FAIL() << "python3-torch could not be installed or imported";
  CliResult probe =
      RunShell("cd " + dir.path() + " && timeout 60 torchrun --standalone --nproc_per_node=1 " +
               work + "/ddp.py");
  bool torchrun_works = probe.exit_code == 0;
  std::string id = Submit({"multinode_torchrun.sh"});
  int code = Wait(id);
  std::string out = File("ddp-torchrun-" + id + ".out");
  EXPECT_TRUE(Has(out, "rendezvous at 127.0.0.")) << out;
  if (torchrun_works) {
    EXPECT_EQ(code, 0) << out;
    EXPECT_TRUE(Has(out, "rank 0 of 2: sum 3")) << out;
    EXPECT_TRUE(Has(out, "rank 1 of 2: sum 3")) << out;
  } else {
    ASSERT_TRUE(Has(probe.out, "'NoneType' object has no attribute 'get'")) << probe.out;
    EXPECT_EQ(CountOf(out, "'NoneType' object has no attribute 'get'"), 2u) << out;
    EXPECT_TRUE(Has(out, ": task 0: Exited with exit code 1")) << out;
    EXPECT_TRUE(Has(out, ": task 1: Exited with exit code 1")) << out;
  }
}

TEST_F(Slurm, ScontrolAndSrunOutsideAJobSayWhatTheyDo) {
  CliResult names =
      RunShell(std::string(BATON_SLURM) + " scontrol show hostnames 'gpu[01-03],login'");
  EXPECT_EQ(names.exit_code, 0) << names.out;
  EXPECT_EQ(names.out, "gpu01\ngpu02\ngpu03\nlogin\n");
  CliResult other = RunShell(std::string(BATON_SLURM) + " scontrol show job 12");
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_TRUE(Has(other.out, "knows `show hostnames [LIST]`")) << other.out;
  CliResult srun = RunShell("env -u SLURM_JOB_ID " + std::string(BATON_SLURM) + " srun true");
  EXPECT_EQ(srun.exit_code, 2);
  EXPECT_TRUE(Has(srun.out, "srun: error: not inside a job")) << srun.out;
}

// `baton alloc` as salloc: hold nodes, run a command here while they are held, srun in it (and
// `baton run --in ID` from anywhere) running on them, the nodes given back at its end. Only the
// job's owner reaches its allocation, and the step key it is reached with stays out of every
// view.
TEST_F(Slurm, ACommandInAnAllocationRunsSrunOnItsNodesAndGivesThemBack) {
  // What a salloc user types in the shell it gives: srun, and the job's variables.
  const std::string bin = std::string("BATON_BIN=") + BATON_BINARY;
  const std::string script =
      "echo nodes=$SLURM_NNODES id=$SLURM_JOB_ID list=$SLURM_JOB_NODELIST; "
      "d=$(dirname \"$(command -v srun)\"); stat -c 'srun dir %a %U' \"$d\"; echo \"at $d.\"; "
      "srun -l printenv SLURM_NODEID | sort; "
      "\"$BATON_BIN\" run --in $SLURM_JOB_ID -- -N 1 sh -c 'echo one node: $SLURM_PROCID'; "
      "exit 7";
  // (A rendezvous port of its own, hence a step port, as Submit gives.)
  CliResult r = RunCliIn(server, dir.path(),
                         {"alloc", "-N", "2", "--gpus-per-node", "1", "-t", "5", "--env",
                          "MASTER_PORT=" + std::to_string(MasterPort()), "--", "sh", "-c", script},
                         {bin});
  EXPECT_EQ(r.exit_code, 7) << r.out;  // the command's, as salloc's
  // The nodes in rank order: the first is the one that serves srun.
  const std::string list = Has(r.out, "granted job allocation 1 on 127.0.0.2,127.0.0.1")
                               ? "127.0.0.2,127.0.0.1"
                               : "127.0.0.[1-2]";
  EXPECT_TRUE(Has(r.out, "granted job allocation 1 on " + list + ": ")) << r.out;
  EXPECT_TRUE(Has(r.out, "nodes=2 id=1 list=" + list + "\n")) << r.out;
  EXPECT_TRUE(Has(r.out, "0: 0\n1: 1\n")) << r.out;
  EXPECT_TRUE(Has(r.out, "one node: 0")) << r.out;
  EXPECT_FALSE(Has(r.out, "one node: 1")) << r.out;
  EXPECT_TRUE(Has(r.out, "relinquishing job allocation 1")) << r.out;
  // Its srun was in a directory of the user's alone, gone after.
  EXPECT_TRUE(Has(r.out, "srun dir 700 root\n")) << r.out;
  const size_t at = r.out.find("at /");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string srun_dir = r.out.substr(at + 3, r.out.find(".\n", at) - at - 3);
  EXPECT_FALSE(std::filesystem::exists(srun_dir)) << srun_dir;
  // Given back: cancelled, as salloc's allocation ends at its shell's exit.
  EXPECT_TRUE(
      Within(std::chrono::seconds(30), [&] { return Show("1").at("state") == "cancelled"; }));
  json::value job = Show("1");
  EXPECT_EQ(job.at("alloc"), true) << job;
  EXPECT_EQ(json::serialize(job).find("step_key"), std::string::npos) << job;
  // What it ran is in its log, for whoever looks after.
  EXPECT_TRUE(Has(RunCli(server, {"logs", "1"}).out, "baton run --in: srun -l printenv"));
  // Its nodes are free again: a job of all four GPUs starts.
  CliResult all = RunCli(server, {"run", "-g", "4", "--", "true"});
  EXPECT_EQ(all.exit_code, 0) << all.out;
}

TEST_F(Slurm, RunInReachesOnlyAnAllocationOfItsOwner) {
  // An allocation held by a command that waits for a file, reached from elsewhere with
  // baton run --in.
  const std::string stop = dir.path() + "/stop";
  std::string held_out;
  std::thread holder([&] {
    held_out = RunCliIn(server, dir.path(),
                        {"alloc", "-g", "1", "--env", "MASTER_PORT=" + std::to_string(MasterPort()),
                         "--", "sh", "-c", "while [ ! -e " + stop + " ]; do sleep 0.2; done"},
                        {})
                   .out;
  });
  ASSERT_TRUE(Within(std::chrono::seconds(30), [&] {
    CliResult probe = RunCli(server, {"run", "--in", "1", "--", "true"});
    return probe.exit_code == 0;
  }));
  CliResult out = RunCli(server, {"run", "--in", "1", "--env", "GREETING=hello", "--", "sh", "-c",
                                  "echo $GREETING from $SLURM_JOB_ID; exit 3"});
  EXPECT_EQ(out.exit_code, 3) << out.out;
  EXPECT_EQ(out.out.rfind("hello from 1\n", 0), 0u) << out.out;
  EXPECT_TRUE(Has(out.out, ": task 0: Exited with exit code 3")) << out.out;  // srun's words
  // srun's options go after --; the allocation's size is its own.
  CliResult sized = RunCli(server, {"run", "--in", "1", "-g", "2", "--", "true"});
  EXPECT_EQ(sized.exit_code, 2) << sized.out;
  EXPECT_TRUE(Has(sized.out, "run --in: --gpus: the allocation has its size already")) << sized.out;
  // Another user's token does not reach it.
  CliResult token = RunCli(server, {"token", "create", "--user", "nobody", "--name", "other"});
  ASSERT_EQ(token.exit_code, 0) << token.out;
  std::string secret = FirstLine(token.out);
  CliResult other = RunCliWithToken(server, secret, {"run", "--in", "1", "--", "id"});
  EXPECT_EQ(other.exit_code, 1) << other.out;
  EXPECT_TRUE(Has(other.out, "job 1 belongs to root")) << other.out;
  // A job that is no allocation is said to be none.
  CliResult plain = RunCli(server, {"submit", "--", "sleep", "30"});
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  ASSERT_TRUE(Within(std::chrono::seconds(20), [&] { return Show("2").at("state") == "running"; }));
  CliResult none = RunCli(server, {"run", "--in", "2", "--", "true"});
  EXPECT_EQ(none.exit_code, 1) << none.out;
  EXPECT_TRUE(Has(none.out, "job 2 is not an allocation (`baton alloc` makes one")) << none.out;
  // Cancelled from elsewhere: the command here is told, and ends as it will (as salloc's).
  EXPECT_EQ(RunCli(server, {"cancel", "1"}).exit_code, 0);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  std::ofstream(stop) << "";
  holder.join();
  EXPECT_TRUE(Has(held_out, "job allocation 1 has ended (cancelled")) << held_out;
  CliResult ended = RunCli(server, {"run", "--in", "1", "--", "true"});
  EXPECT_EQ(ended.exit_code, 1) << ended.out;
  EXPECT_TRUE(Has(ended.out, "job 1 is cancelled")) << ended.out;
}

// An allocation whose host cannot listen (another program holds its node's step port) ends at
// once, and `baton alloc` says so with the host's own words rather than probing it for 15 s.
TEST_F(Slurm, AnAllocationWhoseHostCannotListenSaysWhy) {
  const int master = MasterPort();
  int holder = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_port = htons(static_cast<uint16_t>(master + 1));
  ASSERT_EQ(bind(holder, reinterpret_cast<sockaddr*>(&any), sizeof any), 0) << strerror(errno);
  ASSERT_EQ(listen(holder, 4), 0);
  CliResult r = RunCliIn(
      server, dir.path(),
      {"alloc", "-g", "1", "--env", "MASTER_PORT=" + std::to_string(master), "--", "true"}, {});
  close(holder);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_TRUE(Has(r.out, "job allocation 1 on 127.0.0.")) << r.out;
  EXPECT_TRUE(Has(r.out, " ended before it answered (failed")) << r.out;
  EXPECT_TRUE(
      Has(r.out, ": baton: this node cannot take the allocation's srun and run --in: port " +
                     std::to_string(master + 1) + ": Address already in use"))
      << r.out;
  EXPECT_FALSE(Has(r.out, "did not answer")) << r.out;
  EXPECT_FALSE(Has(r.out, "granted")) << r.out;
  EXPECT_EQ(Show("1").at("state"), "failed");
}

// The step server of a batch script's other nodes runs a task only for a caller that shows the
// job's key; one that does not gets nothing, and the server goes on serving.
TEST(SlurmStepServer, RunsTasksOnlyForTheJobsKey) {
  int port = FreePort();
  pid_t server = fork();
  if (server == 0) {
    setenv("BATON_STEP_KEY", "0123456789abcdef", 1);
    setenv("BATON_STEP_PORT", std::to_string(port).c_str(), 1);
    setenv("BATON_STEP_BIND", "127.0.0.1", 1);
    setenv("CUDA_VISIBLE_DEVICES", "1", 1);
    execl(BATON_SLURM, BATON_SLURM, "--step-server", nullptr);
    _exit(127);
  }
  auto run = [&](const std::string& key) {
    std::string error;
    int fd = slurm::ConnectTo("127.0.0.1", port, 20, &error);
    EXPECT_GE(fd, 0) << error;
    slurm::StepRequest req{.key = key,
                           .verb = "run",
                           .cwd = "/",
                           .argv = {"/bin/sh", "-c", "echo gpu $CUDA_VISIBLE_DEVICES; exit 4"},
                           .env = {"PATH=/usr/bin:/bin", "CUDA_VISIBLE_DEVICES=0"}};
    EXPECT_TRUE(slurm::SendRequest(fd, req));
    timeval patience{.tv_sec = 5, .tv_usec = 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
    std::string got;
    while (auto frame = slurm::ReadFrame(fd)) got += std::string(1, frame->first) + frame->second;
    close(fd);
    return got;
  };
  // A caller that stalls after its first bytes holds up no other (each connection is served
  // apart): the next answers at once, not after the stalled one's 10 s.
  std::string error;
  int stalled = slurm::ConnectTo("127.0.0.1", port, 20, &error);
  ASSERT_GE(stalled, 0) << error;
  ASSERT_TRUE(WriteAllTo(stalled, std::string_view(slurm::kMagic, sizeof slurm::kMagic - 1)));
  EXPECT_EQ(run("wrong-key-000000"), "") << "a wrong key runs nothing";
  // The node's own GPUs, not the caller's, and the task's exit code.
  EXPECT_EQ(run("0123456789abcdef"), "ogpu 1\nxE4");
  close(stalled);
  int fd = slurm::ConnectTo("127.0.0.1", port, 5, &error);
  slurm::StepRequest bye;
  bye.key = "0123456789abcdef";
  bye.verb = "exit";
  EXPECT_TRUE(slurm::SendRequest(fd, bye));
  close(fd);
  int status = 0;
  waitpid(server, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

// A batch script's end asks the other nodes' step servers to end; a batch host stopped with
// its job (a cancel, a preemption, a time limit: every node's part is stopped then) asks
// nothing, and ends at once instead of waiting for their ports.
TEST(SlurmStepServer, AScriptsEndEndsTheOtherNodesServersButAStoppedJobAsksNothing) {
  const std::string key = "0123456789abcdef";
  auto start = [&](const std::vector<std::string>& argv, int port) {
    pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      setenv("BATON_STEP_KEY", key.c_str(), 1);
      setenv("BATON_STEP_PORT", std::to_string(port).c_str(), 1);
      setenv("BATON_STEP_BIND", "127.0.0.1", 1);
      setenv("BATON_STEP_ADDRS", "127.0.0.1,127.0.0.1", 1);  // rank 0 (this host), rank 1
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(BATON_SLURM, args.data());
      _exit(127);
    }
    return pid;
  };
  auto serving = [&](int port) {
    std::string error;
    int fd = slurm::ConnectTo("127.0.0.1", port, 20, &error);
    if (fd >= 0) close(fd);
    return fd >= 0;
  };
  TempDir dir;
  // The script ends by itself: the step server of rank 1 is asked to end, and does.
  int port = FreePort();
  pid_t server = start({BATON_SLURM, "--step-server"}, port);
  ASSERT_TRUE(serving(port));
  pid_t host = start({BATON_SLURM, "--batch-host", "--", "true"}, port);
  int status = 0;
  ASSERT_EQ(waitpid(host, &status, 0), host);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  ASSERT_EQ(waitpid(server, &status, 0), server);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  // The job is stopped while its script runs: the host ends with the script's signal and
  // connects to no step server (its own stop comes from its node's agent). Rank 1 is a bare
  // listener here: a connection the host made before it ended waits in its queue.
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&at), sizeof at), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  socklen_t len = sizeof at;
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&at), &len), 0);
  port = ntohs(at.sin_port);
  const std::string began = dir.path() + "/began";
  host = start(
      {BATON_SLURM, "--batch-host", "--", "/bin/sh", "-c", "touch " + began + "; exec sleep 30"},
      port);
  ASSERT_TRUE(Within(std::chrono::seconds(20), [&] { return access(began.c_str(), F_OK) == 0; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // its handlers are set
  kill(-host, SIGTERM);
  ASSERT_EQ(waitpid(host, &status, 0), host);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
  int asked = accept(listener, nullptr, nullptr);
  EXPECT_LT(asked, 0) << "the stopped job's host connected to rank 1's step server";
  EXPECT_EQ(errno, EAGAIN);
  if (asked >= 0) close(asked);
  close(listener);
  // With the same listener, a script that ends by itself does connect (what the check above
  // would have seen).
  listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&at), sizeof at), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  host = start({BATON_SLURM, "--batch-host", "--", "true"}, port);
  asked = accept(listener, nullptr, nullptr);
  EXPECT_GE(asked, 0);
  if (asked >= 0) close(asked);  // the host waits for no answer past its connection closing
  ASSERT_EQ(waitpid(host, &status, 0), host);
  close(listener);
}

}  // namespace
}  // namespace baton::testing
