#!/bin/bash
# A one-node GPU job as most single-GPU fine-tuning scripts ask for it.
#SBATCH -J finetune
#SBATCH --gres=gpu:h100:2
#SBATCH --cpus-per-task=2
#SBATCH --mem=2G
#SBATCH -t 30
#SBATCH -p default
#SBATCH -A default
#SBATCH --qos=high

echo "gpus on node: ${SLURM_GPUS_ON_NODE} (CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES})"
echo "cpus per task: ${SLURM_CPUS_PER_TASK}"
echo "tasks: ${SLURM_NTASKS}, procid ${SLURM_PROCID}, nodeid ${SLURM_NODEID}"
