// baton-slurm: what jobs written for Slurm call, and the two roles a batch script's nodes run
// (slurm_main.cc).
#pragma once

#include <string>
#include <vector>

namespace baton::slurm {

// `srun [OPTIONS] CMD ...` inside a job (srun.cc).
int Srun(const std::vector<std::string>& args);
// `scontrol show hostnames [LIST]`, `scontrol show hostlist LIST` (srun.cc).
int Scontrol(const std::vector<std::string>& args);

// The notice the job's --signal asks for ($BATON_NOTICE_SIGNAL: "10", or "B:10" for the batch
// shell alone), as Slurm sends it: without B: to the job's steps (srun's tasks, each node's
// sent by its own step server or srun) and not to the batch shell, which starts with it
// ignored; with B: to the shell alone, srun and the step servers ignoring it. `signal` is 0
// where none is asked, or where it is TERM, INT or HUP: those stop a job's steps as a stop does.
struct Notice {
  int signal = 0;
  bool shell = false;
};
Notice NoticeOf();

}  // namespace baton::slurm
