#!/bin/bash
# Data-parallel training over two nodes, one process per task, ranks from Slurm's variables
# (the `srun python train.py` pattern): torch's env:// rendezvous at the first node.
#SBATCH --job-name=ddp-srun
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=2
#SBATCH --gpus-per-node=1
#SBATCH --cpus-per-task=1
#SBATCH --time=00:10:00
#SBATCH --output=ddp-srun-%j.out

export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export MASTER_PORT=$(expr 10000 + $(echo -n $SLURM_JOBID | tail -c 4))
echo "nodes: $(scontrol show hostnames "$SLURM_JOB_NODELIST" | tr '\n' ' ')"
echo "master: ${MASTER_ADDR}:${MASTER_PORT}"

srun -l /usr/bin/python3 -c '
import os, torch, torch.distributed as dist
rank, world = int(os.environ["SLURM_PROCID"]), int(os.environ["SLURM_NTASKS"])
dist.init_process_group("gloo", init_method="env://", rank=rank, world_size=world)
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
node, local = os.environ["SLURM_NODEID"], os.environ["SLURM_LOCALID"]
print(f"rank {rank} of {world} on node {node} local {local}: sum {int(t.item())}")
dist.destroy_process_group()
'
