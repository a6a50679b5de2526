// `baton submit`: a job's spec from flags or from a YAML job file (flags given with -f override
// its fields), its command after `--`, sent as one job or one all-or-nothing batch.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/client.h"
#include "cli/spec_flags.h"
#include "core/time.h"

namespace CLI {
class App;
}

namespace baton::cli {

// `tail`: the words after the command line's first `--` (see ReadCommandLine); `filter`: the
// spec flags to build (all unless the caller knows the words typed).
void AddSubmitCommand(CLI::App& app, const std::shared_ptr<Connection>& conn, int* exit_code,
                      const std::shared_ptr<std::optional<std::vector<std::string>>>& tail,
                      const FlagFilter& filter = {});

// `--begin TEXT` as Slurm reads it: +DURATION or now+DURATION from `now`, RFC 3339 UTC
// (2026-12-01T09:00:00Z), or a local
// YYYY-MM-DD[THH:MM[:SS]] or HH:MM[:SS] (today, or tomorrow once that time has passed).
Result<TimePoint> ParseBeginTime(std::string_view text, TimePoint now, std::string_view field);

// `baton run [OPTIONS] -- COMMAND` (the flags of submit; -t is --tty there), `baton run --in`,
// `baton alloc`, `baton attach ID`, `baton sessions`, `baton forward ID [LOCAL:]REMOTE`
// (run_commands.cc; cli/session.h, cli/alloc.h).
void AddSessionCommands(CLI::App& app, const std::shared_ptr<Connection>& conn, int* exit_code,
                        const std::shared_ptr<std::optional<std::vector<std::string>>>& tail);

// `baton resubmit ID [OPTIONS]`: the job's spec again; the flags of submit typed override it.
void AddResubmitCommand(CLI::App& app, const std::shared_ptr<Connection>& conn, int* exit_code);
// `baton update ID ...`: a waiting job's fields, a running job's time limit (scontrol update).
void AddJobUpdateCommand(CLI::App& app, const std::shared_ptr<Connection>& conn, int* exit_code);

}  // namespace baton::cli
