#!/usr/bin/env python3
# A batch script in Python: sbatch reads #SBATCH lines whatever the interpreter.
#SBATCH --job-name=pytrain
#SBATCH --gres=gpu:1
#SBATCH --output=pytrain-%j.out
import os
import sys

print(f"python job {os.environ['SLURM_JOB_ID']} on {os.environ['SLURMD_NODENAME']}, "
      f"args {sys.argv[1:]}")
