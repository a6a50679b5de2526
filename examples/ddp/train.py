#!/usr/bin/python3
"""A small data-parallel PyTorch training job that survives preemption and node loss on Baton.

It reads only what Baton gives every job (docs/operations.md, "What a job sees"):
RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT (one process per GPU with
`--process-per-gpu`), BATON_CHECKPOINT_DIR (the same directory on every node and attempt
when the cluster has a shared `checkpoint_root`), BATON_METRICS_FILE and
BATON_RESTART_COUNT.

- One process per GPU, data-parallel in one process group: NCCL where CUDA is there, gloo
  on CPUs elsewhere (Baton's simulated GPUs included). Each rank computes the gradients of
  its own batch; the gradients are averaged over the ranks before every step.
- Deterministic: the weights start from a fixed seed, each rank's batch for step S is drawn
  from a generator seeded with (S, rank), one CPU thread, deterministic algorithms, and the
  gradients are reduced one parameter at a time, in a fixed order: a tensor of a given shape
  is split over the ranks the same way every time, so each element is summed in the same
  order. (DistributedDataParallel packs gradients into buckets whose layout it rebuilds after
  the first step of every process; a resumed run's first step then sums some elements in
  another order, and with more than two ranks floating-point sums differ in the last bits.)
  So a run that is stopped and resumed from its checkpoints ends with the same parameters,
  bit for bit, as one that never stopped.
- Checkpoints: every --every steps, and when the job is told to stop (SIGTERM: Baton's
  notice before a preemption, a cancel or the time limit; or an earlier --signal). The ranks
  agree on the step to stop at (an all-reduce of the flag each step), rank 0 writes the model,
  the optimizer and the step atomically, appends a checkpoint line to BATON_METRICS_FILE (so
  that the scheduler knows how much work a preemption would lose) and every rank exits 0;
  Baton requeues the job, and the next attempt resumes from the step after.
- At the end rank 0 writes final.pt and final.sha256 (of the parameters' bytes) to the
  checkpoint directory, and prints the digest.

    baton submit -g 4 --nodes 2 --process-per-gpu -- /usr/bin/python3 examples/ddp/train.py
"""
import argparse
import hashlib
import json
import os
import signal
import sys
import time

import torch
import torch.distributed as dist

stop_asked = False


def on_stop(signum, frame):
    global stop_asked
    stop_asked = True


def log(rank, text):
    if rank == 0:
        print(text, flush=True)


def batch(step, rank, size, features):
    g = torch.Generator().manual_seed(1_000_003 * step + rank)
    x = torch.randn(size, features, generator=g)
    y = torch.sin(x).sum(dim=1, keepdim=True)
    return x, y


def save_atomic(obj, path):
    tmp = path + ".tmp"
    torch.save(obj, tmp)
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, path)


def digest(model):
    h = hashlib.sha256()
    for name, p in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(p.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--every", type=int, default=10, help="checkpoint every N steps")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--step-time", type=float, default=0.0, help="seconds to sleep a step")
    args = ap.parse_args()

    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGUSR1, on_stop)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)

    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    dist.init_process_group("nccl" if cuda else "gloo", rank=rank, world_size=world)

    ckpt_dir = os.environ.get("BATON_CHECKPOINT_DIR", ".")
    ckpt = os.path.join(ckpt_dir, "ckpt.pt")
    metrics = os.environ.get("BATON_METRICS_FILE")

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(), torch.nn.Linear(64, 1))
    model.to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    start = 0
    if os.path.exists(ckpt):
        state = torch.load(ckpt, map_location=device)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        start = state["step"] + 1
        log(rank, f"resumed from step {state['step']} (attempt "
                  f"{os.environ.get('BATON_RESTART_COUNT', '0')}, world {world})")

    def average_gradients():
        for p in model.parameters():  # a fixed order, one tensor at a time
            dist.all_reduce(p.grad)
            p.grad /= world

    def checkpoint(step, loss):
        if rank == 0:
            save_atomic({"model": model.state_dict(), "optimizer": opt.state_dict(),
                         "step": step}, ckpt)
            if metrics:
                with open(metrics, "a") as f:
                    f.write(json.dumps({"step": step, "loss": loss, "checkpoint": ckpt}) + "\n")
        dist.barrier()

    loss_value = float("nan")
    for step in range(start, args.steps):
        x, y = batch(step, rank, args.batch, 16)
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
        loss.backward()
        average_gradients()
        opt.step()
        loss_value = loss.item()
        if args.step_time > 0:
            time.sleep(args.step_time)
        # Every rank stops at the same step: the first to be told tells the others.
        flag = torch.tensor([1.0 if stop_asked else 0.0], device=device)
        dist.all_reduce(flag)
        last = step == args.steps - 1
        if flag.item() > 0 and not last:
            checkpoint(step, loss_value)
            log(rank, f"stopping at step {step}: checkpoint written, to resume")
            dist.destroy_process_group()
            return 0
        if (step + 1) % args.every == 0 and not last:
            checkpoint(step, loss_value)

    if rank == 0:
        save_atomic(model.state_dict(), os.path.join(ckpt_dir, "final.pt"))
        d = digest(model)
        with open(os.path.join(ckpt_dir, "final.sha256"), "w") as f:
            f.write(d + "\n")
        print(f"done: {args.steps} steps, loss {loss_value:.6f}, parameters sha256 {d}", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
