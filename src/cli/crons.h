// `baton crons`: the recurring jobs (submitted with --schedule or `schedule:` in a job file),
// as Slurm's scrontab -l lists them, with each one's next run and how its last run ended; and
// `baton crons delete ID...`, which stops them (scrontab -r for one line).
#pragma once

#include <memory>

#include "cli/client.h"

namespace CLI {
class App;
}

namespace baton::cli {

void AddCronCommands(CLI::App& app, const std::shared_ptr<Connection>& conn, int* exit_code);

}  // namespace baton::cli
