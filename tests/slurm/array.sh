#!/bin/bash
# A hyperparameter sweep as a job array: each task picks its learning rate by its index.
#SBATCH --job-name=lr-sweep
#SBATCH --array=0-3%2
#SBATCH --output=logs/%x_%A_%a.out
#SBATCH --error=logs/%x_%A_%a.err
#SBATCH --gpus=1
#SBATCH --time=0:10:00

LRS=(0.1 0.01 0.001 0.0001)
LR=${LRS[$SLURM_ARRAY_TASK_ID]}
echo "task ${SLURM_ARRAY_TASK_ID} of array ${SLURM_ARRAY_JOB_ID}: lr=${LR}"
echo "a warning for task ${SLURM_ARRAY_TASK_ID}" >&2
