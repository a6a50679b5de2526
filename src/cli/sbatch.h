// Batch scripts as sbatch reads them: `baton submit train.sh` runs a script written for Slurm
// with its #SBATCH lines (and #BATON lines, in Baton's own flags) as its options.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace baton::cli {

struct BatchScript {
  // How the script runs: its interpreter (from its #! line) with the text given inline, so the
  // job runs the script as it was at submit, as sbatch does: [INTERPRETER..., -c, TEXT, PATH,
  // ARGS...].
  std::vector<std::string> command;
  std::string name;                // the script's file name (the job's name unless given)
  std::vector<std::string> flags;  // its directives as Baton's submit flags, in their order
  std::vector<std::string> notes;  // what to tell the user (directives taken as notes only)
  bool directives = false;         // it has #SBATCH or #BATON lines
  bool array = false;              // it asks for an array (its default output name differs)
  // Why it cannot run as a batch script (its interpreter, its size), for a script without
  // directives, which runs as any command unless --batch-script asks otherwise; "" if it can.
  std::string refused;
};

// Whether `path` is a script: a readable file whose first line starts with "#!".
bool IsScript(const std::string& path);

// Reads the script at `path` (at most 252 KiB), run with `args`. A directive Baton does not
// know is an error naming the line.
Result<BatchScript> ReadBatchScript(const std::string& path, const std::vector<std::string>& args);

// One sbatch option (its name as written, "--gres" or "-N", and its value, "" for a flag) as
// Baton's submit flags; `notes` gets what is accepted without effect.
Result<std::vector<std::string>> TranslateSbatchOption(const std::string& name,
                                                       const std::string& value, bool has_value,
                                                       std::vector<std::string>* notes);

// Slurm's --gres list as GPUs per node, "[TYPE:]N" ("gpu:a100:4" -> "a100:4"); a resource
// other than GPUs is refused.
Result<std::string> GresGpus(const std::string& value);
// Slurm's --dependency ("afterok:12:13,afterany:14", "singleton") as Baton's flags (--after
// 12,13 --after-any 14 --singleton).
Result<std::vector<std::string>> Dependencies(const std::string& value);

// The tokens of a directive line's options, split as a shell does (quotes, backslashes), to a
// '#' that starts a word (a comment).
Result<std::vector<std::string>> SplitDirective(const std::string& text);

}  // namespace baton::cli
