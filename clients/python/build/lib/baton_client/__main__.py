"""`python3 -m baton_client` (or `baton-py`): submit, jobs, show, cancel, logs, wait, with the
semantics of the `baton` command line: exit 0 on success, 1 when the server or a job reports a
failure (or the server cannot be reached), 2 for a usage error found before anything is sent;
errors go to stderr as "baton: message"."""

import argparse
import json
import sys

from . import BatonError, Client


def _duration(text):
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    try:
        return float(text[:-1]) * units[text[-1]] if text and text[-1] in units else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a duration such as 90s, 30m or 2h" % text) from None


def _parser():
    p = argparse.ArgumentParser(prog="baton-py", description="Baton's Python client")
    p.add_argument("--server", help="controller URL (default $BATON_SERVER, else BATON_HOME/server.url)")
    p.add_argument("--token", help="API token (default $BATON_TOKEN, else BATON_HOME/admin.token)")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("submit", help="submit a job: submit [flags] -- COMMAND [ARGS...]")
    s.add_argument("-g", "--gpus", type=float, default=0)
    s.add_argument("--name")
    s.add_argument("--priority", choices=["low", "normal", "high", "critical"])
    s.add_argument("--project")
    s.add_argument("--pool")
    s.add_argument("--time-limit")
    s.add_argument("--nodes", type=int)
    s.add_argument("--retries", type=int)
    s.add_argument("--workdir")
    s.add_argument("--process-per-gpu", action="store_true")
    s.add_argument("-e", "--env", action="append", default=[], metavar="KEY=VALUE")
    s.add_argument("--json", action="store_true")
    s.add_argument("command", nargs=argparse.REMAINDER)
    j = sub.add_parser("jobs", help="list jobs (pending, held and running unless --all or --state)")
    j.add_argument("--state")
    j.add_argument("--all", action="store_true", help="include finished jobs")
    j.add_argument("--user")
    j.add_argument("--project")
    j.add_argument("--json", action="store_true")
    sh = sub.add_parser("show", help="one job")
    sh.add_argument("id", type=int)
    sh.add_argument("--json", action="store_true")
    c = sub.add_parser("cancel", help="cancel jobs")
    c.add_argument("ids", type=int, nargs="+")
    lg = sub.add_parser("logs", help="a job's output")
    lg.add_argument("id", type=int)
    lg.add_argument("-f", "--follow", action="store_true")
    w = sub.add_parser("wait", help="wait for jobs to end; 1 if one did not succeed")
    w.add_argument("ids", type=int, nargs="+")
    w.add_argument("--timeout", type=_duration)
    return p


def _gpus(job):
    g = job["resources"]["gpus"]
    return str(int(g)) if float(g).is_integer() else str(g)


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        client = Client(server=args.server, token=args.token)
        if args.cmd == "submit":
            command = args.command[1:] if args.command[:1] == ["--"] else args.command
            if not command:
                print("baton: submit: no command (put it after --)", file=sys.stderr)
                return 2
            env = {}
            for kv in args.env:
                if "=" not in kv:
                    print("baton: --env: expected KEY=VALUE, got %r" % kv, file=sys.stderr)
                    return 2
                k, v = kv.split("=", 1)
                env[k] = v
            job = client.submit(command, gpus=args.gpus, name=args.name, priority=args.priority,
                                project=args.project, pool=args.pool, time_limit=args.time_limit,
                                nodes=args.nodes, retries=args.retries, workdir=args.workdir,
                                env=env or None, process_per_gpu=args.process_per_gpu)
            print(json.dumps(job) if args.json else job["id"])
        elif args.cmd == "jobs":
            state = args.state or (None if args.all else ["pending", "held", "running"])
            jobs = client.jobs(state=state, user=args.user, project=args.project)
            if args.json:
                print(json.dumps({"jobs": jobs}))
            else:
                print("%-6s %-20s %-10s %-10s %s" % ("ID", "NAME", "USER", "STATE", "GPUS"))
                for job in jobs:
                    print("%-6d %-20s %-10s %-10s %s" % (job["id"], job["name"][:20], job["user"], job["state"],
                                                          _gpus(job)))
        elif args.cmd == "show":
            job = client.show(args.id)
            if args.json:
                print(json.dumps(job))
            else:
                for key in ("id", "name", "user", "project", "pool", "priority", "state", "reason_detail",
                            "restarts", "submitted_at", "started_at", "finished_at", "exit_code"):
                    if job.get(key) is not None:
                        print("%-14s %s" % (key.replace("_", " "), job[key]))
        elif args.cmd == "cancel":
            rc = 0
            for job_id in args.ids:
                try:
                    client.cancel(job_id)
                except BatonError as e:
                    print("baton: " + e.message, file=sys.stderr)
                    rc = 1
            return rc
        elif args.cmd == "logs":
            if args.follow:
                for chunk in client.logs(args.id, follow=True):
                    sys.stdout.write(chunk)
                    sys.stdout.flush()
            else:
                sys.stdout.write(client.logs(args.id))
        elif args.cmd == "wait":
            ok = True
            for job_id in args.ids:
                try:
                    job = client.wait(job_id, timeout=args.timeout)
                except TimeoutError:
                    print("baton: timed out waiting for job %d" % job_id, file=sys.stderr)
                    return 1
                if job["state"] != "succeeded":
                    ok = False
                    detail = " (%s)" % job["reason_detail"] if job.get("reason_detail") else ""
                    print("baton: job %d %s%s" % (job_id, job["state"], detail), file=sys.stderr)
            return 0 if ok else 1
        return 0
    except BatonError as e:
        print("baton: " + e.message, file=sys.stderr)
        return 1
    except ValueError as e:
        print("baton: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
