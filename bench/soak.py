#!/usr/bin/python3
"""A soak under faults, for as long as you ask (issue 37; docs/operations.md, "Failure
guarantees"): a controller and two agents on this machine, a steady stream of submits (each
with an Idempotency-Key, retried as a client would), and random faults: agents stopped
(SIGSTOP) past the node timeout or briefly, agents and the controller killed (kill -9) and
restarted, the controller stopped for a moment. At the end it waits for every job and checks:

  - nothing acknowledged is lost: every job a submit was answered 201 for is in the store;
  - nothing runs twice at once: each job holds an exclusive lock on a file of its own while it
    runs (flock -n), and a second copy that finds it held writes to doubles.log;
  - no retried submit made a second job: one job per idempotency key.

    bench/soak.py [--build build/release] [--minutes 10] [--seed N] [--node-timeout 10s]

Exit 0 when every invariant held, 1 otherwise; the summary says what was injected and found.
Runs as root (the agents run root's jobs with --allow-root-jobs)."""

import argparse
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "clients", "python"))
from baton_client import BatonError, Client  # noqa: E402


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Cluster:
    def __init__(self, baton, work, node_timeout):
        self.baton, self.work, self.node_timeout = baton, work, node_timeout
        self.port = free_port()
        self.ctl_dir = os.path.join(work, "controller")
        self.controller = None
        self.agents = {}
        self.start_controller()
        self.url = open(os.path.join(self.ctl_dir, "server.url")).read().strip()
        self.token = open(os.path.join(self.ctl_dir, "admin.token")).read().strip()
        self.agent_token = open(os.path.join(self.ctl_dir, "agent.token")).read().strip()
        self.ca = os.path.join(self.ctl_dir, "tls", "ca.crt")
        for name in ("n1", "n2"):
            self.start_agent(name)

    def _spawn(self, args, log):
        out = open(log, "a")
        return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT,
                                env=dict(os.environ, BATON_NVML_LIBRARY="/nonexistent/libnvidia-ml.so.1"))

    def start_controller(self):
        os.makedirs(self.ctl_dir, exist_ok=True)
        url_file = os.path.join(self.ctl_dir, "server.url")
        if os.path.exists(url_file):
            os.remove(url_file)
        self.controller = self._spawn([self.baton, "server", "--data", self.ctl_dir, "--listen",
                                       "127.0.0.1:%d" % self.port, "--node-timeout", self.node_timeout],
                                      self.ctl_dir + ".log")
        for _ in range(3000):
            if os.path.exists(url_file) and open(url_file).read().strip():
                return
            if self.controller.poll() is not None:
                raise SystemExit("the controller exited at start: " + open(self.ctl_dir + ".log").read()[-2000:])
            time.sleep(0.01)
        raise SystemExit("the controller did not start in 30 s")

    def start_agent(self, name):
        d = os.path.join(self.work, name)
        self.agents[name] = self._spawn([self.baton, "agent", "--server", self.url, "--token", self.agent_token,
                                         "--name", name, "--data", d, "--gpus", "2xH100-80GB", "--tls-ca", self.ca,
                                         "--address", "127.0.0.1", "--allow-root-jobs"], d + ".log")

    def stop_all(self):
        for p in list(self.agents.values()) + [self.controller]:
            if p and p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.terminate()
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    p.kill()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build/release")
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--node-timeout", default="10s")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("run as root: the agents run root's jobs (--allow-root-jobs)")
    baton = os.path.realpath(os.path.join(args.build, "baton"))
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    work = tempfile.mkdtemp(prefix="baton-soak-")
    os.chmod(work, 0o755)
    os.makedirs(os.path.join(work, "locks"))
    doubles = os.path.join(work, "doubles.log")
    print("soak: %s for %.1f min, seed %d, work %s" % (baton, args.minutes, seed, work), flush=True)
    cluster = Cluster(baton, work, args.node_timeout)
    client = Client(cluster.url, cluster.token, ca=cluster.ca)
    stop = threading.Event()
    acked = {}  # id -> key
    keys = []
    faults = {}
    errors = []

    def submitter():
        pick = random.Random(seed + 1)
        n = 0
        c = Client(cluster.url, cluster.token, ca=cluster.ca, timeout=15)
        while not stop.is_set():
            n += 1
            key = "soak-%d-%d" % (seed, n)
            secs = pick.choice([1, 2, 5, 15])
            command = ("flock -n %s/locks/$BATON_JOB_ID sleep %d || echo \"two copies of job $BATON_JOB_ID "
                       "(restart $BATON_RESTART_COUNT)\" >> %s" % (work, secs, doubles))
            # A client retries its submit with the same key until it is answered (also after the
            # faults end: one that landed unanswered must be found, not left as a stray job).
            for _ in range(240):
                try:
                    job = c.submit(command, gpus=1, idempotency_key=key, workdir="/tmp", retries=20)
                    acked[job["id"]] = key
                    keys.append(key)
                    break
                except (BatonError, OSError):
                    time.sleep(0.5)
            time.sleep(0.3)

    def injector():
        end = time.monotonic() + args.minutes * 60
        while time.monotonic() < end and not stop.is_set():
            time.sleep(rng.uniform(5, 20))
            kind = rng.choice(["stop-agent-long", "stop-agent-short", "kill-agent", "kill-controller",
                               "stop-controller"])
            faults[kind] = faults.get(kind, 0) + 1
            name = rng.choice(sorted(cluster.agents))
            if kind.startswith("stop-agent"):
                p = cluster.agents[name]
                pause = rng.uniform(15, 40) if kind.endswith("long") else rng.uniform(1, 5)
                p.send_signal(signal.SIGSTOP)
                time.sleep(pause)
                p.send_signal(signal.SIGCONT)
            elif kind == "kill-agent":
                cluster.agents[name].kill()
                cluster.agents[name].wait()
                time.sleep(rng.uniform(0.5, 3))
                cluster.start_agent(name)
            elif kind == "kill-controller":
                cluster.controller.kill()
                cluster.controller.wait()
                time.sleep(rng.uniform(0.5, 3))
                cluster.start_controller()
            else:
                cluster.controller.send_signal(signal.SIGSTOP)
                time.sleep(rng.uniform(1, 5))
                cluster.controller.send_signal(signal.SIGCONT)
            print("  %5.0f s: %s %s" % (args.minutes * 60 - (end - time.monotonic()), kind,
                                        name if "agent" in kind else ""), flush=True)
        stop.set()

    threads = [threading.Thread(target=submitter), threading.Thread(target=injector)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("faults over; waiting for %d acknowledged jobs to end" % len(acked), flush=True)
    deadline = time.monotonic() + 600
    states = {}
    while time.monotonic() < deadline:
        try:
            jobs = client.jobs(state=["pending", "held", "running", "succeeded", "failed", "cancelled",
                                      "timed_out"])
        except (BatonError, OSError) as e:
            errors.append(str(e))
            time.sleep(1)
            continue
        states = {j["id"]: j["state"] for j in jobs}
        if all(states.get(i) in ("succeeded", "failed", "cancelled", "timed_out") for i in acked):
            break
        time.sleep(2)
    lost = sorted(i for i in acked if i not in states)
    unfinished = sorted(i for i in acked if states.get(i) not in ("succeeded", "failed", "cancelled", "timed_out")
                        and i in states)
    extra = len(states) - len(set(acked))  # jobs no acknowledged submit accounts for
    two = open(doubles).read().splitlines() if os.path.exists(doubles) else []
    cluster.stop_all()
    counts = {}
    for i in acked:
        counts[states.get(i, "lost")] = counts.get(states.get(i, "lost"), 0) + 1
    print("faults injected: %s" % ", ".join("%s %d" % kv for kv in sorted(faults.items())))
    print("jobs acknowledged: %d; by state: %s" % (len(acked), ", ".join("%s %d" % kv for kv in sorted(counts.items()))))
    print("nothing acknowledged lost: %s" % ("yes" if not lost else "NO: " + str(lost[:20])))
    print("nothing ran twice at once: %s" % ("yes" if not two else "NO: " + "; ".join(two[:10])))
    print("no duplicate from a retried submit: %s" % ("yes" if extra <= 0 else "NO: %d jobs more than keys" % extra))
    if unfinished:
        print("still not ended after 10 min: %s" % unfinished[:20])
    ok = not lost and not two and extra <= 0
    if not args.keep and ok:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print("work directory kept: %s" % work)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
