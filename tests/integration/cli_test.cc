// Issue 16, "What a Slurm user expects on day one": the command line as users type it, through
// the real binary: its words and messages, acting on many jobs, resubmitting, history, and
// the views that show everything.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include "harness.h"

namespace baton::testing {
namespace {

// Every line of `out` starts with "baton:".
bool EveryLineSaysBaton(const std::string& out) {
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("baton:")) return false;
  }
  return !out.empty();
}

TEST(CliParser, AnUnknownCommandIsNamedWithTheClosestOne) {
  TempDir dir;
  BatonProcess baton(dir.path());
  CliResult typo = RunCli(baton, {"sumbit", "--", "echo", "hi"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_EQ(typo.out, "baton: unknown command 'sumbit'; did you mean 'submit'?\n");
  CliResult far = RunCli(baton, {"frobnicate"});
  EXPECT_EQ(far.exit_code, 2);
  EXPECT_EQ(far.out.rfind("baton: unknown command 'frobnicate'", 0), 0u) << far.out;
  CliResult help_typo = RunCli(baton, {"help", "canel"});
  EXPECT_EQ(help_typo.exit_code, 2);
  EXPECT_NE(help_typo.out.find("did you mean 'cancel'?"), std::string::npos) << help_typo.out;
}

// An option a command does not have: Slurm's spelling is translated, a typo gets the
// closest option; nothing is sent (exit 2).
TEST(CliParser, AnUnknownOptionGetsSlurmsTranslationOrTheClosestOne) {
  TempDir dir;
  BatonProcess baton(dir.path());
  for (const auto& [args, said] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"submit", "--gpu", "2", "--", "true"},
            "baton: unknown option '--gpu' for `baton submit`; did you mean '--gpus'?"},
           // Options of submit's own and the connection's, not built unless typed, are named.
           {{"submit", "--jsn", "-g", "1", "--", "true"},
            "baton: unknown option '--jsn' for `baton submit`; did you mean '--json'?"},
           {{"submit", "--servr", "x", "--", "true"},
            "baton: unknown option '--servr' for `baton submit`; did you mean '--server'?"},
           {{"submit", "-a", "0-3", "--", "true"},
            "baton: unknown option '-a' for `baton submit`: Slurm's -a is --array in Baton"},
           {{"run", "--export", "A=1", "--", "true"},
            "baton: unknown option '--export' for `baton run`: Slurm's --export is --env "
            "NAME=VALUE in Baton"},
           {{"jobs", "--usr", "alice"},
            "baton: unknown option '--usr' for `baton jobs`; did you mean '--user'?"},
       }) {
    CliResult r = RunCli(baton, args);
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_EQ(r.out, said + "\n");
  }
  EXPECT_EQ(RunCli(baton, {"jobs"}).out.find("true"), std::string::npos) << "nothing was sent";
}

TEST(CliParser, ServerThreadsAreBoundedAsUpsAre) {
  TempDir dir;
  BatonProcess baton(dir.path());
  for (const char* n : {"0", "65", "many"}) {
    CliResult r = RunCli(baton, {"server", "--data", dir.path() + "/other", "--http-threads", n});
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find("--http-threads"), std::string::npos) << r.out;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/other")) << "nothing was started";
}

TEST(CliParser, HelpAndVersion) {
  TempDir dir;
  BatonProcess baton(dir.path());
  CliResult help = RunCli(baton, {"help"});
  EXPECT_EQ(help.exit_code, 0) << help.out;
  EXPECT_NE(help.out.find("Usage: baton [OPTIONS] SUBCOMMAND"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("cancel"), std::string::npos) << help.out;
  CliResult submit = RunCli(baton, {"help", "submit"});
  EXPECT_EQ(submit.exit_code, 0) << submit.out;
  EXPECT_NE(submit.out.find("Usage: baton submit [OPTIONS] -- COMMAND [ARGS...]"),
            std::string::npos)
      << submit.out;
  EXPECT_NE(submit.out.find("--gpus"), std::string::npos) << submit.out;
  CliResult dash = RunCli(baton, {"submit", "--help"});
  EXPECT_EQ(dash.exit_code, 0);
  EXPECT_NE(dash.out.find("Usage: baton submit [OPTIONS] -- COMMAND [ARGS...]"), std::string::npos)
      << dash.out;
  // The spec flags in sections, each flag once, the help flag only in the command's own.
  EXPECT_EQ(dash.out, submit.out);
  size_t resources = dash.out.find("\nResources:\n  -g,-G,--gpus TEXT");
  size_t scripts = dash.out.find("\nBatch scripts (sbatch):\n  -o,--output TEXT");
  EXPECT_NE(resources, std::string::npos) << dash.out;
  EXPECT_LT(dash.out.find("\nOptions:\n  -h,--help"), resources) << dash.out;
  EXPECT_LT(resources, scripts) << dash.out;
  EXPECT_EQ(dash.out.find("--help"), dash.out.rfind("--help")) << dash.out;
  EXPECT_EQ(dash.out.find("--gpu-memory"), dash.out.rfind("--gpu-memory")) << dash.out;
  CliResult nested = RunCli(baton, {"help", "token", "create"});
  EXPECT_EQ(nested.exit_code, 0) << nested.out;
  EXPECT_NE(nested.out.find("Usage: baton token create"), std::string::npos) << nested.out;
  CliResult version = RunCli(baton, {"version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out.rfind("baton ", 0), 0u) << version.out;
  CliResult flag = RunCli(baton, {"--version"});
  EXPECT_EQ(flag.exit_code, 0);
  EXPECT_EQ(flag.out, version.out);
}

// Every command pays for the libraries the binary loads at start: libpq (and the ~20 it
// brings) is loaded only when a PostgreSQL store connects (store/libpq.h), hwloc (and libudev)
// only when an agent reads its machine's topology. `baton` (the client) links none of them at
// all (a Release build links it statically: it loads nothing); batond, the whole program,
// loads them when used.
TEST(CliParser, TheBinariesDoNotLoadPostgresLibrariesAtStart) {
  const std::string batond = std::filesystem::path(BATON_BINARY).parent_path() / "batond";
  for (const std::string& binary : {std::string(BATON_BINARY), batond}) {
    CliResult ldd = RunShell("ldd " + binary + " 2>&1");
    if (binary == BATON_BINARY && ldd.out.find("not a dynamic executable") != std::string::npos)
      continue;
    ASSERT_EQ(ldd.exit_code, 0) << binary << ": " << ldd.out;
    EXPECT_NE(ldd.out.find("libc.so"), std::string::npos) << ldd.out;
    for (const char* lib : {"libpq.so", "libkrb5", "libldap", "libgnutls", "libhwloc", "libudev"}) {
      EXPECT_EQ(ldd.out.find(lib), std::string::npos) << lib << " in " << binary << ":\n"
                                                      << ldd.out;
    }
  }
}

// `baton` holds the client commands alone and hands up, server, agent, sim and the help that
// lists every command to batond, installed beside it: the same process (pid), the same words.
TEST(CliParser, TheClientHandsServerCommandsToBatondBesideIt) {
  TempDir dir;
  BatonProcess baton(dir.path() + "/server");
  // `baton up` runs as batond in the process the harness started, with the words it was given.
  // ("[ ]up": a pattern that does not match the shell running it.)
  CliResult ps =
      RunShell("ps -o comm=,args= -p \"$(pgrep -f -- '[ ]up --data " + baton.data_dir() + " ')\"");
  EXPECT_EQ(ps.exit_code, 0) << ps.out;
  EXPECT_EQ(ps.out.rfind("batond ", 0), 0u) << ps.out;
  EXPECT_NE(ps.out.find(std::string(BATON_BINARY) + " up --data "), std::string::npos) << ps.out;
  CliResult help = RunCli(baton, {"--help"});
  EXPECT_EQ(help.exit_code, 0) << help.out;
  CliResult bare = RunCli(baton, {});  // `baton` alone
  EXPECT_EQ(bare.exit_code, 2) << bare.out;
  EXPECT_EQ(bare.out, "baton: A subcommand is required (see `baton help`)\n");
  for (const char* command : {"submit", "up", "server", "agent", "sim"}) {
    EXPECT_NE(help.out.find(std::string("  ") + command + " "), std::string::npos)
        << command << " missing from\n"
        << help.out;
  }

  // A client alone, without batond beside it: client commands work, the others say what is
  // missing instead of failing obscurely.
  const std::string alone = dir.path() + "/alone";
  std::filesystem::create_directories(alone);
  std::filesystem::copy_file(BATON_BINARY, alone + "/baton");
  const std::string env = "env BATON_HOME=" + baton.data_dir() + " PATH=/usr/bin:/bin ";
  CliResult jobs = RunShell(env + alone + "/baton submit --hold -g 1 -- true");
  EXPECT_EQ(jobs.exit_code, 0) << jobs.out;
  EXPECT_EQ(jobs.out, "1\n");
  CliResult version = RunShell(env + alone + "/baton --version");
  EXPECT_EQ(version.exit_code, 0) << version.out;
  EXPECT_EQ(version.out.rfind("baton ", 0), 0u) << version.out;
  CliResult up = RunShell(env + alone + "/baton up --data " + dir.path() + "/never");
  EXPECT_EQ(up.exit_code, 1) << up.out;
  EXPECT_TRUE(EveryLineSaysBaton(up.out)) << up.out;
  EXPECT_NE(up.out.find("`baton up` needs " + alone + "/batond"), std::string::npos) << up.out;
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/never"));
  CliResult about_up = RunShell(env + alone + "/baton help up");
  EXPECT_EQ(about_up.exit_code, 1) << about_up.out;
  EXPECT_NE(about_up.out.find("`baton up` needs " + alone + "/batond"), std::string::npos)
      << about_up.out;
  // The help and a typo's suggestion, as on a login node with baton alone: from the client's
  // own commands, not "needs batond".
  CliResult about = RunShell(env + alone + "/baton help submit");
  EXPECT_EQ(about.exit_code, 0) << about.out;
  EXPECT_NE(about.out.find("--gpus"), std::string::npos) << about.out;
  EXPECT_EQ(about.out.find("batond"), std::string::npos) << about.out;
  EXPECT_EQ(about.out, RunShell(env + alone + "/baton submit --help").out);
  CliResult alone_bare = RunShell(env + alone + "/baton");
  EXPECT_EQ(alone_bare.exit_code, 2) << alone_bare.out;
  EXPECT_EQ(alone_bare.out, bare.out);
  for (const char* words : {"help", "--help"}) {
    CliResult listing = RunShell(env + alone + "/baton " + words);
    EXPECT_EQ(listing.exit_code, 0) << words << ": " << listing.out;
    EXPECT_NE(listing.out.find("  submit "), std::string::npos) << words << ": " << listing.out;
    EXPECT_EQ(listing.out.find("batond"), std::string::npos) << words << ": " << listing.out;
  }
  CliResult typo = RunShell(env + alone + "/baton sumbit -g 1 -- true");
  EXPECT_NE(typo.exit_code, 0) << typo.out;
  EXPECT_TRUE(EveryLineSaysBaton(typo.out)) << typo.out;
  EXPECT_NE(typo.out.find("did you mean 'submit'"), std::string::npos) << typo.out;
  EXPECT_EQ(typo.out.find("batond"), std::string::npos) << typo.out;
}

TEST(CliParser, ConnectionFlagsGoBeforeTheCommandToo) {
  TempDir dir;
  BatonProcess baton(dir.path());
  CliResult bad = RunCli(baton, {"--token", "not-a-token", "jobs"});
  EXPECT_EQ(bad.exit_code, 1) << bad.out;  // the flag was used, not the local admin.token
  EXPECT_TRUE(EveryLineSaysBaton(bad.out)) << bad.out;
  CliResult nowhere = RunCli(baton, {"--server=http://127.0.0.1:1", "jobs"});
  EXPECT_EQ(nowhere.exit_code, 1) << nowhere.out;
  CliResult good = RunCli(baton, {"--server", baton.url(), "--token", baton.token(), "jobs"});
  EXPECT_EQ(good.exit_code, 0) << good.out;
  CliResult sub =
      RunCli(baton, {"--server", baton.url(), "--token", baton.token(), "submit", "--", "true"});
  ASSERT_EQ(sub.exit_code, 0) << sub.out;
  EXPECT_GT(std::stoll(sub.out), 0) << sub.out;
  CliResult after = RunCli(baton, {"jobs", "--token", "not-a-token"});
  EXPECT_EQ(after.exit_code, 1) << after.out;
}

TEST(CliParser, EveryErrorLineStartsWithBaton) {
  TempDir dir;
  BatonProcess baton(dir.path());
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"show"},
           {"jobs", "--bogus"},
           {"show", "notanumber"},
           {"token"},
           {"submit", "-t", "soon", "--", "true"},
           {"show", "999999"},
       }) {
    CliResult r = RunCli(baton, args);
    EXPECT_NE(r.exit_code, 0) << args[0];
    EXPECT_TRUE(EveryLineSaysBaton(r.out)) << args[0] << ": " << r.out;
  }
  CliResult missing = RunCli(baton, {"show"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.out.find("baton help show"), std::string::npos) << missing.out;
}

TEST(CliParser, JobFileMistakesSayWhatToFix) {
  TempDir dir;
  BatonProcess baton(dir.path());
  std::string file = dir.path() + "/job.yaml";
  std::ofstream(file) << "name: a\ncommand: [true]\nresources:\n\tgpus: 1\n";
  CliResult tab = RunCli(baton, {"submit", "-f", file});
  EXPECT_EQ(tab.exit_code, 2);
  EXPECT_NE(tab.out.find("job.yaml: line 4: tabs are not allowed for indentation"),
            std::string::npos)
      << tab.out;
  std::ofstream(file) << "name: a\ncommand: [true]\ngpus: 1\n";
  CliResult field = RunCli(baton, {"submit", "-f", file});
  EXPECT_EQ(field.exit_code, 2);
  EXPECT_NE(field.out.find("gpus: unknown field (valid: name, command, resources"),
            std::string::npos)
      << field.out;
  std::ofstream(file) << "command: [true]\nresources: {gpu: 1}\n";
  CliResult inner = RunCli(baton, {"submit", "-f", file});
  EXPECT_NE(inner.out.find("resources.gpu: unknown field (valid: gpus,"), std::string::npos)
      << inner.out;
}

TEST(CliParser, DecimalDurationsAndNegativeGpus) {
  TempDir dir;
  BatonProcess baton(dir.path());
  CliResult sub = RunCli(baton, {"submit", "--hold", "-t", "1.5h", "--", "true"});
  ASSERT_EQ(sub.exit_code, 0) << sub.out;
  CliResult show = RunCli(baton, {"show", FirstLine(sub.out)});
  EXPECT_NE(show.out.find("1h30m"), std::string::npos) << show.out;
  // As Slurm users type --time: a number alone is minutes, and the clock forms.
  for (const auto& [typed, shown] : std::vector<std::pair<std::string, std::string>>{
           {"30", "30m"}, {"2:30:00", "2h30m"}, {"1-00:00:00", "1d"}, {"45:30", "45m30s"}}) {
    CliResult t = RunCli(baton, {"submit", "--hold", "-t", typed, "--", "true"});
    ASSERT_EQ(t.exit_code, 0) << t.out;
    std::string shown_job = RunCli(baton, {"show", FirstLine(t.out)}).out;
    size_t at = shown_job.find("time limit");
    ASSERT_NE(at, std::string::npos) << shown_job;
    std::string limit_line = shown_job.substr(at, shown_job.find('\n', at) - at);
    EXPECT_TRUE(limit_line.ends_with(" " + shown)) << typed << ": " << limit_line;
  }
  CliResult neg = RunCli(baton, {"submit", "-g", "-1", "--", "true"});
  EXPECT_EQ(neg.exit_code, 2) << neg.out;
  EXPECT_NE(neg.out.find("GPUs must be positive"), std::string::npos) << neg.out;
  EXPECT_TRUE(EveryLineSaysBaton(neg.out)) << neg.out;
}

// A memory size without a unit is MiB, as Slurm's --mem reads it (it was bytes: `--memory
// 4000` asked for 4000 bytes without a word).
TEST(CliParser, AMemorySizeWithoutAUnitIsMebibytesAsInSlurm) {
  TempDir dir;
  BatonProcess baton(dir.path());
  for (const auto& [flags, field, bytes] :
       std::vector<std::tuple<std::vector<std::string>, std::string, int64_t>>{
           {{"--memory", "4000"}, "memory_bytes", int64_t{4000} << 20},
           {{"--memory", "1.5"}, "memory_bytes", int64_t{3} << 19},
           {{"--memory", "4G"}, "memory_bytes", int64_t{4} << 30},
           {{"-g", "1", "--gpu-memory", "81920"}, "gpu_memory_bytes", int64_t{80} << 30}}) {
    std::vector<std::string> args = {"submit", "--hold"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "true"});
    CliResult sub = RunCli(baton, args);
    ASSERT_EQ(sub.exit_code, 0) << sub.out;
    std::string job = RunCli(baton, {"show", FirstLine(sub.out), "--json"}).out;
    EXPECT_NE(job.find("\"" + field + "\":" + std::to_string(bytes)), std::string::npos)
        << flags.back() << ": " << job;
  }
  CliResult help = RunCli(baton, {"submit", "--help"});
  EXPECT_NE(help.out.find("a number alone is MiB"), std::string::npos) << help.out;
}

// `baton submit ARGS... --hold -- sleep 60`: the new job's id, as text.
std::string SubmitHeld(const BatonProcess& baton, std::vector<std::string> args) {
  args.insert(args.begin(), "submit");
  for (const char* w : {"--hold", "--", "sleep", "60"}) args.emplace_back(w);
  CliResult r = RunCli(baton, args);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  return FirstLine(r.out);
}

TEST(CliActions, CancelManyByIdsRangesAndSelectors) {
  TempDir dir;
  BatonProcess baton(dir.path());
  auto c = baton.Client();
  std::vector<std::string> ids;
  for (const char* name : {"a", "a", "a", "b", "b", "c", "c", "d"}) {
    ids.push_back(
        SubmitHeld(baton, {"--name", name, "--project", name[0] == 'd' ? "vision" : "nlp"}));
  }
  auto state = [&](const std::string& id) {
    return JsonString(GetJob(*c, std::stoll(id)), "state");
  };
  CliResult some = RunCli(baton, {"cancel", ids[0], ids[1] + "-" + ids[2]});
  EXPECT_EQ(some.exit_code, 0) << some.out;
  EXPECT_EQ(some.out, "job " + ids[0] + ": cancelled\njob " + ids[1] + ": cancelled\njob " +
                          ids[2] + ": cancelled\n");
  CliResult by_name = RunCli(baton, {"release", "--name", "b"});
  EXPECT_EQ(by_name.exit_code, 0) << by_name.out;
  EXPECT_NE(by_name.out.find("job " + ids[3] + ": released"), std::string::npos) << by_name.out;
  EXPECT_NE(state(ids[3]), "held");
  EXPECT_EQ(state(ids[5]), "held");
  CliResult held_again = RunCli(baton, {"hold", "--name", "b", "--state", "pending,running"});
  EXPECT_EQ(held_again.out.find(ids[5]), std::string::npos) << held_again.out;  // not a b
  CliResult by_project = RunCli(baton, {"cancel", "--project", "vision"});
  EXPECT_EQ(by_project.exit_code, 0) << by_project.out;
  EXPECT_EQ(by_project.out, "job " + ids[7] + ": cancelled\n");
  CliResult held_c = RunCli(baton, {"cancel", "--state", "held", "--name", "c"});
  EXPECT_EQ(held_c.exit_code, 0) << held_c.out;
  EXPECT_EQ(state(ids[5]), "cancelled");
  EXPECT_EQ(state(ids[6]), "cancelled");
  // Someone else's --all is theirs: none of root's jobs.
  CliResult made = RunCli(baton, {"token", "create", "--user", "nobody", "--json"});
  ASSERT_EQ(made.exit_code, 0) << made.out;
  std::string bob = JsonString(made.out, "token");
  ASSERT_FALSE(bob.empty()) << made.out;
  CliResult theirs = RunCli(baton, {"cancel", "--all", "--token", bob});
  EXPECT_EQ(theirs.exit_code, 0) << theirs.out;
  EXPECT_EQ(theirs.out, "no matching jobs\n");
  CliResult not_theirs = RunCli(baton, {"cancel", "--user", "root", "--token", bob});
  EXPECT_EQ(not_theirs.exit_code, 1) << not_theirs.out;  // the server says no, for each
  EXPECT_NE(not_theirs.out.find("baton: could not cancel"), std::string::npos) << not_theirs.out;
  CliResult all = RunCli(baton, {"cancel", "--all"});
  EXPECT_EQ(all.exit_code, 0) << all.out;
  EXPECT_NE(all.out.find("job " + ids[4] + ": cancelled"), std::string::npos) << all.out;
  EXPECT_EQ(JsonString(WaitForJob(*c, std::stoll(ids[3])), "state"), "cancelled");
  // Failures are named, and the exit status says so.
  CliResult again = RunCli(baton, {"cancel", ids[0], "999999"});
  EXPECT_EQ(again.exit_code, 1) << again.out;
  EXPECT_NE(again.out.find("baton: job 999999 does not exist"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("baton: could not cancel 1 of 2 jobs: 999999"), std::string::npos)
      << again.out;
  CliResult nothing = RunCli(baton, {"cancel"});
  EXPECT_EQ(nothing.exit_code, 2) << nothing.out;
  CliResult bad = RunCli(baton, {"cancel", "20-10"});
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
}

TEST(CliResubmit, ResubmitTakesTheFlagsOfSubmit) {
  TempDir dir;
  BatonProcess baton(dir.path());
  auto c = baton.Client();
  CliResult sub =
      RunCli(baton, {"submit", "--name", "r", "-g", "1", "-t", "1h", "--env", "A=1", "--env", "B=2",
                     "--project", "nlp", "--hold", "--", "sleep", "60"});
  ASSERT_EQ(sub.exit_code, 0) << sub.out;
  std::string id = FirstLine(sub.out);
  CliResult again =
      RunCli(baton, {"resubmit", id, "-g", "2", "-t", "30m", "--env", "A=5", "--hold"});
  ASSERT_EQ(again.exit_code, 0) << again.out;
  ASSERT_NE(FirstLine(again.out), id);
  std::string job = GetJob(*c, std::stoll(again.out));
  EXPECT_EQ(JsonString(job, "name"), "r") << job;
  EXPECT_EQ(JsonString(job, "project"), "nlp") << job;
  EXPECT_EQ(JsonString(job, "state"), "held") << job;
  EXPECT_NE(job.find("\"gpus\":2"), std::string::npos) << job;
  EXPECT_NE(job.find("\"A\":\"5\""), std::string::npos) << job;
  EXPECT_NE(job.find("\"B\":\"2\""), std::string::npos) << job;
  EXPECT_NE(job.find("\"command\":[\"sleep\",\"60\"]"), std::string::npos) << job;
  CliResult show = RunCli(baton, {"show", FirstLine(again.out)});
  EXPECT_NE(show.out.find("30m"), std::string::npos) << show.out;
  // Not held unless asked: the original's --hold is how it was submitted, not what it is.
  CliResult plain = RunCli(baton, {"resubmit", id});
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  EXPECT_NE(JsonString(GetJob(*c, std::stoll(plain.out)), "state"), "held");
  RunCli(baton, {"cancel", FirstLine(plain.out)});
  CliResult help = RunCli(baton, {"help", "resubmit"});
  EXPECT_NE(help.out.find("Usage: baton resubmit ID [OPTIONS]"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--gpus"), std::string::npos) << help.out;
  CliResult missing = RunCli(baton, {"resubmit", "999999"});
  EXPECT_EQ(missing.exit_code, 1) << missing.out;
  EXPECT_NE(missing.out.find("999999"), std::string::npos) << missing.out;
  CliResult bad = RunCli(baton, {"resubmit", id, "-g", "-1"});
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
}

TEST(CliResubmit, ShowJsonIsAJobFile) {
  TempDir dir;
  BatonProcess baton(dir.path());
  auto c = baton.Client();
  CliResult sub =
      RunCli(baton, {"submit", "--name", "copy", "-g", "0.5", "--cpus", "2", "--memory", "1GiB",
                     "--env", "K=V", "-t", "2h", "--hold", "--", "sh", "-c", "echo hi"});
  ASSERT_EQ(sub.exit_code, 0) << sub.out;
  CliResult show = RunCli(baton, {"show", FirstLine(sub.out), "--json"});
  ASSERT_EQ(show.exit_code, 0) << show.out;
  std::string file = dir.path() + "/job.json";
  std::ofstream(file) << show.out;
  CliResult copy = RunCli(baton, {"submit", "-f", file, "--hold"});
  ASSERT_EQ(copy.exit_code, 0) << copy.out;  // id, state, user, allocation... are no errors
  std::string job = GetJob(*c, std::stoll(copy.out));
  EXPECT_EQ(JsonString(job, "name"), "copy") << job;
  EXPECT_EQ(JsonField(job, "command"), R"(["sh","-c","echo hi"])") << job;
  EXPECT_NE(job.find("\"gpus\":5E-1"), std::string::npos) << job;
  EXPECT_NE(job.find("\"cpus\":2"), std::string::npos) << job;
  EXPECT_NE(job.find("\"K\":\"V\""), std::string::npos) << job;
  EXPECT_EQ(JsonField(job, "time_limit_s"), JsonField(show.out, "time_limit_s")) << job;
  // Flags still override, and `baton jobs --json` is a file of jobs too.
  CliResult more = RunCli(baton, {"submit", "-f", file, "-g", "1", "--hold", "--json"});
  ASSERT_EQ(more.exit_code, 0) << more.out;
  EXPECT_NE(more.out.find("\"gpus\":1"), std::string::npos) << more.out;
  CliResult list = RunCli(baton, {"jobs", "--json"});
  std::ofstream(file) << list.out;
  CliResult all = RunCli(baton, {"submit", "-f", file, "--hold"});
  ASSERT_EQ(all.exit_code, 0) << all.out;
  EXPECT_EQ(std::count(all.out.begin(), all.out.end(), '\n'), 3) << all.out;
}

// The lines of `out` after its header, each one's first word (a job's id).
std::vector<std::string> Ids(const std::string& out) {
  std::istringstream in(out);
  std::vector<std::string> ids;
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) ids.push_back(line.substr(0, line.find(' ')));
  return ids;
}

TEST(CliHistory, JobsAllFiltersByWindowUserProjectStateAndName) {
  TempDir dir;
  BatonProcess baton(dir.path());
  std::string a = FirstLine(
      RunCli(baton, {"submit", "--name", "a", "--project", "nlp", "--", "sh", "-c", "sleep 1.2"})
          .out);
  std::string b = FirstLine(
      RunCli(baton, {"submit", "--name", "b", "--project", "vision", "--", "sh", "-c", "exit 3"})
          .out);
  std::string held = SubmitHeld(baton, {"--name", "c", "--project", "nlp"});
  EXPECT_EQ(RunCli(baton, {"wait", a}).exit_code, 0);
  EXPECT_EQ(RunCli(baton, {"wait", b}).exit_code, 1);
  CliResult all = RunCli(baton, {"jobs", "--all"});
  ASSERT_EQ(all.exit_code, 0) << all.out;
  EXPECT_NE(FirstLine(all.out).find("START"), std::string::npos) << all.out;
  EXPECT_NE(FirstLine(all.out).find("END"), std::string::npos) << all.out;
  EXPECT_NE(FirstLine(all.out).find("ELAPSED"), std::string::npos) << all.out;
  EXPECT_EQ(Ids(all.out), (std::vector<std::string>{a, b, held})) << all.out;
  CliResult picked = RunCli(baton, {"jobs", "--all", "--format", "id,name,state,elapsed"});
  ASSERT_EQ(picked.exit_code, 0) << picked.out;
  std::istringstream rows(picked.out);
  std::string header, row_a;
  std::getline(rows, header);
  std::getline(rows, row_a);
  EXPECT_EQ(header.substr(0, 2), "ID") << picked.out;
  EXPECT_NE(header.find("ELAPSED"), std::string::npos) << picked.out;
  EXPECT_EQ(header.find("USER"), std::string::npos) << picked.out;
  EXPECT_NE(row_a.find("succeeded  00:00:01"), std::string::npos) << picked.out;
  EXPECT_EQ(Ids(RunCli(baton, {"jobs", "--all", "--name", "a"}).out), std::vector<std::string>{a});
  EXPECT_EQ(Ids(RunCli(baton, {"jobs", "--all", "--project", "vision"}).out),
            std::vector<std::string>{b});
  EXPECT_EQ(Ids(RunCli(baton, {"jobs", "--state", "failed"}).out), std::vector<std::string>{b});
  EXPECT_TRUE(Ids(RunCli(baton, {"jobs", "--all", "--user", "nobody"}).out).empty());
  EXPECT_EQ(Ids(RunCli(baton, {"jobs", "--since", "-1h"}).out),
            (std::vector<std::string>{a, b, held}));
  EXPECT_EQ(Ids(RunCli(baton, {"jobs", "--since", "-12h", "--until", "2020-01-01"}).out),
            std::vector<std::string>{});
  // Not ended before 2099: only the job that has not ended.
  EXPECT_EQ(Ids(RunCli(baton, {"jobs", "--since", "2099-01-01"}).out),
            std::vector<std::string>{held});
  EXPECT_EQ(Ids(RunCli(baton, {"jobs", "--since", "2099-01-01T00:00:00Z"}).out),
            std::vector<std::string>{held});
  CliResult bad_time = RunCli(baton, {"jobs", "--since", "last tuesday"});
  EXPECT_EQ(bad_time.exit_code, 2) << bad_time.out;
  EXPECT_NE(bad_time.out.find("--since"), std::string::npos) << bad_time.out;
  CliResult bad_column = RunCli(baton, {"jobs", "--format", "id,bogus"});
  EXPECT_EQ(bad_column.exit_code, 2) << bad_column.out;
  EXPECT_NE(bad_column.out.find("unknown column 'bogus' (valid: id, name,"), std::string::npos)
      << bad_column.out;
  EXPECT_TRUE(EveryLineSaysBaton(bad_column.out)) << bad_column.out;
  // --me: the token's own user's jobs, as squeue --me.
  CliResult made = RunCli(baton, {"token", "create", "--user", "nobody"});
  ASSERT_EQ(made.exit_code, 0) << made.out;
  const std::string nobody = FirstLine(made.out);
  CliResult theirs = RunCliWithToken(baton, nobody, {"submit", "--hold", "--", "true"});
  ASSERT_EQ(theirs.exit_code, 0) << theirs.out;
  EXPECT_EQ(Ids(RunCliWithToken(baton, nobody, {"jobs", "--me"}).out),
            std::vector<std::string>{FirstLine(theirs.out)});
  EXPECT_EQ(Ids(RunCli(baton, {"jobs", "--me"}).out), std::vector<std::string>{held});
  EXPECT_EQ(RunCli(baton, {"jobs", "--me", "--user", "nobody"}).exit_code, 2);
}

TEST(CliWait, ARangeIsWaitedForInOneListingARoundAndItsFailuresNamed) {
  TempDir dir;
  BatonProcess baton(dir.path());
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) {
    ids.push_back(FirstLine(
        RunCli(baton, {"submit", "--", "sh", "-c", i == 3 ? "sleep 0.5; exit 4" : "sleep 0.3"})
            .out));
  }
  CliResult waited = RunCli(baton, {"wait", ids.front() + "-" + ids.back()});
  EXPECT_EQ(waited.exit_code, 1) << waited.out;
  EXPECT_NE(waited.out.find("job " + ids[3] + " failed"), std::string::npos) << waited.out;
  // It returned once all had ended: none is left pending or running.
  EXPECT_TRUE(Ids(RunCli(baton, {"jobs", "--state", "pending,running"}).out).empty());
  EXPECT_EQ(Ids(RunCli(baton, {"jobs", "--state", "succeeded"}).out).size(), 5u);
  // A job in the range that never ends: the wait gives up at its timeout, counting it.
  std::string held = SubmitHeld(baton, {});
  CliResult timed = RunCli(baton, {"wait", ids.front() + "-" + held, "--timeout", "1s"});
  EXPECT_EQ(timed.exit_code, 1) << timed.out;
  EXPECT_NE(timed.out.find("timed out waiting for 1 job(s)"), std::string::npos) << timed.out;
}

TEST(CliHistory, UsageSinceAndUntil) {
  TempDir dir;
  BatonProcess baton(dir.path());
  std::string a =
      FirstLine(RunCli(baton, {"submit", "-g", "1", "--project", "nlp", "--", "sleep", "0.2"}).out);
  EXPECT_EQ(RunCli(baton, {"wait", a}).exit_code, 0);
  CliResult recent = RunCli(baton, {"usage", "--since", "-1h"});
  ASSERT_EQ(recent.exit_code, 0) << recent.out;
  EXPECT_NE(recent.out.find("nlp"), std::string::npos) << recent.out;
  CliResult before = RunCli(baton, {"usage", "--until", "2020-01-01"});
  ASSERT_EQ(before.exit_code, 0) << before.out;
  EXPECT_EQ(before.out.find("nlp"), std::string::npos) << before.out;
  CliResult after = RunCli(baton, {"usage", "--since", "2099-01-01", "--json"});
  ASSERT_EQ(after.exit_code, 0) << after.out;
  EXPECT_EQ(after.out.find("nlp"), std::string::npos) << after.out;
  CliResult bad = RunCli(baton, {"usage", "--since", "soon"});
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  // The route itself: a bad time is a 400 naming the parameter.
  auto c = baton.Client();
  auto res = c->Request("GET", "/v1/usage?since=yesterday", "", {});
  ASSERT_TRUE(res.has_value());
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(res->body.find("since"), std::string::npos) << res->body;
}

TEST(CliViews, ShowHasEveryFieldOfTheJob) {
  TempDir dir;
  BatonProcess baton(dir.path());
  ASSERT_TRUE(WaitForNodes(*baton.Client()));
  std::string first = SubmitHeld(baton, {});
  CliResult sub = RunCli(
      baton, {"submit",   "-g",   "1",         "--gpu-memory", "40GiB",   "--cpus",  "2",
              "--memory", "1GiB", "--workdir", "/tmp",         "--env",   "LR=0.1",  "--grace",
              "5s",       "-t",   "1h",        "--signal",     "USR1@2m", "--after", first,
              "--hold",   "--",   "python",    "train.py",     "--lr",    "0.1"});
  ASSERT_EQ(sub.exit_code, 0) << sub.out;
  CliResult show = RunCli(baton, {"show", FirstLine(sub.out)});
  ASSERT_EQ(show.exit_code, 0) << show.out;
  for (const char* want :
       {"command       python train.py --lr 0.1\n", "gpu memory    at least 40GiB\n",
        "cpus          2 per node\n", "memory        1GiB per node\n", "workdir       /tmp\n",
        "env           LR=0.1\n", "grace         5s from SIGTERM to SIGKILL\n",
        "time limit    1h\n", "signal        USR1@2m before its limit\n", "cost          0.00"}) {
    EXPECT_NE(show.out.find(want), std::string::npos) << want << " in\n" << show.out;
  }
  EXPECT_NE(show.out.find("dependencies  " + first + " "), std::string::npos) << show.out;
  // Running: where, on which nodes, for how long.
  RunCli(baton, {"release", first});
  CliResult run = RunCli(baton, {"submit", "-g", "1", "--", "sleep", "30"});
  std::string id = FirstLine(run.out);
  auto c = baton.Client();
  ASSERT_TRUE(Within(std::chrono::seconds(10),
                     [&] { return JsonString(GetJob(*c, std::stoll(id)), "state") == "running"; }));
  CliResult running = RunCli(baton, {"show", id});
  EXPECT_NE(running.out.find("node list     "), std::string::npos) << running.out;
  EXPECT_NE(running.out.find("elapsed       00:00:"), std::string::npos) << running.out;
  // Not yours: the environment is not shown, and show says why it may be empty.
  CliResult made = RunCli(baton, {"token", "create", "--user", "nobody", "--json"});
  std::string other = JsonString(made.out, "token");
  CliResult theirs = RunCli(baton, {"show", FirstLine(sub.out), "--token", other});
  EXPECT_EQ(theirs.out.find("LR=0.1"), std::string::npos) << theirs.out;
  EXPECT_NE(theirs.out.find("not yours to see"), std::string::npos) << theirs.out;
  RunCli(baton, {"cancel", "--all"});
}

TEST(CliViews, NodesShowCpusAndMemoryAndQueueReasonsAreWholeWhenPiped) {
  TempDir dir;
  BatonProcess baton(dir.path());
  ASSERT_TRUE(WaitForNodes(*baton.Client()));
  CliResult nodes = RunCli(baton, {"nodes"});
  ASSERT_EQ(nodes.exit_code, 0) << nodes.out;
  EXPECT_NE(FirstLine(nodes.out).find("CPUS"), std::string::npos) << nodes.out;
  EXPECT_NE(FirstLine(nodes.out).find("MEMORY"), std::string::npos) << nodes.out;
  EXPECT_NE(nodes.out.find("GiB"), std::string::npos) << nodes.out;
  // A job that waits behind another for the whole node, with a reason longer than a terminal
  // line's cut: "waiting for 8 GPUs of type H100-80GB with 80GiB GPU memory, 1 CPUs, 1GiB
  // memory; 0 GPUs free in pool default". (A request no node can hold is refused at submit.)
  CliResult blocker = RunCli(baton, {"submit", "-g", "8", "--", "sleep", "300"});
  ASSERT_EQ(blocker.exit_code, 0) << blocker.out;
  CliResult sub = RunCli(baton, {"submit", "-g", "8", "--gpu-type", "H100-80GB", "--gpu-memory",
                                 "80GiB", "--cpus", "1", "--memory", "1GiB", "--", "true"});
  ASSERT_EQ(sub.exit_code, 0) << sub.out;
  auto c = baton.Client();
  ASSERT_FALSE(WaitUntilWaiting(*c, std::stoll(sub.out), "resources").empty());
  const std::string end = "free in pool default";
  CliResult queue = RunCli(baton, {"queue"});  // stdout is a pipe here
  EXPECT_NE(queue.out.find(end), std::string::npos) << queue.out;
  EXPECT_EQ(queue.out.find("..."), std::string::npos) << queue.out;
  CliResult whole = RunCli(baton, {"queue", "--long"});
  EXPECT_EQ(whole.exit_code, 0) << whole.out;
  EXPECT_NE(whole.out.find(end), std::string::npos) << whole.out;
  RunCli(baton, {"cancel", "--all"});
}

TEST(CliTokens, ATokenForAUserThisMachineLacksWarnsButIsMade) {
  TempDir dir;
  BatonProcess baton(dir.path());
  CliResult made = RunCli(baton, {"token", "create", "--user", "no-such-user-16"});
  EXPECT_EQ(made.exit_code, 0) << made.out;
  EXPECT_NE(made.out.find("baton: warning: no Unix user 'no-such-user-16' on this machine"),
            std::string::npos)
      << made.out;
  CliResult list = RunCli(baton, {"token", "list"});
  EXPECT_NE(list.out.find("no-such-user-16"), std::string::npos) << list.out;
  CliResult known = RunCli(baton, {"token", "create", "--user", "nobody"});
  EXPECT_EQ(known.exit_code, 0) << known.out;
  EXPECT_EQ(known.out.find("warning"), std::string::npos) << known.out;
}

}  // namespace
}  // namespace baton::testing

namespace baton::testing {
namespace {

// Slurm users type states in capitals or as squeue's codes.
TEST(CliHistory, StatesMayBeTypedInAnyCaseOrAsSlurmsCodes) {
  TempDir dir;
  BatonProcess baton(dir.path());
  CliResult held = RunCli(baton, {"submit", "--hold", "--name", "waits", "--", "true"});
  ASSERT_EQ(held.exit_code, 0) << held.out;
  CliResult upper = RunCli(baton, {"jobs", "--state", "HELD"});
  EXPECT_EQ(upper.exit_code, 0) << upper.out;
  EXPECT_NE(upper.out.find("waits"), std::string::npos) << upper.out;
  CliResult code = RunCli(baton, {"jobs", "--state", "PD,R"});
  EXPECT_EQ(code.exit_code, 0) << code.out;
  EXPECT_EQ(code.out.find("waits"), std::string::npos) << code.out;
  CliResult bad = RunCli(baton, {"jobs", "--state", "sleeping"});
  EXPECT_EQ(bad.exit_code, 1) << bad.out;
  EXPECT_NE(bad.out.find("state: must be one of"), std::string::npos) << bad.out;
}

// Commands on the server's machine talk to it on its Unix socket (DATA/api.sock: no TCP, no
// TLS handshake; the command's start is most of a submit), and on server.url where there is
// none; --server and $BATON_SERVER are used as given.
TEST(CliLocal, CommandsOnTheServersMachineUseItsUnixSocket) {
  TempDir dir;
  BatonProcess baton(dir.path());
  const std::string sock = dir.path() + "/api.sock";
  struct stat st {};
  ASSERT_EQ(lstat(sock.c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);  // only its user connects (a token is asked for anyway)

  // With server.url pointing nowhere, the socket still serves: that is what was used.
  const std::string url_file = dir.path() + "/server.url";
  std::ofstream(url_file) << "https://127.0.0.1:1\n";
  CliResult sub = RunCli(baton, {"submit", "--hold", "--", "true"});
  ASSERT_EQ(sub.exit_code, 0) << sub.out;
  CliResult jobs = RunCli(baton, {"jobs"});
  EXPECT_EQ(jobs.exit_code, 0) << jobs.out;
  EXPECT_NE(jobs.out.find("held"), std::string::npos) << jobs.out;
  CliResult bad_token = RunCli(baton, {"jobs", "--token", "not-a-token"});
  EXPECT_EQ(bad_token.exit_code, 1) << bad_token.out;  // the socket asks for a token too
  // A server named is used as named: not the socket.
  CliResult named = RunCli(baton, {"--server", "https://127.0.0.1:1", "jobs"});
  EXPECT_EQ(named.exit_code, 1) << named.out;

  // No socket (a server that does not serve one): server.url, over TLS.
  std::ofstream(url_file) << baton.url() << "\n";
  ASSERT_EQ(unlink(sock.c_str()), 0);
  CliResult tcp = RunCli(baton, {"jobs"});
  EXPECT_EQ(tcp.exit_code, 0) << tcp.out;
  EXPECT_NE(tcp.out.find("held"), std::string::npos) << tcp.out;

  // A socket left by a server killed is replaced at the next start; a clean stop removes it.
  baton.Kill9();
  baton.Start();
  ASSERT_EQ(lstat(sock.c_str(), &st), 0);
  std::ofstream(url_file) << "https://127.0.0.1:1\n";
  CliResult again = RunCli(baton, {"jobs"});
  EXPECT_EQ(again.exit_code, 0) << again.out;
  EXPECT_NE(again.out.find("held"), std::string::npos) << again.out;
  baton.Stop();
  EXPECT_NE(lstat(sock.c_str(), &st), 0);
}

// A socket that cannot be made (here a directory in its place) is left out, said in the log,
// and commands use server.url.
TEST(CliLocal, AServerThatCannotMakeItsSocketServesAndCommandsUseTheUrl) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() + "/api.sock");
  BatonProcess baton(dir.path());
  EXPECT_TRUE(Within(std::chrono::seconds(10), [&] {
    std::string log = ReadFile(dir.path() + "/baton.out");
    return log.find("unix socket: cannot listen on " + dir.path() + "/api.sock") !=
               std::string::npos &&
           log.find("commands on this machine use " + baton.url()) != std::string::npos;
  })) << ReadFile(dir.path() + "/baton.out");
  CliResult sub = RunCli(baton, {"submit", "--hold", "--", "true"});
  EXPECT_EQ(sub.exit_code, 0) << sub.out;
  EXPECT_TRUE(std::filesystem::is_directory(dir.path() + "/api.sock"));  // left as it was
}

// Each command builds only its own flags: each still parses as itself, help lists them all.
TEST(CliParser, EveryCommandStillParsesWhenBuiltAlone) {
  TempDir dir;
  BatonProcess baton(dir.path());
  CliResult help = RunCli(baton, {"--help"});
  ASSERT_EQ(help.exit_code, 0) << help.out;
  std::vector<std::string> commands;
  std::istringstream in(help.out.substr(help.out.find("Subcommands:")));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line) && line.starts_with("  ")) {
    std::istringstream words(line);
    std::string word;
    words >> word;
    commands.push_back(word);
  }
  EXPECT_GE(commands.size(), 30u) << help.out;
  for (const std::string& command : commands) {
    CliResult own = RunCli(baton, {command, "--help"});
    EXPECT_EQ(own.exit_code, 0) << command << ": " << own.out;
    EXPECT_NE(own.out.find("Usage: baton " + command), std::string::npos)
        << command << ": " << own.out;
  }
  CliResult bad = RunCli(baton, {"jobs", "--bogus"});
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_EQ(bad.out.rfind("baton: ", 0), 0u) << bad.out;
}

}  // namespace
}  // namespace baton::testing
