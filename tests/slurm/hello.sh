#!/bin/bash
# The smallest batch job: a name, a time limit, the output file by pattern.
#SBATCH --job-name=hello
#SBATCH --time=00:05:00
#SBATCH --output=%x-%j.out
#SBATCH --mail-type=END,FAIL
#SBATCH --mail-user=someone@example.com

set -euo pipefail
echo "job ${SLURM_JOB_ID} (${SLURM_JOB_NAME}) on ${SLURM_NNODES} node(s): ${SLURM_JOB_NODELIST}"
echo "submitted from ${SLURM_SUBMIT_DIR}; running in $(pwd)"
echo "args: $*"
