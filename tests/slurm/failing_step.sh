#!/bin/bash
# A step that fails on one task: srun says which and exits with its code, and so does the job.
#SBATCH -N 2
#SBATCH --ntasks-per-node=1
#SBATCH -o failing-%j.out

srun bash -c 'echo "task $SLURM_PROCID on $SLURMD_NODENAME"; if [ "$SLURM_PROCID" = 1 ]; then exit 3; fi'
echo "srun exited $?"
exit 3
