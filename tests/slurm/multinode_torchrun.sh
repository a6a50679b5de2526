#!/bin/bash
# torchrun on each node through srun, the rendezvous at the first node as scontrol names it
# (the pattern of most multi-node PyTorch examples).
#SBATCH --job-name=ddp-torchrun
#SBATCH -N 2
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:1
#SBATCH --time=00:10:00
#SBATCH -o %x-%j.out

head_node=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n1)
port=$(expr 20000 + $(echo -n $SLURM_JOBID | tail -c 4))
echo "rendezvous at ${head_node}:${port}"

srun torchrun --nnodes=$SLURM_NNODES --nproc_per_node=1 --rdzv_id=$SLURM_JOB_ID \
  --rdzv_backend=c10d --rdzv_endpoint=${head_node}:${port} ddp.py
