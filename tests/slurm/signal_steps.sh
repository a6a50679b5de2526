#!/bin/bash
# The warning signal for the job's steps (Slurm's --signal without B:, as PyTorch Lightning's
# auto-requeue asks for it): srun's tasks get it on both nodes and checkpoint; the batch shell
# is not signalled and runs on after them.
#SBATCH --job-name=steps
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=1
#SBATCH --time=0:20
#SBATCH --signal=USR1@15
#SBATCH --output=steps-%j.out

srun bash -c 'trap "echo task $SLURM_PROCID: USR1, checkpointing; exit 0" USR1
  while true; do sleep 1 & wait $!; done'
echo "the shell ran on: srun exited $?"
