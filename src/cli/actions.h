// `baton cancel`, `baton hold` and `baton release` of many jobs, as Slurm's scancel: ids and
// ranges (`10-20`), or selectors (`--all` of your jobs, `--user`, `--name`, `--state`,
// `--project`). Each job's outcome is printed; the exit status is 1 when any failed.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "cli/client.h"

namespace CLI {
class App;
}

namespace baton::cli {

struct JobSelection {
  std::vector<std::string> ids;  // "12", "10-20", "3,4,9-11", "12_7", "12_0-3"
  bool all = false;              // your jobs (the token's user)
  std::string user;              // this user's jobs (an admin may name anyone)
  std::string name;              // jobs of this name
  std::string state;             // comma-separated states; default: those the action applies to
  std::string project;
  bool cron = false;  // cancel: the runs of recurring jobs too, and so their schedules
  bool Selects() const {
    return all || !user.empty() || !name.empty() || !state.empty() || !project.empty();
  }
};

// Adds cancel, hold and release to `app`.
void AddActionCommands(CLI::App& app, const std::shared_ptr<Connection>& conn, int* exit_code);

// The jobs of "12", "10-20", "3,4,9-11", and tasks of job arrays ("12_7", "12_0-3" for tasks 0
// to 3 of array 12), in order, as the job routes name them ("12", "12_7"); or why not.
Result<std::vector<std::string>> ParseJobIds(const std::vector<std::string>& words);

}  // namespace baton::cli
