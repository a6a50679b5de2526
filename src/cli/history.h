// `baton jobs`: the jobs waiting and running, or with --all (or a window) the history, as
// Slurm's sacct: filters by window, user, project, state and name, and the columns to show.
#pragma once

#include <string>

#include "cli/client.h"
#include "core/time.h"

namespace CLI {
class App;
}

namespace baton::cli {

struct JobsOptions {
  std::string state;    // comma-separated; default: pending,held,running (all with --all)
  std::string user;     // "" = everyone's
  bool me = false;      // the token's own user's jobs (squeue --me)
  std::string project;  // "" = every project's
  std::string name;     // "" = any name; else exactly this one
  std::string since;    // jobs not ended before this (a time, see ParseTimeArg); implies --all
  std::string until;    // jobs submitted before this; implies --all
  std::string format;   // comma-separated columns, e.g. "id,name,state,elapsed"
  bool all = false;     // finished jobs too
  bool expand = false;  // a job array's tasks a line each (else one line per array)
  bool json = false;
};

// A time as users type it: RFC 3339 ("2026-11-20T09:00:00Z"), a UTC date ("2026-11-20") or
// date and time ("2026-11-20T09:00"), "now", or a time ago ("-7d", "-12h", "-1.5h").
// `flag` names the input in errors.
Result<TimePoint> ParseTimeArg(const std::string& text, const std::string& flag, TimePoint now);

int Jobs(const Connection& conn, const JobsOptions& o);

// "node1:0,1 node2:3": where a job's GPUs are.
std::string AllocationText(const Job& j);
// "SIGKILL (9)".
std::string SignalText(int sig);
// "00:12:05", "2-03:00:00": how long a job has run (until it ended, else until now).
std::string Elapsed(const Job& j, TimePoint now);

}  // namespace baton::cli
