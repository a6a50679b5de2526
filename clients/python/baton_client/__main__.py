"""`python3 -m baton_client` (or `baton-py`): submit, jobs, show, queue, nodes, cancel, hold,
release, logs, wait, with the flag names and semantics of the `baton` command line: exit 0 on
success, 1 when the server or a job reports a failure (or the server cannot be reached), 2 for a
usage error (what the flags say wrong, found here or by the server before anything is made); errors go to
stderr as "baton: message"."""

import argparse
import datetime
import json
import re
import sys
import time

from . import (ACTION_STATES, TERMINAL_STATES, BatonError, BatonUnavailable, Client, job_ref, looks_like_shell,
               parse_begin, parse_duration, parse_refs, parse_targets)

# The spec's fields as `baton submit` names them in its own words: a submit the server refuses as
# written (its error names the field) is a usage error, exit 2, in the flag's words; the other
# fields keep their names, as `baton submit` checks the spec it made with the server's words.
_FLAGS = {"time_limit": "--time", "grace_period": "--grace", "signal": "--signal", "resources.gpus": "--gpus",
          "resources.memory": "--memory", "resources.gpu_memory": "--gpu-memory"}


class Usage(ValueError):
    """A usage error: "baton: message" and exit 2."""


def _usage_of(error):
    """A submit the server refused as written: the usage error `baton submit` gives for it."""
    flag = _FLAGS.get(error.field)
    message = error.message
    if flag and message.startswith(error.field + ": "):
        message = flag + message[len(error.field):]
    return Usage(message)


# ---- the command line ----

def _connection(p, top=False):
    # A subcommand's copy leaves the value given before it alone when it is not typed again.
    default = None if top else argparse.SUPPRESS
    p.add_argument("--server", default=default,
                   help="controller URL (default $BATON_SERVER, else BATON_HOME/server.url)")
    p.add_argument("--token", default=default, help="API token (default $BATON_TOKEN, else BATON_HOME/admin.token)")
    p.add_argument("--tls-ca", default=default, metavar="FILE",
                   help="CA certificates (PEM) an https:// server is checked against (default $BATON_TLS_CA, "
                        "else the system's CAs and BATON_HOME/tls/ca.crt)")


def _selection(p, what):
    p.add_argument("ids", nargs="*", metavar="ID", help="job ids and ranges: 7 10-20 3,5; tasks: 12_7 12_0-3")
    p.add_argument("--all", action="store_true", help="every %s job (with the filters below: those matching)" % what)
    p.add_argument("--user", help="only this user's jobs")
    p.add_argument("--name", help="only jobs of this name (or shell pattern, e.g. 'sweep-*')")
    p.add_argument("--state", help="only jobs in these states, e.g. pending,held")
    p.add_argument("--project", help="only this project's jobs")


def _parser():
    p = argparse.ArgumentParser(prog="baton-py", description="Baton's Python client", allow_abbrev=False)
    _connection(p, top=True)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("submit", help="submit a job: submit [OPTIONS] -- COMMAND [ARGS...]", allow_abbrev=False)
    _connection(s)
    s.add_argument("-g", "--gpus", default="0", help="GPUs (a fraction such as 0.25 shares one GPU)")
    s.add_argument("--gpu-type", help="GPU model, e.g. H100 or A100-40GB")
    s.add_argument("--gpu-memory", help="minimum GPU memory, e.g. 40GiB")
    s.add_argument("--nodes", type=int, help="nodes (GPUs are split evenly across them)")
    s.add_argument("--cpus", type=int, help="CPU cores per node")
    s.add_argument("--memory", help="memory per node, e.g. 64GiB")
    s.add_argument("-p", "--priority", help="low, normal, high or critical")
    s.add_argument("--project", help="project to account the job to")
    s.add_argument("--pool", help="pool (partition)")
    s.add_argument("--name", help="job name (default: the program's)")
    s.add_argument("-t", "--time", "--time-limit", dest="time", help="time limit, e.g. 90s, 30m, 2h")
    s.add_argument("--grace", help="grace between SIGTERM and SIGKILL (default 30s)")
    s.add_argument("--signal", help="SIG[@TIME]: send SIG (e.g. USR1) TIME before the time limit (default 60s)")
    s.add_argument("--retries", type=int, help="times a failed job is requeued")
    s.add_argument("--max-preemptions", type=int, dest="max_preemptions",
                   help="times it may be preempted and requeued (apart from --retries)")
    s.add_argument("--after", action="append", default=[], metavar="ID[,ID]",
                   help="start only after these jobs succeeded (repeatable; or 3,4)")
    s.add_argument("--after-any", action="append", default=[], metavar="ID[,ID]",
                   help="start only after these jobs ended, however")
    s.add_argument("--after-notok", action="append", default=[], metavar="ID[,ID]",
                   help="start only after these jobs ended other than succeeded (a clean-up job)")
    s.add_argument("--array", metavar="SPEC",
                   help="a job array, one task per index: 0-99%%8 (at most 8 at once), 1,5,9, 0-20:5")
    s.add_argument("--singleton", action="store_true",
                   help="start only once your earlier jobs of the same name have ended")
    s.add_argument("--begin", metavar="TIME",
                   help="not before TIME: +2h, now+30m, 14:00, 2026-12-01, 2026-12-01T09:00, or "
                        "2026-12-01T09:00:00Z (local time unless it ends in Z)")
    s.add_argument("--schedule", metavar="CRON",
                   help='recurring: a run at each time of this cron schedule, e.g. "0 3 * * *" (03:00 daily, '
                        'the controller\'s local time), "*/15 * * * *", @hourly; `crons` lists them')
    s.add_argument("--venv", help="run in this Python virtual environment (its bin/ first on PATH)")
    s.add_argument("--conda", help="run in this conda environment (a name or a prefix), through `conda run`")
    s.add_argument("--best-metric", metavar="NAME:min|max",
                   help="track this metric of $BATON_METRICS_FILE, its best value and that value's checkpoint")
    s.add_argument("--model", help="size the job from the model it serves or trains (`baton size --list`)")
    s.add_argument("--params", help="or from its parameter count: 7B, 70b, 125M")
    s.add_argument("--task", help="with --model: inference, finetune, lora, qlora or pretrain")
    s.add_argument("--precision", help="with --model: fp32, bf16, fp16, fp8, int8 or int4")
    s.add_argument("--seq", type=int, help="with --model: tokens per sequence (default 2048)")
    s.add_argument("--batch", type=int, help="with --model: sequences per GPU (default 1)")
    s.add_argument("-e", "--env", action="append", default=[], metavar="KEY=VALUE",
                   help="KEY=VALUE for the job's environment (repeatable)")
    s.add_argument("--workdir", help="working directory (default: the current one)")
    chosen = s.add_mutually_exclusive_group()
    chosen.add_argument("--preemptible", dest="preemptible", action="store_const", const=True, default=None,
                        help="it may be preempted and run on spot nodes (the default of batch jobs)")
    chosen.add_argument("--no-preemptible", dest="preemptible", action="store_const", const=False,
                        help="it is never preempted: it runs only within its project's guarantee and never on "
                             "spot nodes")
    s.add_argument("--process-per-gpu", action="store_true", help="one process per GPU, as torchrun --nproc-per-node")
    s.add_argument("--hold", action="store_true", help="submit held; `release` lets it run")
    s.add_argument("--json", action="store_true", help="print the job object instead of its id")
    s.add_argument("command", nargs=argparse.REMAINDER)
    j = sub.add_parser("jobs", help="list jobs (pending, held and running unless --all or --state)")
    _connection(j)
    j.add_argument("--state")
    j.add_argument("--all", action="store_true", help="include finished jobs")
    j.add_argument("--user")
    j.add_argument("--project")
    j.add_argument("--name", help="a job name or shell pattern")
    j.add_argument("--expand", action="store_true",
                   help="a job array's tasks a line each (12_7), instead of one line per array")
    j.add_argument("--json", action="store_true")
    sh = sub.add_parser("show", help="one job")
    _connection(sh)
    sh.add_argument("id", help="job id, or a task of an array (12_7)")
    sh.add_argument("--json", action="store_true")
    q = sub.add_parser("queue", help="pending jobs in the order they would start, with reasons")
    _connection(q)
    q.add_argument("-n", "--limit", type=int, default=50, help="how many (1-1000)")
    q.add_argument("--json", action="store_true")
    n = sub.add_parser("nodes", help="list nodes and their GPUs")
    _connection(n)
    n.add_argument("--json", action="store_true")
    for action, what in (("cancel", "pending, held or running"), ("hold", "pending"), ("release", "held")):
        a = sub.add_parser(action, help="%s jobs: ids, ranges or filters" % action)
        _connection(a)
        _selection(a, what)
    lg = sub.add_parser("logs", help="a job's output (each node's, prefixed, for a job on several)")
    _connection(lg)
    lg.add_argument("id", help="job id, or a task of an array (12_7)")
    lg.add_argument("-f", "--follow", action="store_true", help="keep printing until the job ends")
    lg.add_argument("--node", help="only this node's log, as it is")
    cr = sub.add_parser("crons", help="recurring jobs: next run, last run; `crons delete ID` stops one")
    _connection(cr)
    cr.add_argument("action", nargs="?", choices=("delete", "rm"), help="delete: stop recurring jobs")
    cr.add_argument("ids", nargs="*", metavar="ID", help="the recurring jobs' ids (the ID column)")
    cr.add_argument("--user", help="only this user's")
    cr.add_argument("--json", action="store_true")
    w = sub.add_parser("wait", help="wait for jobs to end; 1 if one did not succeed")
    _connection(w)
    w.add_argument("ids", nargs="+", metavar="ID",
                   help="job ids, ranges, tasks (12_7, 12_0-3); an array's id waits for all its tasks")
    w.add_argument("--timeout", help="give up after this long, e.g. 10m")
    return p


def _gpus(job):
    g = job["resources"]["gpus"]
    return str(int(g)) if float(g).is_integer() else ("%.3f" % float(g)).rstrip("0")


def _table(rows):
    """Columns two spaces apart, as the CLI's tables."""
    width = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("".join(cell + " " * (width[i] - len(cell) + 2) if i + 1 < len(row) else cell
                      for i, cell in enumerate(row)))


def _id_list(words, flag):
    """--after 3,4 --after 5: the ids, as the CLI reads them (an empty part is left out)."""
    out = []
    for word in words:
        for part in word.split(","):
            if not part:
                continue
            if not re.fullmatch(r"\s*[+-]?[0-9]+\s*", part):
                raise Usage("Could not convert: %s = %s (see `baton-py submit --help`)" % (flag, word))
            out.append(int(part))
    return out


_STATE_ORDER = ("pending", "held", "running", "succeeded", "failed", "cancelled", "timed_out")


def _jobs_table(jobs, expand):
    """ID NAME USER STATE GPUS; an array folded into one line, 12_[0-99%8] with its tasks'
    states counted ("2 running 6 pending"), as `baton jobs` does, unless `expand` (12_7 each)."""
    tasks = {}
    for job in jobs:
        if job.get("array_id") and not expand:
            tasks.setdefault(job["array_id"], []).append(job)
    rows = [["ID", "NAME", "USER", "STATE", "GPUS"]]
    for job in jobs:
        array = job.get("array_id")
        if array and not expand:
            if tasks[array][0] is not job:
                continue  # one line per array, at its first task
            counts = {}
            for t in tasks[array]:
                counts[t["state"]] = counts.get(t["state"], 0) + 1
            state = " ".join("%d %s" % (counts[st], st) for st in sorted(
                counts, key=lambda st: _STATE_ORDER.index(st) if st in _STATE_ORDER else len(_STATE_ORDER)))
            rows.append(["%d_[%s]" % (array, job.get("array", "")), job["name"][:20], job["user"], state,
                         _gpus(job)])
        else:
            ref = "%d_%d" % (array, job["array_index"]) if array else str(job["id"])
            rows.append([ref, job["name"][:20], job["user"], job["state"], _gpus(job)])
    _table(rows)


def _check_submit(args):
    """What `baton submit`'s flag parser finds wrong before it sends anything (exit 2); the values read."""
    # What its flag parser cannot convert comes first, as with the CLI.
    args.after, args.after_any, args.after_notok = (_id_list(args.after, "--after"),
                                                    _id_list(args.after_any, "--after-any"),
                                                    _id_list(args.after_notok, "--after-notok"))
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if command and len(command[0]) > 1 and command[0].startswith("-"):
        raise Usage('submit: unknown option "%s" (see `baton-py submit --help`; the command goes after --)'
                    % command[0][:64])
    if not command:
        raise Usage("no command: use `baton-py submit [OPTIONS] -- COMMAND [ARGS...]`")
    args.command = command
    # What the flags are as `baton submit` reads them; the server checks the values (exit 2 for
    # what it refuses as written, as `baton submit` would, in the flag's words).
    args.gpus = int(args.gpus) if args.gpus.isdigit() and args.gpus.isascii() else args.gpus
    # As `baton submit` reads them, after Slurm: a number alone is minutes for --time, MiB for a memory size.
    if args.time and args.time.isdigit() and args.time.isascii():
        args.time += "m"
    if args.memory and re.fullmatch(r"[0-9.]+", args.memory):
        args.memory += "MiB"
    if args.gpu_memory and re.fullmatch(r"[0-9.]+", args.gpu_memory):
        args.gpu_memory += "MiB"
    for kv in args.env:
        if "=" not in kv or kv.startswith("="):
            raise Usage('--env: expected KEY=VALUE, got "%s"' % kv)
    if args.begin:
        args.begin = parse_begin(args.begin, "--begin")


def _check(args):
    if args.cmd == "submit":
        _check_submit(args)
    elif args.cmd in ACTION_STATES:
        try:
            ids, ranges = parse_targets(args.ids)
        except ValueError as e:
            raise Usage("%s: %s" % (args.cmd, e)) from None
        if not ids and not ranges and not (args.all or args.user or args.name or args.state or args.project):
            raise Usage("%s: no jobs named: give ids or ranges (7, 10-20), or --all, --user, --name, --state "
                        "or --project" % args.cmd)
    elif args.cmd == "wait":
        if args.timeout is not None:
            args.timeout = parse_duration(args.timeout, "--timeout") / 1000.0
        try:
            args.ids = parse_refs(args.ids)
        except ValueError as e:
            raise Usage("wait: %s" % e) from None
    elif args.cmd in ("show", "logs"):
        args.id = job_ref(args.id)
    elif args.cmd == "queue" and not 1 <= args.limit <= 1000:
        raise Usage("--limit: %d not in [1 - 1000]" % args.limit)


def _model(args):
    """--model/--params with --task, --precision, --seq, --batch: the spec's `model`, as `baton
    submit` sends it."""
    extra = [flag for flag, value in (("--task", args.task), ("--precision", args.precision),
                                      ("--seq", args.seq), ("--batch", args.batch)) if value is not None]
    if not args.model and not args.params:
        if extra:
            raise Usage("%s: sizes a job from its model: give --model NAME or --params 7B too" % extra[0])
        return None
    if args.model and args.params:
        raise Usage("--model and --params: one or the other")
    model = {"name": args.model} if args.model else {"params": args.params}
    for key in ("task", "precision", "seq", "batch"):
        if getattr(args, key) is not None:
            model[key] = getattr(args, key)
    return model


def _submit(client, args):
    command = args.command
    try:
        job = _submitted(client, args, command)
    except BatonUnavailable:
        raise
    except BatonError as e:
        if e.field is not None and e.status == 400:
            raise _usage_of(e) from None
        raise
    print(json.dumps(job) if args.json else job["id"])
    if job.get("schedule") and job.get("begin"):
        print("recurring job %d (%s): first run at %s; `crons` lists it, `crons delete %d` stops it"
              % (job["id"], job["schedule"], job["begin"], job["id"]), file=sys.stderr)
    return 0


def _submitted(client, args, command):
    return client.submit(command[0] if looks_like_shell(command) else command, gpus=args.gpus, name=args.name,
                         priority=args.priority, project=args.project, pool=args.pool,
                         time_limit=args.time or None, nodes=args.nodes, retries=args.retries, max_preemptions=args.max_preemptions,
                         workdir=args.workdir, env=args.env or None, process_per_gpu=args.process_per_gpu,
                         after=args.after or None, gpu_type=args.gpu_type or None,
                         gpu_memory=args.gpu_memory or None, cpus=args.cpus, memory=args.memory or None,
                         grace=args.grace or None, signal=args.signal or None, hold=args.hold,
                         preemptible=args.preemptible, array=args.array, after_any=args.after_any or None,
                         after_notok=args.after_notok or None, singleton=args.singleton,
                         begin=args.begin or None, schedule=args.schedule or None, model=_model(args),
                         venv=args.venv, conda=args.conda, best_metric=args.best_metric)


def _act(client, args):
    """cancel/hold/release: every job named, each on its own; exit 1 if one failed."""
    ids = client.select(*args.ids, action=args.cmd, all=args.all, user=args.user, name=args.name,
                        state=args.state.split(",") if args.state else None, project=args.project)
    if not ids:
        print("no matching jobs")
        return 0
    done_word = {"cancel": "cancelled", "hold": "held", "release": "released"}[args.cmd]
    failed = []
    for job_id in ids:
        try:
            job = getattr(client, args.cmd)(job_id)
        except BatonUnavailable:
            raise
        except BatonError as e:
            name = "job %s" % job_id
            print("baton: " + (e.message if e.message.startswith(name + " ") else name + ": " + e.message),
                  file=sys.stderr)
            failed.append(str(job_id))
            continue
        # A job that had already ended stays as it was: say so rather than "cancelled".
        if job.get("state") in TERMINAL_STATES and job["state"] != "cancelled":
            print("job %s: already %s" % (job_id, job["state"]))
        else:
            print("job %s: %s" % (job_id, done_word))
    if not failed:
        return 0
    listed = ", ".join(failed[:20]) + (", ..." if len(failed) > 20 else "")
    print("baton: could not %s %d of %d job%s: %s" % (args.cmd, len(failed), len(ids), "" if len(ids) == 1 else "s",
                                                     listed), file=sys.stderr)
    return 1


def _wait(client, args):
    """As `baton wait`: every job, until all ended; 1 if one did not succeed or time ran out."""
    limit = args.timeout
    left = []
    for ref in args.ids:  # an array's id stands for every task of the array
        job = client.show(ref)
        if "_" not in ref and job.get("array_id") == job["id"]:
            left += ["%d_%d" % (t["array_id"], t["array_index"]) for t in client.jobs(array=job["id"])]
        else:
            left.append(ref)
    start, pause, ok = time.monotonic(), 0.02, True
    while left:
        still = []
        for job_id in left:
            job = client.show(job_id)
            if job["state"] not in TERMINAL_STATES:
                still.append(job_id)
            elif job["state"] != "succeeded":
                ok = False
                detail = " (%s)" % job["reason_detail"] if job.get("reason_detail") else ""
                print("baton: job %s %s%s" % (job_id, job["state"], detail), file=sys.stderr)
        left = still
        if not left:
            break
        if limit is not None and time.monotonic() - start >= limit:
            print("baton: timed out waiting for %d job(s)" % len(left), file=sys.stderr)
            return 1
        time.sleep(pause)
        pause = min(pause * 2, 1.0)
    return 0 if ok else 1


def _local_minute(rfc3339):
    at = datetime.datetime.strptime(rfc3339[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    return at.astimezone().strftime("%Y-%m-%d %H:%M %Z")


def _crons(client, args):
    """As `baton crons`: the table (or JSON); with delete, each id stopped; 1 if one failed."""
    if args.action:
        if not args.ids:
            raise Usage("crons delete: name the recurring jobs by id")
        code = 0
        for cron_id in args.ids:
            try:
                cron = client.delete_cron(cron_id)
            except (BatonError, ValueError) as e:
                print("baton: %s" % (e.message if isinstance(e, BatonError) else e), file=sys.stderr)
                code = 1
                continue
            tail = ""
            if cron["job"]["state"] == "running":
                tail = " (its run, job %d, goes on to its end)" % cron["job"]["id"]
            print("recurring job %s: deleted%s" % (cron_id, tail))
        return code
    crons = client.crons(user=args.user)
    if args.json:
        print(json.dumps({"crons": crons}))
        return 0
    if not crons:
        print('no recurring jobs (submit one with --schedule "0 3 * * *")')
        return 0
    rows = [["ID", "USER", "NAME", "SCHEDULE", "NEXT RUN", "JOB", "RUNS", "LAST RUN", "COMMAND"]]
    for cron in crons:
        job, last = cron["job"], cron.get("last")
        state = job["state"]
        nxt = ("running now" if state == "running" else "held" if state == "held"
               else _local_minute(cron["next_run"]) if cron.get("next_run") else "-")
        command = job["command"] if isinstance(job["command"], str) else " ".join(job["command"])
        if last:
            last_text = "%d %s" % (last["id"], last["state"])
            if last["state"] == "failed" and last.get("exit_code") is not None:
                last_text += " (exit %d)" % last["exit_code"]
        else:
            last_text = "-"
        rows.append([str(cron["id"]), cron["user"], cron["name"] or "-", cron["schedule"], nxt, str(job["id"]),
                     str(cron["runs"]), last_text, command if len(command) <= 60 else command[:57] + "..."])
    _table(rows)
    return 0


def _run(client, args):
    if args.cmd == "submit":
        return _submit(client, args)
    if args.cmd == "crons":
        return _crons(client, args)
    if args.cmd in ACTION_STATES:
        return _act(client, args)
    if args.cmd == "wait":
        return _wait(client, args)
    if args.cmd == "jobs":
        state = args.state or (None if args.all else ["pending", "held", "running"])
        jobs = client.jobs(state=state, user=args.user, project=args.project, name=args.name)
        if args.json:
            print(json.dumps({"jobs": jobs}))
        else:
            _jobs_table(jobs, args.expand)
    elif args.cmd == "show":
        job = client.show(args.id)
        if args.json:
            print(json.dumps(job))
        else:
            print("%-14s %s" % ("id", job["id"]))
            if job.get("array_id"):
                print("%-14s %d_%d of array %d (%s)" % ("array task", job["array_id"], job["array_index"],
                                                       job["array_id"], job.get("array", "")))
            for key in ("name", "user", "project", "pool", "priority", "state", "reason_detail",
                        "restarts", "submitted_at", "started_at", "finished_at", "exit_code"):
                if job.get(key) is not None:
                    print("%-14s %s" % (key.replace("_", " "), job[key]))
    elif args.cmd == "queue":
        jobs = client.queue(limit=args.limit)
        if args.json:
            print(json.dumps({"jobs": jobs}))
        else:
            rows = [["#", "ID", "USER", "PROJECT", "PRIORITY", "GPUS", "REASON"]]
            for pos, job in enumerate(jobs, 1):
                why = job.get("reason_detail") or job.get("reason") or ""
                rows.append([str(pos), str(job["id"]), job["user"], job["project"], job["priority"], _gpus(job),
                             why if len(why) <= 100 else why[:97] + "..."])
            _table(rows)
    elif args.cmd == "nodes":
        nodes = client.nodes()
        if args.json:
            print(json.dumps({"nodes": nodes}))
        else:
            rows = [["NAME", "STATE", "POOL", "GPUS", "MODEL", "TOPOLOGY"]]
            for node in nodes:
                gpus = node.get("gpus") or []
                rows.append([node["name"], node.get("state", ""), node.get("pool", ""), str(len(gpus)),
                             gpus[0].get("model", "-") if gpus else "-", node.get("topology", "")])
            _table(rows)
    elif args.cmd == "logs":
        if args.follow:
            for chunk in client.logs(args.id, follow=True, node=args.node):
                sys.stdout.write(chunk)
                sys.stdout.flush()
        else:
            sys.stdout.write(client.logs(args.id, node=args.node))
    return 0


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        _check(args)
        try:
            client = Client(server=args.server, token=args.token, ca=args.tls_ca)
        except BatonUnavailable as e:
            raise BatonUnavailable(e.message.replace("pass server=URL", "pass --server URL")) from None
        return _run(client, args)
    except BatonError as e:
        # The client's words for its arguments, as the flags the command line has for them.
        print("baton: " + e.message.replace("pass ca=FILE", "pass --tls-ca FILE"), file=sys.stderr)
        return 1
    except ValueError as e:
        text = str(e)
        print("baton: " + ("--tls-ca " + text[len("ca: "):] if text.startswith("ca: ") else text), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
