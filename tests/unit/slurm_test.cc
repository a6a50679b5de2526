// Slurm's side of Baton (issue 38): host lists as SLURM_JOB_NODELIST gives them, and batch
// scripts' #SBATCH lines as Baton's submit flags.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/sbatch.h"
#include "codec/job_patch.h"
#include "codec/json_codec.h"
#include "core/hostlist.h"

namespace baton {
namespace {

using Names = std::vector<std::string>;

TEST(HostList, CompressesRunsOfNumberedNamesInTheirOrder) {
  EXPECT_EQ(CompressHostList({"n1", "n2", "n3", "n5"}), "n[1-3,5]");
  EXPECT_EQ(CompressHostList({"gpu07", "gpu08", "gpu10"}), "gpu[07-08,10]");
  EXPECT_EQ(CompressHostList({"login", "gpu1"}), "login,gpu1");
  // Rank 0 stays first: a run is only ascending.
  EXPECT_EQ(CompressHostList({"n2", "n1"}), "n2,n1");
  EXPECT_EQ(CompressHostList({"127.0.0.1", "127.0.0.2"}), "127.0.0.[1-2]");
  EXPECT_EQ(CompressHostList({"a9", "a10"}), "a9,a10");  // widths differ: 9 is not 09
  EXPECT_EQ(CompressHostList({}), "");
}

TEST(HostList, ExpandsWhatSlurmWrites) {
  EXPECT_EQ(*ExpandHostList("gpu[01-03,07],login1"),
            (Names{"gpu01", "gpu02", "gpu03", "gpu07", "login1"}));
  EXPECT_EQ(*ExpandHostList("a[1-2]b"), (Names{"a1b", "a2b"}));
  EXPECT_EQ(*ExpandHostList("r[1-2]n[1-2]"), (Names{"r1n1", "r1n2", "r2n1", "r2n2"}));
  EXPECT_EQ(*ExpandHostList("n[08-10]"), (Names{"n08", "n09", "n10"}));
  EXPECT_EQ(*ExpandHostList("single"), (Names{"single"}));
}

TEST(HostList, ABadListIsAnErrorNamingWhy) {
  for (const auto& [list, why] :
       std::vector<std::pair<std::string, std::string>>{{"n[1-3", "without its ']'"},
                                                        {"n1-3]", "without its '['"},
                                                        {"n[3-1]", "runs backwards"},
                                                        {"n[a-b]", "is not a range"},
                                                        {"n1,,n2", "an empty name"},
                                                        {"n1,", "ends with a comma"},
                                                        {"n[1-999999999]", "more than"}}) {
    auto r = ExpandHostList(list);
    ASSERT_FALSE(r.has_value()) << list;
    EXPECT_NE(r.error().message().find(why), std::string::npos) << r.error().message();
  }
}

RC_GTEST_PROP(HostList, ExpandingTheCompressedFormGivesTheNamesBackInOrder, ()) {
  auto prefix = *rc::gen::element<std::string>("n", "gpu", "dgx-a", "node.");
  auto numbers = *rc::gen::container<std::vector<int>>(rc::gen::inRange(0, 40));
  bool pad = *rc::gen::arbitrary<bool>();
  Names names;
  for (int n : numbers) {
    std::string digits = std::to_string(n);
    if (pad && digits.size() < 3) digits.insert(0, 3 - digits.size(), '0');
    names.push_back(prefix + digits);
  }
  if (names.empty()) return;
  auto back = ExpandHostList(CompressHostList(names));
  RC_ASSERT(back.has_value());
  RC_ASSERT(*back == names);
}

namespace cli = baton::cli;

std::vector<std::string> Flags(const std::string& name, const std::string& value,
                               std::vector<std::string>* notes = nullptr) {
  std::vector<std::string> ignored;
  auto r = cli::TranslateSbatchOption(name, value, !value.empty(), notes ? notes : &ignored);
  EXPECT_TRUE(r.has_value()) << name << "=" << value << ": " << r.error().message();
  return r.has_value() ? *r : std::vector<std::string>{};
}

using Words = std::vector<std::string>;

TEST(Sbatch, OptionsBecomeBatonsFlags) {
  EXPECT_EQ(Flags("-J", "train"), (Words{"--name", "train"}));
  EXPECT_EQ(Flags("--gres", "gpu:4"), (Words{"--gpus-per-node", "4"}));
  EXPECT_EQ(Flags("--gres", "gpu:a100:2"), (Words{"--gpus-per-node", "a100:2"}));
  EXPECT_EQ(Flags("--gres", "gpu"), (Words{"--gpus-per-node", "1"}));
  EXPECT_EQ(Flags("-N", "2-4"), (Words{"--nodes", "2"}));
  EXPECT_EQ(Flags("-p", "gpu"), (Words{"--pool", "gpu"}));
  EXPECT_EQ(Flags("-A", "vision"), (Words{"--project", "vision"}));
  EXPECT_EQ(Flags("--qos", "high"), (Words{"--priority", "high"}));
  EXPECT_EQ(Flags("--mem", "32G"), (Words{"--memory", "32G"}));
  EXPECT_EQ(Flags("-d", "afterok:12:13,afterany:14,singleton"),
            (Words{"--after", "12,13", "--after-any", "14", "--singleton"}));
  EXPECT_EQ(Flags("--signal", "B:USR1@120"), (Words{"--signal", "B:USR1@120s"}));  // the shell's
  EXPECT_EQ(Flags("--signal", "USR1@120"), (Words{"--signal", "USR1@120s"}));      // the steps'
  EXPECT_EQ(Flags("--signal", "R:USR1@120"), (Words{"--signal", "USR1@120s"}));
  EXPECT_EQ(Flags("-o", "logs/%x_%j.out"), (Words{"--output", "logs/%x_%j.out"}));
  EXPECT_EQ(Flags("-w", "gpu[01-02]"), (Words{"--nodelist", "gpu[01-02]"}));
  EXPECT_EQ(Flags("--exclude", "gpu07"), (Words{"--exclude", "gpu07"}));
  EXPECT_EQ(Flags("--exclusive", ""), Words{"--exclusive"});
  EXPECT_EQ(Flags("--no-requeue", ""), Words{"--no-requeue"});
  EXPECT_EQ(Flags("--requeue", ""), Words{"--requeue"});
  std::vector<std::string> exclusive_notes;
  EXPECT_EQ(Flags("--exclusive", "user", &exclusive_notes), Words{"--exclusive"});
  ASSERT_EQ(exclusive_notes.size(), 1u);
  EXPECT_EQ(exclusive_notes[0], "--exclusive=user: taken as --exclusive");
  std::vector<std::string> notes;
  EXPECT_EQ(Flags("--mail-type", "END", &notes), Words{});
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("no mail"), std::string::npos) << notes[0];
}

TEST(Sbatch, WhatBatonDoesNotDoIsRefusedSayingWhy) {
  std::vector<std::string> notes;
  for (const auto& [name, value, why] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"--gres", "nvme:1", "Baton schedules GPUs"},
           {"-d", "afterok:1?afterany:2", "all hold"},
           {"-d", "after:1", "afterok:ID"},
           // One task, not its whole array (which would wait for every task).
           {"-d", "afterok:12_7", "\"12_7\" is one task of array 12: name the task's own job id"},
           {"--constraint", "a100", "--gres=gpu:TYPE:N"},
           {"--burst-buffer", "x", "an sbatch option Baton does not know"},
           {"--job-name", "", "needs a value"}}) {
    auto r = cli::TranslateSbatchOption(name, value, !value.empty(), &notes);
    ASSERT_FALSE(r.has_value()) << name;
    EXPECT_NE(r.error().message().find(why), std::string::npos) << r.error().message();
  }
}

TEST(Sbatch, DirectiveLinesSplitAsAShellDoes) {
  EXPECT_EQ(*cli::SplitDirective(" --job-name=\"my job\" -N 2 # two nodes"),
            (Words{"--job-name=my job", "-N", "2"}));
  EXPECT_EQ(*cli::SplitDirective(" --output='a b.out'"), (Words{"--output=a b.out"}));
  EXPECT_FALSE(cli::SplitDirective(" --job-name=\"open").has_value());
}

class ScriptFile : public ::testing::Test {
 protected:
  // A file of this process's own: ctest runs these tests side by side, each in a process.
  // Removed after the test (the temporary directory is shared, and was filling up).
  std::string Write(const std::string& text) {
    path_ = ::testing::TempDir() + "/script-" + std::to_string(getpid()) + "-" +
            std::to_string(++n_) + ".sh";
    std::ofstream(path_) << text;
    written_.push_back(path_);
    return path_;
  }
  void TearDown() override {
    for (const std::string& p : written_) std::remove(p.c_str());
  }
  std::string path_;
  std::vector<std::string> written_;
  int n_ = 0;
};

TEST_F(ScriptFile, ReadsDirectivesUntilTheFirstCommandAndRunsTheTextAsSubmitted) {
  std::string path = Write(
      "#!/bin/bash -l\n"
      "# a comment\n"
      "#SBATCH -J train --gres=gpu:2\n"
      "\n"
      "#BATON --preemptible\n"
      "#SBATCH --time 1:00:00\n"
      "echo hi\n"
      "#SBATCH --nodes=4\n");
  auto s = cli::ReadBatchScript(path, {"x", "y"});
  ASSERT_TRUE(s.has_value()) << s.error().message();
  EXPECT_TRUE(s->directives);
  EXPECT_EQ(s->flags, (Words{"--name", "train", "--gpus-per-node", "2", "--preemptible", "--time",
                             "1:00:00"}));
  ASSERT_EQ(s->command.size(), 7u);
  EXPECT_EQ(s->command[0], "/bin/bash");
  EXPECT_EQ(s->command[1], "-l");
  EXPECT_EQ(s->command[2], "-c");
  EXPECT_EQ(s->command[3].rfind("#!/bin/bash -l\n", 0), 0u);
  EXPECT_EQ(s->command[4], std::filesystem::path(path).lexically_normal().string());  // $0
  EXPECT_EQ(s->command[5], "x");
}

TEST_F(ScriptFile, AnUnknownDirectiveIsNamedWithItsLine) {
  std::string path = Write("#!/bin/sh\n#SBATCH -J a\n#SBATCH --frobnicate=3\necho\n");
  auto s = cli::ReadBatchScript(path, {});
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().message(),
            path + ":3: #SBATCH --frobnicate: an sbatch option Baton does not know");
}

// With directives, a script Baton cannot run as a batch script is refused, saying why; without
// them it is no batch script (a perl or awk program, a large generated script): it runs as any
// command does, and only --batch-script gets the refusal.
TEST_F(ScriptFile, WhatIsNoScriptOrTooBigIsRefused) {
  EXPECT_FALSE(cli::ReadBatchScript(Write("echo no shebang\n"), {}).has_value());
  auto awk = cli::ReadBatchScript(Write("#!/usr/bin/awk -f\n#SBATCH -J a\n{print}\n"), {});
  ASSERT_FALSE(awk.has_value());
  EXPECT_NE(awk.error().message().find("sh, bash, dash, zsh, ksh or python"), std::string::npos);
  auto perl = cli::ReadBatchScript(Write("#!/usr/bin/perl\n# a comment\nprint 1;\n"), {});
  ASSERT_TRUE(perl.has_value()) << perl.error().message();
  EXPECT_FALSE(perl->directives);
  EXPECT_NE(perl->refused.find("sh, bash, dash, zsh, ksh or python"), std::string::npos);
  const std::string filler = std::string(300 * 1024, '#') + "\n";
  auto big = cli::ReadBatchScript(Write("#!/bin/sh\n#SBATCH -J a\n" + filler), {});
  ASSERT_FALSE(big.has_value());
  EXPECT_NE(big.error().message().find("at most 252 KiB (this one is 300 KiB)"), std::string::npos)
      << big.error().message();
  auto plain = cli::ReadBatchScript(Write("#!/bin/sh\necho\n" + filler), {});
  ASSERT_TRUE(plain.has_value()) << plain.error().message();
  EXPECT_NE(plain->refused.find("at most 252 KiB"), std::string::npos);
  auto sh = cli::ReadBatchScript(Write("#!/bin/sh\necho\n"), {});
  ASSERT_TRUE(sh.has_value());
  EXPECT_TRUE(sh->refused.empty());
  EXPECT_FALSE(cli::IsScript(::testing::TempDir()));
}

TEST(BatchSpec, ItsFieldsGoThroughTheApiAndAreChecked) {
  auto spec = codec::DecodeJobSpec(
      R"({"command": ["/bin/bash", "-c", "srun hostname"], "batch": true, "slurm_env": true,
          "output_file": "logs/%x-%j.out", "error_file": "err-%j", "tasks_per_node": 4,
          "alloc": true})");
  ASSERT_TRUE(spec.has_value()) << spec.error().message();
  EXPECT_TRUE(spec->batch);
  EXPECT_TRUE(spec->slurm_env);
  EXPECT_EQ(spec->output_file, "logs/%x-%j.out");
  EXPECT_EQ(spec->error_file, "err-%j");
  EXPECT_EQ(spec->tasks_per_node, 4);
  EXPECT_TRUE(spec->alloc);
  auto again = codec::DecodeJobSpec(codec::EncodeJobSpec(*spec));
  ASSERT_TRUE(again.has_value()) << again.error().message();
  EXPECT_EQ(*again, *spec);
  // As the store keeps it (a restart reads it back).
  Job job;
  job.id = JobId{7};
  job.user = "alice";
  job.spec = *spec;
  job.step_key = "00112233445566778899aabbccddeeff";
  job.step_port = 29601;
  auto kept = codec::DecodeJob(codec::EncodeJob(job, codec::JobForm::kRecord));
  ASSERT_TRUE(kept.has_value()) << kept.error().message();
  EXPECT_EQ(kept->spec, job.spec);
  EXPECT_EQ(kept->step_key, job.step_key);
  for (const auto& [body, why] : std::vector<std::pair<std::string, std::string>>{
           {R"({"command": ["x"], "output_file": "o"})", "output_file: is a batch script's"},
           {R"({"command": ["x"], "batch": true, "process_per_gpu": true})", "srun"},
           {R"({"command": ["x"], "batch": true, "interactive": "tty"})", "interactive"},
           {R"({"command": ["x"], "batch": true, "image": "a"})", "container image"},
           {R"({"command": ["x"], "tasks_per_node": 2000})", "tasks_per_node"},
           {R"({"command": ["x"], "alloc": true})", "alloc: an allocation is a batch job"},
           {R"({"command": ["x"], "alloc": true, "batch": true, "slurm_env": true,
                "array": "0-3"})",
            "alloc: an allocation is one job"}}) {
    auto bad = codec::DecodeJobSpec(body);
    ASSERT_FALSE(bad.has_value()) << body;
    EXPECT_NE(bad.error().message().find(why), std::string::npos) << bad.error().message();
  }
}

// PATCH /v1/jobs/{id}'s body: the fields that change, read as a spec's; nothing else.
TEST(JobPatch, NamesTheFieldsThatChangeAndRefusesTheRest) {
  auto p = codec::DecodeJobPatch(
      R"({"time_limit": "4:00:00", "priority": "high", "begin": null, "after": [3]})");
  ASSERT_TRUE(p.has_value()) << p.error().message();
  EXPECT_EQ(p->set, (std::set<std::string>{"time_limit", "priority", "begin", "after"}));
  EXPECT_EQ(p->fields.time_limit, std::chrono::hours(4));
  EXPECT_EQ(p->fields.priority, Priority::kHigh);
  EXPECT_FALSE(p->fields.begin.has_value());
  for (const auto& [body, why] : std::vector<std::pair<std::string, std::string>>{
           {R"({"gpus": 2})", "gpus: not a field that changes"},
           {R"({"command": ["x"]})", "command: not a field that changes"},
           {R"({})", "name a field to change"},
           {R"({"name": null})", "name: must not be null"},
           {R"({"priority": "urgent"})", "priority"},
           {R"([1])", "body"}}) {
    auto bad = codec::DecodeJobPatch(body);
    ASSERT_FALSE(bad.has_value()) << body;
    EXPECT_NE(bad.error().message().find(why), std::string::npos) << bad.error().message();
  }
}

}  // namespace
}  // namespace baton
