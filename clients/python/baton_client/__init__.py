"""A client for Baton's REST API (docs/api.md), standard library only.

    from baton_client import Client
    c = Client()                       # BATON_SERVER / BATON_TOKEN, else $BATON_HOME or ~/.baton
    job = c.submit(["python3", "train.py"], gpus=1, name="exp-1", time_limit="2h", memory="64GiB")
    c.wait(job["id"])
    print(c.logs(job["id"]))           # every node's output, "[NODE rank R] "-prefixed, if several

The fields and defaults are those of `baton submit` (PRODUCT.md §2, docs/api.md): the working
directory is the current one unless `workdir` says otherwise, durations are seconds or strings
such as "90s", "30m", "2h", sizes bytes or strings such as "40GiB".

Every call raises BatonError (with the HTTP status and the server's message) when the server
refuses, and BatonUnavailable when it cannot be reached: the CLI's exit code 1. Arguments the
client itself finds wrong raise ValueError: the CLI's exit code 2.
"""

import calendar
import codecs
import datetime
import fnmatch
import http.client
import json
import os
import queue
import re
import socket
import threading
import time
import urllib.parse

__all__ = ["Client", "BatonError", "BatonUnavailable", "TERMINAL_STATES", "job_spec", "parse_begin",
           "parse_array", "parse_refs", "parse_targets"]

TERMINAL_STATES = ("succeeded", "failed", "cancelled", "timed_out")

# The states each action can change: what a range or a filter picks from (see Client.select).
ACTION_STATES = {"cancel": ("pending", "held", "running"), "hold": ("pending",), "release": ("held",)}

# A one-word command with one of these runs under /bin/sh -c, as with `baton submit`.
_SHELL_CHARACTERS = set(" \t;|&$<>(){}*?`'\"\n")


class BatonError(Exception):
    """The server answered with an error: `status` is the HTTP status, `code` Baton's code."""

    def __init__(self, status, code, message):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


class BatonUnavailable(BatonError):
    """No server to talk to (not running, not configured)."""

    def __init__(self, message):
        super().__init__(0, "unavailable", message)


def _raise_for(status, data):
    code, message = "http_%d" % status, data.decode("utf-8", "replace")
    try:
        error = json.loads(data)["error"]
        code, message = error.get("code", code), error.get("message", message)
    except (ValueError, KeyError, TypeError):
        pass
    raise BatonError(status, code, message)


def _data_dir():
    home = os.environ.get("BATON_HOME")
    return home if home else os.path.join(os.path.expanduser("~"), ".baton")


def _read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return ""


def looks_like_shell(command):
    """True for a one-word argv that `baton submit` would run under /bin/sh -c ("make && ./run")."""
    return len(command) == 1 and any(c in _SHELL_CHARACTERS for c in command[0])


def _number(value, field):
    if isinstance(value, bool):
        raise ValueError("%s: a number, not %r" % (field, value))
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise ValueError('%s: not a number (got "%s")' % (field, value[:32])) from None
    if not isinstance(value, (int, float)):
        raise ValueError("%s: a number, not %r" % (field, value))
    return int(value) if float(value).is_integer() else value


# ---- the CLI's own checks that the spec's new fields go through (core/job.cc, cli/submit.cc) ----

_MAX_DURATION_MS = 366 * 86400 * 1000
_MAX_AFTER = 256
_MAX_ARRAY_TASKS = 10000
_MAX_ARRAY_INDEX = 1000000
_MAX_RANGE = 100000  # ids one range of task refs may name, as the CLI's


def _digits(text, i):
    j = i
    while j < len(text) and "0" <= text[j] <= "9":
        j += 1
    return j


def parse_duration(text, field):
    """Milliseconds, as the CLI's ParseDuration reads "90", "90s", "30m", "2h", "1h30m", "1.5h", "500ms"."""
    def bad(why):
        return ValueError('%s: %s (got "%s"; use seconds or forms like 90s, 30m, 2h, 1h30m)' % (field, why, text[:64]))
    if not text:
        raise bad("empty duration")
    if len(text) > 32:
        raise bad("duration too long")
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


def parse_array(text, field="array"):
    """The indices of an array spec ("0-99%8", "1,5,9", "0-20:5") and its throttle (None
    without %N), with the CLI's checks and words."""
    if not isinstance(text, str):
        raise ValueError("%s: a string such as 0-99%%8, 1,5,9 or 0-20:5, not %r" % (field, text))

    def bad(why):
        return ValueError('%s: "%s" %s (e.g. 0-99%%8, 1,5,9 or 0-20:5)' % (field, text[:64], why))

    def number(s):
        return int(s) if 0 < len(s) <= 9 and all("0" <= c <= "9" for c in s) else None
    throttle, items = None, text
    if "%" in text:
        items, after = text.split("%", 1)
        n = number(after)
        if n is None or n < 1:
            raise bad("has a bad throttle after %")
        throttle = min(n, _MAX_ARRAY_TASKS)
    if not items:
        raise bad("names no index")
    indices, parts = set(), items.split(",")
    for k, item in enumerate(parts):
        if k + 1 < len(parts) and k + 2 == len(parts) and parts[-1] == "":
            raise bad("ends with a comma")
        step = 1
        if ":" in item:
            item, step_text = item.split(":", 1)
            step = number(step_text)
            if step is None or step < 1:
                raise bad("has a bad step")
        if "-" in item:
            lo_text, hi_text = item.split("-", 1)
            lo, hi = number(lo_text), number(hi_text)
            if lo is None or hi is None or hi < lo:
                raise bad("is not a list of indices and ranges")
        else:
            lo = hi = number(item)
            if lo is None:
                raise bad("is not a list of indices and ranges")
        if hi > _MAX_ARRAY_INDEX:
            raise bad("has an index over %d" % _MAX_ARRAY_INDEX)
        for i in range(lo, hi + 1, step):
            indices.add(i)
            if len(indices) > _MAX_ARRAY_TASKS:
                raise bad("has more than %d tasks" % _MAX_ARRAY_TASKS)
    return sorted(indices), throttle


def _job_ids(value, field):
    """after, after_any, after_notok: an id or ids, each a positive integer."""
    if value is None:
        return None
    if not isinstance(value, (list, tuple)):
        value = [value]
    out = []
    for v in value:
        if isinstance(v, bool):
            raise ValueError("%s: job ids are positive integers" % field)
        try:
            n = int(v)
        except (TypeError, ValueError):
            raise ValueError("%s: job ids are positive integers" % field) from None
        if n <= 0 or (isinstance(v, float) and not v.is_integer()):
            raise ValueError("%s: job ids are positive integers" % field)
        out.append(n)
    if len(out) > _MAX_AFTER:
        raise ValueError("%s: more than %d dependencies" % (field, _MAX_AFTER))
    return out


def job_spec(command, gpus=0, name=None, priority=None, project=None, pool=None, time_limit=None, env=None,
             workdir=None, retries=None, nodes=None, gpu_type=None, process_per_gpu=False, after=None,
             cpus=None, memory=None, gpu_memory=None, grace=None, signal=None, hold=False, preemptible=False,
             array=None, after_any=None, after_notok=None, singleton=False, begin=None, schedule=None):
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
    array: "0-99%8", "1,5,9" or "0-20:5", a job per index (checked as the CLI checks it);
    schedule: a cron schedule ("0 3 * * *", "*/15 * * * *", "@daily") in the controller's local
    time: a recurring job, a run at each time it names (Client.crons() lists them);
    workdir: default the current directory."""
    if isinstance(command, (list, tuple)):
        if not command or not all(isinstance(a, str) for a in command):
            raise ValueError("command: a non-empty list of strings, or a string")
        command = list(command)
    elif not isinstance(command, str) or not command:
        raise ValueError("command: a non-empty list of strings, or a string")
    if name is None:
        name = "sh" if isinstance(command, str) else os.path.basename(command[0])
    spec = {"command": command, "name": name, "resources": {"gpus": _number(gpus, "gpus")}}
    if isinstance(env, (list, tuple)):
        pairs = {}
        for kv in env:
            if not isinstance(kv, str) or "=" not in kv or kv.startswith("="):
                raise ValueError('--env: expected KEY=VALUE, got "%s"' % (kv,))
            key, value = kv.split("=", 1)
            pairs[key] = value
        env = pairs
    after, after_any, after_notok = (_job_ids(after, "after"), _job_ids(after_any, "after_any"),
                                     _job_ids(after_notok, "after_notok"))
    if begin is not None and begin != "":
        begin = parse_begin(begin)
    else:
        begin = None
    if array is not None:
        parse_array(array)
    if not workdir:
        try:
            workdir = os.getcwd()  # the CLI's default: where it runs
        except OSError:
            workdir = None
    for key, value in (("priority", priority), ("project", project), ("pool", pool),
                       ("time_limit", time_limit), ("grace_period", grace), ("signal", signal),
                       ("retries", retries), ("env", env), ("workdir", workdir), ("after", after or None),
                       ("after_any", after_any or None), ("after_notok", after_notok or None),
                       ("begin", begin), ("array", array), ("schedule", schedule or None)):
        if value is not None:
            spec[key] = value
    for key, value in (("nodes", nodes), ("cpus", cpus), ("gpu_type", gpu_type), ("memory", memory),
                       ("gpu_memory", gpu_memory)):
        if value is not None:
            spec["resources"][key] = value
    for key, value in (("process_per_gpu", process_per_gpu), ("hold", hold), ("preemptible", preemptible),
                       ("singleton", singleton)):
        if value:
            spec[key] = True
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


def _task_name(job):
    return "%d_%d" % (job["array_id"], job["array_index"]) if job.get("array_id") else None


def _allocation_nodes(job):
    return [part["node"] for part in job.get("allocation") or []]


def _prefixed(text, prefix):
    """Every line of `text` with `prefix` before it; a last line without a newline gets one,
    as `baton logs` labels them."""
    if not text:
        return ""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return "".join(prefix + line + "\n" for line in lines)


class Client:
    """One server, one token, one keep-alive connection."""

    def __init__(self, server=None, token=None, timeout=60.0):
        directory = _data_dir()
        server = server or os.environ.get("BATON_SERVER") or _read(os.path.join(directory, "server.url"))
        if not server:
            raise BatonUnavailable(
                "no server: pass server=URL, set BATON_SERVER, or start one with `baton up` "
                "(%s not found)" % os.path.join(directory, "server.url"))
        self.token = token or os.environ.get("BATON_TOKEN") or _read(os.path.join(directory, "admin.token"))
        url = urllib.parse.urlsplit(server)
        if url.scheme != "http" or not url.hostname:
            raise ValueError("server: expected http://HOST:PORT, got %r" % server)
        self.server = server
        self._host, self._port, self._timeout = url.hostname, url.port or 80, timeout
        self._conn = None

    # ---- the HTTP exchange ----

    def _request(self, method, path, body=None, raw=False, headers=None):
        payload = None if body is None else json.dumps(body).encode("utf-8")
        headers = dict(headers or {}, Authorization="Bearer " + self.token)
        if payload is not None:
            headers["Content-Type"] = "application/json"
        for attempt in (0, 1):  # a keep-alive connection the server closed is retried once
            if self._conn is None:
                self._conn = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
            try:
                self._conn.request(method, path, body=payload, headers=headers)
                response = self._conn.getresponse()
                data = response.read()
                break
            except (ConnectionError, http.client.HTTPException, OSError) as e:
                self._conn.close()
                self._conn = None
                if attempt == 1:
                    raise BatonUnavailable("cannot reach %s: %s" % (self.server, e)) from None
        if response.status >= 400:
            _raise_for(response.status, data)
        if raw:
            return data, response
        return json.loads(data) if data else {}

    # ---- jobs ----

    def submit(self, command, gpus=0, name=None, priority=None, project=None, pool=None, time_limit=None,
               env=None, workdir=None, retries=None, nodes=None, gpu_type=None, process_per_gpu=False,
               after=None, idempotency_key=None, **fields):
        """Submits one job. `command` is a list (run as is) or a string (run by /bin/sh -c).

        The other fields are those of `baton submit` (see job_spec()): cpus, memory, gpu_memory,
        grace, signal, hold, preemptible, array too. As with the CLI, `workdir` defaults to the
        current directory and `name` to the program's name ("sh" for a string command)."""
        spec = job_spec(command, gpus=gpus, name=name, priority=priority, project=project, pool=pool,
                        time_limit=time_limit, env=env, workdir=workdir, retries=retries, nodes=nodes,
                        gpu_type=gpu_type, process_per_gpu=process_per_gpu, after=after, **fields)
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self._request("POST", "/v1/jobs", spec, headers=headers)

    def submit_batch(self, jobs, idempotency_key=None):
        """Submits many jobs at once, all or nothing (POST /v1/jobs/batch); returns them in order.
        Each element is a dict of submit()'s keyword arguments, `command` included."""
        if isinstance(jobs, (str, bytes, dict)) or not jobs:
            raise ValueError("jobs: a non-empty list of dicts of submit()'s arguments")
        specs = []
        for i, job in enumerate(jobs):
            if not isinstance(job, dict) or "command" not in job:
                raise ValueError("jobs[%d]: a dict of submit()'s arguments, with a command" % i)
            job = dict(job)
            try:
                specs.append(job_spec(job.pop("command"), **job))
            except (TypeError, ValueError) as e:
                raise ValueError("jobs[%d]: %s" % (i, e)) from None
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self._request("POST", "/v1/jobs/batch", {"jobs": specs}, headers=headers)["jobs"]

    def jobs(self, state=None, user=None, project=None, limit=None, name=None, after=0, array=None):
        """Jobs, oldest first, following the server's pages; `state` a name or a list of names;
        `name` a job name or a shell pattern such as "sweep-*"; `after`: only larger ids;
        `array`: an array's id, for its tasks alone (GET /v1/jobs?array=ID), in index order."""
        query = {}
        if array is not None:
            array_id = _single_ref(array)
            if not isinstance(array_id, int):
                raise ValueError('array: "%s" is not the id of an array' % str(array)[:64])
            query["array"] = array_id
        if state:
            query["state"] = state if isinstance(state, str) else ",".join(state)
        if user:
            query["user"] = user
        if project:
            query["project"] = project
        out, after = [], int(after)
        while True:
            page = dict(query, limit=1000, after=after)
            answer = self._request("GET", "/v1/jobs?" + urllib.parse.urlencode(page))
            out.extend(j for j in answer["jobs"] if name is None or fnmatch.fnmatchcase(j["name"], name))
            if limit is not None and len(out) >= limit:
                return out[:limit]
            if answer.get("next") is None:
                return out
            after = answer["next"]

    def show(self, job_id):
        """One job: an id (12), or a task of an array ("12_7"; GET /v1/jobs/12_7)."""
        return self._request("GET", "/v1/jobs/" + job_ref(job_id))

    def select(self, *targets, action="cancel", all=False, user=None, name=None, state=None, project=None):
        """The ids of the jobs that cancel/hold/release(*targets, ...) act on, in id order.

        `targets` are ids and ranges: 7, "7", "10-20", "3,5,10-12", and tasks of arrays: "12_7", "12_0-3"
        (tasks 0 to 3 of array 12; each as "12_0", ...). Ids and tasks alone are taken as given; an
        array's id stands for the array (the server acts on every task the action applies to).
        A range, or a filter (user, name: a name or pattern, state: a name or list, project), picks
        from the listed jobs; without `state`, from those the action can change (cancel: pending,
        held, running; hold: pending; release: held). all=True picks every such job. Ids named
        beside a filter must match it too. ValueError when nothing is named, or a target is bad."""
        ids, ranges = parse_targets(targets)
        filtered = bool(all or user or name or state or project)
        if not ids and not ranges and not filtered:
            raise ValueError("no jobs named: give ids or ranges (7, 10-20), or a filter "
                             "(all, user, name, state, project)")
        if ranges == [] and not filtered:
            return ids
        states = state if state else ACTION_STATES[action]
        wanted = set(ids)
        firsts = [lo for lo, _ in ranges] + [int(str(i).split("_")[0]) for i in ids]
        start = min(firsts) - 1 if firsts else 0
        listed = self.jobs(state=states, user=user, project=project, name=name, after=start)
        out = []
        for job in listed:
            i = job["id"]
            named = i in wanted or _task_name(job) in wanted or any(lo <= i <= hi for lo, hi in ranges)
            if named or (not ids and not ranges):
                out.append(i)
        return out

    def cancel(self, *targets, **filters):
        """Cancels jobs. One id: returns the job. Otherwise (ids, ranges, filters as in select()):
        returns the jobs acted on; if some failed, raises BatonError (the first failure's status)
        after trying every one, with `.done` (jobs) and `.failed` ({id: BatonError})."""
        return self._act("cancel", targets, filters)

    def hold(self, *targets, **filters):
        """Holds pending jobs (see cancel() for what it takes and returns)."""
        return self._act("hold", targets, filters)

    def release(self, *targets, **filters):
        """Releases held jobs (see cancel() for what it takes and returns)."""
        return self._act("release", targets, filters)

    def _act(self, action, targets, filters):
        unknown = set(filters) - {"all", "user", "name", "state", "project"}
        if unknown:
            raise TypeError("%s() got unexpected keyword arguments: %s" % (action, ", ".join(sorted(unknown))))
        if len(targets) == 1 and not any(filters.values()) and _single_ref(targets[0]) is not None:
            return self._request("POST", "/v1/jobs/%s/%s" % (_single_ref(targets[0]), action), {})
        done, failed = [], {}
        for job_id in self.select(*targets, action=action, **filters):
            try:
                done.append(self._request("POST", "/v1/jobs/%s/%s" % (job_id, action), {}))
            except BatonUnavailable:
                raise
            except BatonError as e:
                failed[job_id] = e
        if failed:
            first = next(iter(failed.values()))
            error = BatonError(first.status, first.code, "; ".join(e.message for e in failed.values()))
            error.done, error.failed = done, failed
            raise error
        return done

    # ---- recurring jobs ----

    def crons(self, user=None):
        """The recurring jobs not deleted (GET /v1/crons): each with its id (its first run's job
        id), user, name, schedule, runs, next_run (while its run waits), job (that run) and last
        (the latest run that ended, or None), as `baton crons --json` prints them."""
        path = "/v1/crons" + ("?user=" + urllib.parse.quote(user, safe="") if user else "")
        return self._request("GET", path)["crons"]

    def delete_cron(self, cron_id):
        """Stops a recurring job (DELETE /v1/crons/ID): its waiting run is cancelled, a running
        one goes on to its end, and no run follows. Returns the cron as it was."""
        if isinstance(cron_id, bool) or not re.fullmatch(r"[1-9][0-9]{0,17}", str(cron_id)):
            raise ValueError('"%s" is not a recurring job\'s id' % str(cron_id)[:64])
        return self._request("DELETE", "/v1/crons/%s" % cron_id)

    def queue(self, limit=None):
        """Pending jobs in the order they would start, each with its `factors` (GET /v1/queue)."""
        out, offset = [], 0
        while True:
            page = 1000 if limit is None else max(1, min(1000, limit - len(out)))
            answer = self._request("GET", "/v1/queue?limit=%d&offset=%d" % (page, offset))
            out.extend(answer["jobs"])
            if (limit is not None and len(out) >= limit) or answer.get("next") is None:
                return out if limit is None else out[:limit]
            offset = answer["next"]

    def nodes(self):
        """Every node with its GPUs (GET /v1/nodes)."""
        return self._request("GET", "/v1/nodes")["nodes"]

    def node(self, name):
        return self._request("GET", "/v1/nodes/" + urllib.parse.quote(name, safe=""))

    def logs(self, job_id, follow=False, node=None):
        """The job's output as text; with follow=True an iterator of chunks until the job ends
        (the server streams them: GET /v1/jobs/ID/logs?follow=1).

        A job placed on several nodes has a log on each: without `node`, every node's output,
        in allocation order, each line prefixed "[NODE rank R] " (R: the node's place in the
        allocation), as `baton logs` prints it; followed, whole lines as they come from any node
        (a job for several nodes not placed yet is waited for). `node=NAME` gives that
        node's log alone, as it is. A one-node job's log comes as it is."""
        job_id = job_ref(job_id)
        if follow:
            return self._follow(job_id, node)
        if node is not None:
            return self._log_text(job_id, node)
        nodes = _allocation_nodes(self.show(job_id))
        if len(nodes) <= 1:
            return self._log_text(job_id, None)
        return "".join(_prefixed(self._log_text(job_id, n), "[%s rank %d] " % (n, r)) for r, n in enumerate(nodes))

    def _log_text(self, job_id, node):
        """One node's whole log (the default node's without `node`), a page at a time."""
        chunks, offset = [], 0
        while True:
            query = {"offset": offset}
            if node is not None:
                query["node"] = node
            data, response = self._request("GET", "/v1/jobs/%s/logs?%s" % (job_id, urllib.parse.urlencode(query)),
                                           raw=True)
            if not data:
                break
            chunks.append(data)
            offset += len(data)
            size = response.getheader("X-Baton-Log-Size")
            if size is not None and re.fullmatch(r"[0-9]+", size) and offset >= int(size):
                break
        return b"".join(chunks).decode("utf-8", "replace")

    def _follow(self, job_id, node):
        path = "/v1/jobs/%s/logs?follow=1" % job_id
        if node is not None:
            yield from self._stream(path + "&node=" + urllib.parse.quote(node, safe=""))
            return
        # A job for several nodes has its nodes once it is placed: wait for that.
        job, pause = self.show(job_id), 0.05
        while (int(job.get("resources", {}).get("nodes") or 1) > 1 and len(_allocation_nodes(job)) <= 1
               and job["state"] not in TERMINAL_STATES):
            time.sleep(pause)
            pause = min(pause * 2, 1.0)
            job = self.show(job_id)
        nodes = _allocation_nodes(job)
        if len(nodes) <= 1:
            yield from self._stream(path)
            return
        # One stream per node, each on a thread of its own; whole lines come out, prefixed.
        lines, socks = queue.Queue(), []

        def pump(rank, name):
            prefix, partial = "[%s rank %d] " % (name, rank), ""
            try:
                for text in self._stream(path + "&node=" + urllib.parse.quote(name, safe=""), socks=socks):
                    partial += text
                    if "\n" in partial:
                        done, partial = partial.rsplit("\n", 1)
                        lines.put((None, _prefixed(done + "\n", prefix)))
                if partial:
                    lines.put((None, prefix + partial + "\n"))
            except BaseException as e:  # noqa: B902 - handed to the reader
                lines.put((e, None))
            lines.put((None, None))

        threads = [threading.Thread(target=pump, args=(r, n), daemon=True) for r, n in enumerate(nodes)]
        for t in threads:
            t.start()
        try:
            running = len(threads)
            while running:
                error, text = lines.get()
                if error is not None:
                    raise error
                if text is None:
                    running -= 1
                else:
                    yield text
        finally:
            for sock in list(socks):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def events(self, after=0):
        """Cluster events as they happen (Server-Sent Events): an endless iterator of event dicts,
        starting after event `after` (0: every event the server still keeps)."""
        buffered = ""
        for chunk in self._stream("/v1/events?after=%d" % int(after), {"Accept": "text/event-stream"}):
            buffered += chunk
            while "\n\n" in buffered:  # a blank line ends each event
                block, buffered = buffered.split("\n\n", 1)
                data = [line[len("data: "):] for line in block.split("\n") if line.startswith("data: ")]
                if data:
                    yield json.loads("\n".join(data))

    def _stream(self, path, headers=None, socks=None):
        """A streamed answer on a connection of its own: yields the body's text as it comes.
        The socket goes into `socks` when given, for another thread to shut it down."""
        headers = dict(headers or {}, Authorization="Bearer " + self.token)
        conn = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
        try:
            try:
                conn.request("GET", path, headers=headers)
                sock = conn.sock  # http.client lets go of it once it reads "Connection: close"
                if socks is not None:
                    socks.append(sock)
                response = conn.getresponse()
            except (ConnectionError, http.client.HTTPException, OSError) as e:
                raise BatonUnavailable("cannot reach %s: %s" % (self.server, e)) from None
            if response.status >= 400:
                _raise_for(response.status, response.read())
            # A followed log of a waiting job, or quiet events, may send nothing for hours.
            sock.settimeout(None)
            decoder = codecs.getincrementaldecoder("utf-8")("replace")  # a character may span pieces
            while True:
                piece = response.read1(65536)
                text = decoder.decode(piece, final=not piece)
                if text:
                    yield text
                if not piece:
                    break
        finally:
            conn.close()

    def wait(self, job_id, timeout=None):
        """Waits until the job ends and returns it; TimeoutError after `timeout` seconds.
        `job_id` may name a task ("12_7"). An array's id waits for every task of the array, as
        `baton wait 12` does, and returns the tasks, ended, in index order."""
        ref = job_ref(job_id)
        job = self.show(ref)
        if "_" not in ref and job.get("array_id") == job["id"]:
            return self.wait_all(ref, timeout=timeout)
        return self.wait_all(ref, timeout=timeout)[0]

    def wait_all(self, *targets, timeout=None):
        """Waits until every job named has ended and returns them, in the order named: ids,
        ranges and tasks as `baton wait` takes them (7, "10-12", "12_7", "12_0-3"); an array's
        id stands for every task of the array. TimeoutError after `timeout` seconds."""
        start, pause = time.monotonic(), 0.02
        refs = []
        for ref in parse_refs(targets):
            job = self.show(ref)
            if "_" not in ref and job.get("array_id") == job["id"]:
                refs.extend(_task_name(t) for t in self.jobs(array=job["id"]))
            else:
                refs.append(ref)
        refs = list(dict.fromkeys(refs))
        ended, left = {}, refs
        while True:
            still = []
            for ref in left:
                job = self.show(ref)
                if job["state"] in TERMINAL_STATES:
                    ended[ref] = job
                else:
                    still.append(ref)
            left = still
            if not left:
                return [ended[ref] for ref in refs]
            if timeout is not None and time.monotonic() - start >= timeout:
                raise TimeoutError("timed out waiting for job %s" % left[0] if len(left) == 1 else
                                   "timed out waiting for %d jobs" % len(left))
            time.sleep(pause)
            pause = min(pause * 2, 1.0)

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
