#!/usr/bin/python3
"""A synthetic trace of MIG requests for `baton sim` (issue 42), deterministic for a seed.

Jobs ask for A100-80GB MIG profiles in the mix an inference-and-notebook cluster sees (many
small slices, some halves, a few whole GPUs), arriving as a Poisson process, each running an
exponentially distributed time. Written as Baton's trace CSV (docs/scheduling.md, "Simulation").

    bench/mig-trace.py --jobs 2000 --seed 1 > /tmp/mig.csv
"""
import argparse
import random

MIX = [("1g.10gb", 0.40), ("2g.20gb", 0.20), ("3g.40gb", 0.20), ("4g.40gb", 0.10),
       ("7g.80gb", 0.10)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mean-gap", type=float, default=20.0, help="seconds between arrivals")
    ap.add_argument("--mean-run", type=float, default=1800.0, help="seconds a job runs")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    profiles = [p for p, _ in MIX]
    weights = [w for _, w in MIX]
    print("gpus,submit_time,duration,user,gpu_type,time_limit")
    t = 0.0
    for i in range(a.jobs):
        t += rng.expovariate(1.0 / a.mean_gap)
        run = max(30.0, rng.expovariate(1.0 / a.mean_run))
        profile = rng.choices(profiles, weights)[0]
        # Limits as users give them: a round figure above the run, so backfill's estimates hold.
        limit = (int(run * 1.5) // 600 + 1) * 600
        print(f"1,{t:.1f},{run:.1f},user{i % 7},{profile},{limit}s")


if __name__ == "__main__":
    main()
