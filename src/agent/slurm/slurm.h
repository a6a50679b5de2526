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

}  // namespace baton::slurm
