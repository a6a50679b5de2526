#!/bin/bash
# An array over the lines of a parameter file, 1-based, as `sed -n "${ID}p"` reads them.
#SBATCH --array=1-3
#SBATCH -o params-%A-%3a.out

PARAMS=$(sed -n "${SLURM_ARRAY_TASK_ID}p" params.txt)
echo "line ${SLURM_ARRAY_TASK_ID}: ${PARAMS}"
