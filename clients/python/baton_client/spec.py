"""What the client itself must read, needing its own clock or files: begin times ("+2h", "14:00"),
durations for its own waits, the words that name jobs ("12", "10-20", "12_7"), the shell heuristic,
and the job spec that `baton submit` would send. Everything else in a spec (durations, sizes,
arrays, limits) the server checks: a submit's dry run (`Client.submit(..., dry_run=True)`,
POST /v1/jobs?dry_run=true) asks it without making anything."""

import calendar
import datetime
import os
import re
import time

# A one-word command with one of these runs under /bin/sh -c, as with `baton submit`.
_SHELL_CHARACTERS = set(" \t;|&$<>(){}*?`'\"\n")


def looks_like_shell(command):
    """True for a one-word argv that `baton submit` would run under /bin/sh -c ("make && ./run")."""
    return len(command) == 1 and any(c in _SHELL_CHARACTERS for c in command[0])


# ---- what needs the client's clock: durations of its own waits, begin times ----

_MAX_DURATION_MS = 366 * 86400 * 1000
_MAX_RANGE = 100000  # ids one range of task refs may name, as the CLI's


def _digits(text, i):
    j = i
    while j < len(text) and "0" <= text[j] <= "9":
        j += 1
    return j


def _parse_clock(text, field):
    """Slurm's clock forms, as the CLI's ParseDuration: "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS"."""
    def bad(why):
        return ValueError('%s: %s (got "%s"; Slurm\'s forms are MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS)'
                          % (field, why, text[:64]))
    rest, days, with_days = text, 0, False
    if "-" in rest:
        d, rest = rest.split("-", 1)
        if not d or len(d) > 3 or not d.isdigit() or not d.isascii():
            raise bad("expected days before '-'")
        days, with_days = int(d), True
    parts = rest.split(":")
    for part in parts:
        if not part or len(part) > 7 or not part.isdigit() or not part.isascii():
            raise bad("expected whole numbers between the ':'")
    if len(parts) > 3:
        raise bad("too many ':'")
    units = (3600, 60, 1) if with_days or len(parts) == 3 else (60, 1)
    seconds = days * 86400 + sum(int(p) * u for p, u in zip(parts, units))
    if seconds * 1000 > _MAX_DURATION_MS:
        raise bad("longer than 366 days")
    return seconds * 1000


def parse_duration(text, field):
    """Milliseconds, as the CLI's ParseDuration reads "90", "90s", "30m", "2h", "1h30m", "1.5h", "500ms", and
    Slurm's "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM", "D-HH:MM:SS"."""
    def bad(why):
        return ValueError('%s: %s (got "%s"; use seconds or forms like 90s, 30m, 2h, 1h30m, 2:30:00)'
                          % (field, why, text[:64]))
    if not text:
        raise bad("empty duration")
    if len(text) > 32:
        raise bad("duration too long")
    if ":" in text or "-" in text:
        return _parse_clock(text, field)
    total, i, bare = 0, 0, True
    while i < len(text):
        j = _digits(text, i)
        if j == i:
            raise bad("expected a number")
        n = int(text[i:j])
        if n > 1000000000:
            raise bad("number too large")
        i, frac, scale = j, 0, 1
        if i < len(text) and text[i] == ".":  # a decimal part, as Slurm users type 1.5h
            i += 1
            if i >= len(text) or not "0" <= text[i] <= "9":
                raise bad("expected digits after '.'")
            while i < len(text) and "0" <= text[i] <= "9":
                if scale >= 1000000000:
                    raise bad("too many decimals")
                frac, scale = frac * 10 + int(text[i]), scale * 10
                i += 1
        unit = 1000
        if i < len(text):
            bare = False
            rest = text[i:]
            if rest.startswith("ms"):
                unit, i = 1, i + 2
            elif rest[0] in "smhd":
                unit, i = {"s": 1000, "m": 60000, "h": 3600000, "d": 86400000}[rest[0]], i + 1
            else:
                raise bad("unknown unit")
        elif not bare:
            raise bad("a number without a unit after another unit")
        total += n * unit + (frac * unit + scale // 2) // scale  # to the millisecond, half up
        if total > _MAX_DURATION_MS:
            raise bad("longer than 366 days")
    return total


def _rfc3339(ms):
    """Milliseconds since the epoch as the server writes times: 2026-12-01T09:00:00.000Z."""
    secs, frac = divmod(int(ms), 1000)
    t = time.gmtime(secs)
    return "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (t.tm_year, t.tm_mon, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec,
                                                   frac)


_INT = r"\s*([+-]?[0-9]+)"  # what sscanf's %d takes
_UTC = re.compile(r"\s*([+-]?[0-9]{1,4})-\s*([+-]?[0-9]{1,2})-\s*([+-]?[0-9]{1,2})T\s*([+-]?[0-9]{1,2}):"
                  r"\s*([+-]?[0-9]{1,2}):\s*([+-]?[0-9]{1,2})(?:\.([0-9]{1,3}))?")
_LOCAL_DATE = [re.compile(f) for f in (
    _INT + "-" + _INT + "-" + _INT + "T" + _INT + ":" + _INT + ":" + _INT,
    _INT + "-" + _INT + "-" + _INT + "T" + _INT + ":" + _INT,
    _INT + "-" + _INT + "-" + _INT)]
_LOCAL_CLOCK = [re.compile(f) for f in (_INT + ":" + _INT + ":" + _INT, _INT + ":" + _INT)]


def parse_begin(value, field="--begin", now=None):
    """A begin time as the job spec's `begin` takes it (RFC 3339 UTC, as the CLI sends it), from
    what `baton submit --begin` reads: "+2h" or "now+30m" (from now), "now", "14:00" (today, or
    tomorrow once that time has passed), "2026-12-01", "2026-12-01T09:00[:SS]" (local time), or
    "2026-12-01T09:00:00Z" (UTC); or a datetime (a naive one is local time)."""
    now_ms = int((time.time() if now is None else now) * 1000)
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.astimezone()  # local time, as the CLI's local forms
        return _rfc3339(round(value.timestamp() * 1000))
    if not isinstance(value, str):
        raise ValueError("%s: a time string or a datetime, not %r" % (field, value))
    text = value

    def bad():
        return ValueError('%s: "%s" is not a time (+2h, now+30m, 14:00, 2026-12-01, 2026-12-01T09:00, or RFC 3339)'
                          % (field, text[:64]))
    t = text[3:] if text.startswith("now") else text
    if t == "" and text == "now":
        return _rfc3339(now_ms)
    if t.startswith("+"):
        try:
            return _rfc3339(now_ms + parse_duration(t[1:], field))
        except ValueError:
            raise bad() from None
    if len(t) != len(text):
        raise bad()  # "now" followed by anything but +DURATION
    m = _UTC.match(text)
    if m and text[-1:] in ("Z", "z"):
        y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
        ms = int((m.group(7) + "00")[:3]) if m.group(7) else 0
        y, mo = y + (mo - 1) // 12, (mo - 1) % 12 + 1  # as timegm carries what overflows
        try:
            secs = calendar.timegm((y, mo, 1, 0, 0, 0)) + (d - 1) * 86400 + h * 3600 + mi * 60 + s
        except (ValueError, OverflowError):
            raise bad() from None
        return _rfc3339(secs * 1000 + ms)
    # Local time, as Slurm reads --begin.
    now_tm = time.localtime(now_ms // 1000)
    y, mo, d, h, mi, s = now_tm.tm_year, now_tm.tm_mon, now_tm.tm_mday, 0, 0, 0
    clock_only = False
    for pattern in _LOCAL_DATE:
        m = pattern.fullmatch(text)
        if m:
            numbers = [int(g) for g in m.groups()] + [0, 0, 0]
            y, mo, d, h, mi, s = numbers[:6]
            break
    else:
        for pattern in _LOCAL_CLOCK:
            m = pattern.fullmatch(text)
            if m:
                h, mi, s = ([int(g) for g in m.groups()] + [0])[:3]
                mo = d = None
                clock_only = True
                break
        else:
            raise bad()
    if clock_only:
        mo, d = now_tm.tm_mon, now_tm.tm_mday
    elif not (0 < mo <= 12 and 0 < d <= 31):
        raise bad()
    if not (0 <= h <= 23 and 0 <= mi <= 59 and 0 <= s <= 60):
        raise bad()
    try:
        at = int(time.mktime((y, mo, d, h, mi, s, 0, 0, -1)))
    except (OverflowError, ValueError):
        raise bad() from None
    if at == -1:
        raise bad()
    if clock_only and at * 1000 < now_ms:
        at += 24 * 3600
    return _rfc3339(at * 1000)


def _job_ids(value):
    """after, after_any, after_notok: an id or ids, as a list (the server checks them)."""
    if value is None or isinstance(value, (list, tuple)):
        return value
    return [value]


def job_spec(command, gpus=0, name=None, priority=None, project=None, pool=None, time_limit=None, env=None,
             workdir=None, retries=None, nodes=None, gpu_type=None, process_per_gpu=False, after=None,
             cpus=None, memory=None, gpu_memory=None, grace=None, signal=None, hold=False, preemptible=None,
             array=None, after_any=None, after_notok=None, singleton=False, begin=None, schedule=None,
             model=None, venv=None, conda=None, best_metric=None, max_preemptions=None):
    """The JSON job spec (docs/api.md) that `baton submit` sends for the same flags.

    command: a list of strings (the argv) or a string (run by /bin/sh -c); gpus: a number
    (fractions below 1 share a GPU; a string such as "0.25" is taken too); name: default the
    program's name, "sh" for a string; time_limit, grace: durations (seconds, or "90s", "30m",
    "2h", "1h30m"); memory (per node), gpu_memory (per GPU): sizes (bytes, or "64GiB", "80GB");
    signal: "USR1@2m" as Slurm's --signal; env: a dict, or "KEY=VALUE" strings; after (succeeded
    first), after_any (ended first, however), after_notok (ended first, other than succeeded): an
    id or ids; singleton: start only once the user's earlier jobs of the same name have ended;
    begin: not before then, a datetime or what `baton submit --begin` takes ("+2h", "now+30m",
    "14:00", "2026-12-01", "2026-12-01T09:00" local time, "...Z" UTC), sent as RFC 3339 UTC;
    array: "0-99%8", "1,5,9" or "0-20:5", a job per index;
    schedule: a cron schedule ("0 3 * * *", "*/15 * * * *", "@daily") in the controller's local
    time: a recurring job, a run at each time it names (Client.crons() lists them);
    model: size the job from the model it serves or trains, a name ("Llama-3-8B") or a dict
    {"name" or "params": "7B", "task", "precision", "seq", "batch", ...} as `baton submit
    --model` sends it: the gpus and gpu_memory not given are filled in at submit; venv: a
    virtual environment's directory (relative to the current one), conda: an environment's
    name or prefix, that the job runs in on its nodes; best_metric: "loss:min" or "acc:max",
    tracked from its metrics file (the job's `metric` holds its last and best);
    max_preemptions: how many times it may be preempted and requeued (apart from retries);
    workdir: default the current directory.

    Only what needs the client's own clock or files is read here (begin, workdir, venv, env
    given as "KEY=VALUE" strings); the server checks the rest, with its words, and the error it
    raises names the field (BatonError.field). Client.submit(..., dry_run=True) asks it
    without making anything."""
    if isinstance(command, tuple):
        command = list(command)
    if name is None and isinstance(command, str):
        name = "sh"
    elif name is None and isinstance(command, list) and command and isinstance(command[0], str):
        name = os.path.basename(command[0])
    spec = {"command": command, "name": name, "resources": {"gpus": gpus}}
    if isinstance(env, (list, tuple)):
        pairs = {}
        for kv in env:
            if not isinstance(kv, str) or "=" not in kv or kv.startswith("="):
                raise ValueError('--env: expected KEY=VALUE, got "%s"' % (kv,))
            key, value = kv.split("=", 1)
            pairs[key] = value
        env = pairs
    after, after_any, after_notok = _job_ids(after), _job_ids(after_any), _job_ids(after_notok)
    if begin is not None and begin != "":
        begin = parse_begin(begin)
    else:
        begin = None
    if not workdir:
        try:
            workdir = os.getcwd()  # the CLI's default: where it runs
        except OSError:
            workdir = None
    for key, value in (("priority", priority), ("project", project), ("pool", pool),
                       ("time_limit", time_limit), ("grace_period", grace), ("signal", signal),
                       ("retries", retries), ("max_preemptions", max_preemptions), ("env", env), ("workdir", workdir), ("after", after or None),
                       ("after_any", after_any or None), ("after_notok", after_notok or None),
                       ("begin", begin), ("array", array), ("schedule", schedule or None),
                       ("model", model or None),
                       ("venv", os.path.abspath(venv).rstrip("/") or "/" if venv else None),
                       ("conda", conda or None), ("best_metric", best_metric or None)):
        if value is not None:
            spec[key] = value
    for key, value in (("nodes", nodes), ("cpus", cpus), ("gpu_type", gpu_type), ("memory", memory),
                       ("gpu_memory", gpu_memory)):
        if value is not None:
            spec["resources"][key] = value
    for key, value in (("process_per_gpu", process_per_gpu), ("hold", hold), ("singleton", singleton)):
        if value:
            spec[key] = True
    if preemptible is not None:  # None: the server's default (a batch job is preemptible)
        spec["preemptible"] = bool(preemptible)
    return spec


def _bad_ref(word):
    return ValueError('"%s" is not a job id or a range of them such as 10-20' % str(word)[:64])


def _ref_number(text, word, zero=False):
    if not re.fullmatch(r"[0-9]+", text) or int(text) < (0 if zero else 1):
        raise _bad_ref(word)
    return int(text)


def _ref_parts(word):
    """The parts of one word as the CLI reads them: (prefix, low, high), where prefix is "12_" for
    tasks of array 12 and "" for job ids; low == high for one."""
    if isinstance(word, bool) or not isinstance(word, (int, str)):
        raise ValueError("%r is not a job id, a range such as 10-20 or a task such as 12_7" % (word,))
    if isinstance(word, int):
        if word <= 0:
            raise _bad_ref(word)
        return [("", word, word)]
    out = []
    for part in word.split(","):
        part = part.strip()
        if not part:
            continue
        prefix = ""
        if "_" in part:
            array, part = part.split("_", 1)
            prefix = "%d_" % _ref_number(array, word)
        if "-" in part:
            lo_text, hi_text = part.split("-", 1)
            lo, hi = _ref_number(lo_text, word, bool(prefix)), _ref_number(hi_text, word, bool(prefix))
            if hi < lo:
                raise ValueError('"%s": a range goes up, as 10-20' % part)
            if prefix and hi - lo >= _MAX_RANGE:
                raise ValueError('"%s": at most %d ids in one range' % (part, _MAX_RANGE))
        else:
            lo = hi = _ref_number(part, word, bool(prefix))
        out.append((prefix, lo, hi))
    return out


def parse_refs(words):
    """Every job and task that ids, ranges and tasks name, in order, once each, as `baton wait`
    and `baton cancel` read them: 7 -> "7", "10-12" -> "10", "11", "12", "12_7" (task 7 of
    array 12), "12_0-3" -> "12_0" ... "12_3", "3,5" -> "3", "5"."""
    if isinstance(words, (int, str)):
        words = [words]
    out = []
    for word in words:
        for prefix, lo, hi in _ref_parts(word):
            if hi - lo >= _MAX_RANGE:
                raise ValueError('"%d-%d": at most %d ids in one range' % (lo, hi, _MAX_RANGE))
            out.extend(prefix + str(i) for i in range(lo, hi + 1))
    return list(dict.fromkeys(out))


def job_ref(target):
    """One job as the job routes name it: "12", or "12_7" for task 7 of array 12."""
    parts = _ref_parts(target)
    if len(parts) != 1 or parts[0][1] != parts[0][2]:
        raise ValueError('"%s": one job id (12) or task (12_7), not a range' % str(target)[:64])
    return "%s%d" % (parts[0][0], parts[0][1])


def _single_ref(target):
    """The one job or task a target names (int for an id, "12_7" for a task), or None."""
    try:
        ref = job_ref(target)
    except ValueError:
        return None
    return ref if "_" in ref else int(ref)


def parse_targets(targets):
    """Ids and (low, high) ranges from 7, "7", "10-20" and "3,5,10-12"; tasks of arrays ("12_7",
    and "12_0-3" for tasks 0 to 3) come among the ids, as strings."""
    ids, ranges = [], []
    for target in targets:
        if isinstance(target, (list, tuple)):
            more_ids, more_ranges = parse_targets(target)
            ids += more_ids
            ranges += more_ranges
            continue
        for prefix, lo, hi in _ref_parts(target):
            if prefix:
                ids.extend(prefix + str(i) for i in range(lo, hi + 1))
            elif lo == hi:
                ids.append(lo)
            else:
                ranges.append((lo, hi))
    return list(dict.fromkeys(ids)), ranges
