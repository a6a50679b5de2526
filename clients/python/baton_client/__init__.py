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

import codecs
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

__all__ = ["Client", "BatonError", "BatonUnavailable", "TERMINAL_STATES", "job_spec"]

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


def job_spec(command, gpus=0, name=None, priority=None, project=None, pool=None, time_limit=None, env=None,
             workdir=None, retries=None, nodes=None, gpu_type=None, process_per_gpu=False, after=None,
             cpus=None, memory=None, gpu_memory=None, grace=None, signal=None, hold=False, preemptible=False,
             array=None):
    """The JSON job spec (docs/api.md) that `baton submit` sends for the same flags.

    command: a list of strings (the argv) or a string (run by /bin/sh -c); gpus: a number
    (fractions below 1 share a GPU; a string such as "0.25" is taken too); name: default the
    program's name, "sh" for a string; time_limit, grace: durations (seconds, or "90s", "30m",
    "2h", "1h30m"); memory (per node), gpu_memory (per GPU): sizes (bytes, or "64GiB", "80GB");
    signal: "USR1@2m" as Slurm's --signal; env: a dict, or "KEY=VALUE" strings; after: an id or
    ids; workdir: default the current directory; array: passed on as `array`, as
    `baton submit --array SPEC` does."""
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
    if after is not None and not isinstance(after, (list, tuple)):
        after = [after]
    if after is not None:
        after = [int(a) for a in after]
    if not workdir:
        try:
            workdir = os.getcwd()  # the CLI's default: where it runs
        except OSError:
            workdir = None
    for key, value in (("priority", priority), ("project", project), ("pool", pool),
                       ("time_limit", time_limit), ("grace_period", grace), ("signal", signal),
                       ("retries", retries), ("env", env), ("workdir", workdir), ("after", after),
                       ("array", array)):
        if value is not None:
            spec[key] = value
    for key, value in (("nodes", nodes), ("cpus", cpus), ("gpu_type", gpu_type), ("memory", memory),
                       ("gpu_memory", gpu_memory)):
        if value is not None:
            spec["resources"][key] = value
    for key, value in (("process_per_gpu", process_per_gpu), ("hold", hold), ("preemptible", preemptible)):
        if value:
            spec[key] = True
    return spec


_TARGET = re.compile(r"^([0-9]+)(?:-([0-9]+))?$")


def _single_id(target):
    if isinstance(target, int) and not isinstance(target, bool):
        return target
    if isinstance(target, str) and re.fullmatch(r"[0-9]+", target):
        return int(target)
    return None


def parse_targets(targets):
    """Ids and (low, high) ranges from 7, "7", "10-20" and "3,5,10-12"."""
    ids, ranges = [], []
    for target in targets:
        if isinstance(target, (list, tuple)):
            more_ids, more_ranges = parse_targets(target)
            ids += more_ids
            ranges += more_ranges
            continue
        if _single_id(target) is not None and not isinstance(target, str):
            if target <= 0:
                raise ValueError("job id: %d is not a job id" % target)
            ids.append(target)
            continue
        if not isinstance(target, str):
            raise ValueError("job id: %r is not an id or a range such as 10-20" % (target,))
        for part in target.split(","):
            m = _TARGET.match(part.strip())
            if not m or int(m.group(1)) <= 0 or (m.group(2) and int(m.group(2)) < int(m.group(1))):
                raise ValueError('job id: "%s" is not an id or a range such as 10-20' % part[:64])
            if m.group(2):
                ranges.append((int(m.group(1)), int(m.group(2))))
            else:
                ids.append(int(m.group(1)))
    return list(dict.fromkeys(ids)), ranges


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

    def jobs(self, state=None, user=None, project=None, limit=None, name=None, after=0):
        """Jobs, oldest first, following the server's pages; `state` a name or a list of names;
        `name` a job name or a shell pattern such as "sweep-*"; `after`: only larger ids."""
        query = {}
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
        return self._request("GET", "/v1/jobs/%d" % int(job_id))

    def select(self, *targets, action="cancel", all=False, user=None, name=None, state=None, project=None):
        """The ids of the jobs that cancel/hold/release(*targets, ...) act on, in id order.

        `targets` are ids and ranges: 7, "7", "10-20", "3,5,10-12". Ids alone are taken as given.
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
        start = min([lo for lo, _ in ranges] + ids) - 1 if ids or ranges else 0
        listed = self.jobs(state=states, user=user, project=project, name=name, after=start)
        out = []
        for job in listed:
            i = job["id"]
            named = i in wanted or any(lo <= i <= hi for lo, hi in ranges)
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
        if len(targets) == 1 and not any(filters.values()) and _single_id(targets[0]) is not None:
            return self._request("POST", "/v1/jobs/%d/%s" % (_single_id(targets[0]), action), {})
        done, failed = [], {}
        for job_id in self.select(*targets, action=action, **filters):
            try:
                done.append(self._request("POST", "/v1/jobs/%d/%s" % (job_id, action), {}))
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
        job_id = int(job_id)
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
            data, response = self._request("GET", "/v1/jobs/%d/logs?%s" % (job_id, urllib.parse.urlencode(query)),
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
        path = "/v1/jobs/%d/logs?follow=1" % job_id
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
        """Waits until the job ends and returns it; TimeoutError after `timeout` seconds."""
        start, pause = time.monotonic(), 0.02
        while True:
            job = self.show(job_id)
            if job["state"] in TERMINAL_STATES:
                return job
            if timeout is not None and time.monotonic() - start >= timeout:
                raise TimeoutError("timed out waiting for job %d" % int(job_id))
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
