// The flags of a job's spec that submit, resubmit, run and alloc share: what they read (Slurm's
// spellings among them), which were typed, and the spec they make.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/job.h"
#include "core/status.h"

namespace CLI {
class App;
}

namespace baton::cli {

struct SubmitFlags {
  std::string gpus = "0";
  std::string gpu_type, gpu_memory, memory, priority = "normal", project = "default",
                                            pool = "default";
  std::string name, time, grace, signal, workdir, file, output_limit;
  int nodes = 0, cpus = 0, retries = 0;
  int max_preemptions = kNotGiven;  // --max-preemptions; the server checks its range
  static constexpr int kNotGiven = -1'000'000;
  std::vector<int64_t> after, after_any, after_notok;
  std::string begin, array, schedule, venv, conda, best_metric, like, code, image;
  std::string model, params, task, precision;  // sizing from a model
  int64_t seq = 0, batch = 0;
  std::vector<std::string> env;
  bool preemptible = false, no_preemptible = false, hold = false, json = false,
       process_per_gpu = false, singleton = false;
  bool requeue = true;     // --no-requeue: false
  bool test_only = false;  // submit --test-only (sbatch's): the server's dry run, nothing made
  // Slurm's spellings of a job's size, and a batch script's (cli/sbatch.h).
  std::string gpus_per_node, gpus_per_task, mem_per_gpu, mem_per_cpu, output, error, wrap, gres,
      dependency;
  int ntasks = 0, tasks_per_node = 0, cpus_per_task = 0;
  bool batch_script = false;
  // Where it may go (Slurm's host lists: "gpu[01-04],login1").
  std::string nodelist, exclude;
  bool exclusive = false;
  // The long names of the spec flags ("--gpus"), every one whether built or not: views of the
  // literals of AddSpecFlags.
  std::vector<std::string_view> spec_names;
  // The long names of the command's other options (--json, --server...), built or not, for a
  // typo's closest (views of literals; not spec flags: never in `typed`).
  std::vector<std::string_view> other_names;
  std::set<std::string> given;     // the flags typed, by long name ("--gpus")
  std::vector<std::string> typed;  // the spec flags typed, as words ("--gpus", "2")
  bool IsSpecFlag(std::string_view long_name) const {
    return std::find(spec_names.begin(), spec_names.end(), long_name) != spec_names.end();
  }
};

// Which spec flags a command builds. A command line such as `baton submit --hold -g 1 -- true`
// names two of the sixty; building only those is half of such a short command's start
// (docs/performance.md). All of them (the default) where every one may be shown or asked for:
// help, a file's job, another command's flags.
class FlagFilter {
 public:
  FlagFilter() = default;  // every flag
  // The flags `words` can name: each long name typed ("--gpus", "--gpus=2") and each letter of
  // a word that starts with one '-' ("-g", "-Jname", "-gN": g, J, n, a, m, e, N), so that CLI11
  // finds every option it would find among all of them (and its value words name none). Every
  // flag when a word asks for help (-h, --help, or an h among letters).
  static FlagFilter Of(const std::vector<std::string>& words);
  // Whether to build the option of CLI11's `names` ("-g,--gpus,-G", "--requeue,!--no-requeue").
  bool Wants(std::string_view names) const;
  // Wants, for options of the command's own beside the spec flags: adds each long name of
  // `names`, a literal, to `known`, built or not, so that a typo's closest is still found.
  bool Note(std::string_view names, std::vector<std::string_view>& known) const;

 private:
  bool all_ = true;
  std::vector<std::string> long_;  // "gpus"
  std::string short_;              // letters
};

// Whether a command of one word is a shell line (spaces, `;`, `|`, `$`...): it runs under
// /bin/sh -c.
bool LooksLikeShell(const std::vector<std::string>& cmd);
// Adds the spec flags `filter` wants to `sub`, in sections of its help (option groups), and
// every spec flag's long name to f.spec_names; `short_time`: -t is --time (run's -t is --tty, as
// docker's).
void AddSpecFlags(CLI::App* sub, SubmitFlags& f, bool short_time = true,
                  const FlagFilter& filter = {});
// Records which flags were typed (their long names): only those override a file or a job.
// Also keeps the spec flags typed as words, for a batch script's directives to go under.
void NoteGiven(const CLI::App& sub, SubmitFlags* f);
// Sets the fields of `spec` that the flags give: every flag (its default when not typed) when
// `given` is null; only the typed ones (long names, e.g. "--gpus") otherwise, as with -f FILE,
// where typed flags override the file's fields.
Status ApplyFlags(const SubmitFlags& f, const std::set<std::string>* given, JobSpec* spec);
// A new job's spec from the flags, running `command` (checked: a clear error when it is not a
// job the API would take).
Result<JobSpec> SpecFromFlags(const SubmitFlags& f, std::vector<std::string> command);
// The job's command: words before the `--` that started the command keep the `--` as part of
// it (`baton submit python x.py -- --flag`); otherwise the command is what follows `--`. An
// unknown option (a typo such as --gpu) is an error naming the closest, among the options of
// `sub` and the spec flags of `f` (those not built too).
Result<std::vector<std::string>> CommandWords(CLI::App& sub, const std::string& verb,
                                              const std::optional<std::vector<std::string>>& tail,
                                              const SubmitFlags& f);

}  // namespace baton::cli
