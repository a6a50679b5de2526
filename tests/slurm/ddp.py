# The training torchrun starts in multinode_torchrun.sh: an all-reduce over every rank.
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print(f"rank {dist.get_rank()} of {dist.get_world_size()}: sum {int(t.item())}", flush=True)
dist.destroy_process_group()
