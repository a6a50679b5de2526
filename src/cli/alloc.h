// Allocations, as Slurm's salloc makes them (docs/slurm.md "baton alloc"): `baton alloc` holds
// nodes for a job that runs no command of its own, runs a shell (or a command) here while it
// holds them, and gives them back when that ends; `baton run --in ID -- COMMAND` runs COMMAND on
// them through srun, from that shell or anywhere. The command reaches the allocation's host on its
// first node through a tunnel whose agent end shows the job's step key (core/step_wire.h): this
// side never sees the key.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cli/client.h"
#include "core/job.h"

namespace baton::cli {

// `baton run --in ID -- [srun OPTIONS] COMMAND`: srun WORDS in allocation `ref`, in this
// directory (where its nodes have it), with `env` over the job's environment; its output here,
// its exit code srun's. Ctrl-C ends it (130).
int RunIn(const Connection& conn, const std::string& ref, std::vector<std::string> words,
          const std::vector<std::pair<std::string, std::string>>& env);

// `baton alloc [OPTIONS] [-- COMMAND]`: submits `spec` as an allocation, says why it waits
// until it runs, then runs COMMAND (default: $SHELL) here with SLURM_JOB_ID and BATON_ALLOC
// set and an `srun` first on its PATH that is `baton run --in ID`; cancels the job when the
// command ends, and exits with its exit code.
int Alloc(const Connection& conn, JobSpec spec, std::vector<std::string> command);

}  // namespace baton::cli
