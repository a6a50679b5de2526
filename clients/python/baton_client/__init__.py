"""A client for Baton's REST API (docs/api.md), standard library only.

    from baton_client import Client
    c = Client()                       # BATON_SERVER / BATON_TOKEN, else $BATON_HOME or ~/.baton
    job = c.submit(["python3", "train.py"], gpus=1, name="exp-1", time_limit="2h", memory="64GiB")
    c.wait(job["id"])
    print(c.logs(job["id"]))           # every node's output, "[NODE rank R] "-prefixed, if several

The fields and defaults are those of `baton submit` (PRODUCT.md §2, docs/api.md): the working
directory is the current one unless `workdir` says otherwise, durations are seconds or strings
such as "90s", "30m", "2h", sizes bytes or strings such as "40GiB".

An https:// server's certificate is checked as `baton` checks it: against `ca` (a PEM file, as
`--tls-ca`) or $BATON_TLS_CA alone when given, else the system's CAs and the local `baton up`'s
own CA ($BATON_HOME/tls/ca.crt or ~/.baton/tls/ca.crt); the name or address in the URL must be
one the certificate carries. http:// URLs are used as they are.

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
import ssl
import threading
import time
import urllib.parse

# The spec and the words that name jobs (spec.py): what needs the client's clock or files is read
# here; the server checks the rest (a dry run asks it).
from .spec import (_single_ref, job_ref, job_spec, looks_like_shell,  # noqa: F401
                   parse_begin, parse_duration, parse_refs, parse_targets)

__all__ = ["Client", "BatonError", "BatonUnavailable", "TERMINAL_STATES", "job_spec", "parse_begin",
           "parse_refs", "parse_targets"]

TERMINAL_STATES = ("succeeded", "failed", "cancelled", "timed_out")

# The states each action can change: what a range or a filter picks from (see Client.select).
ACTION_STATES = {"cancel": ("pending", "held", "running"), "hold": ("pending",), "release": ("held",)}


class BatonError(Exception):
    """The server answered with an error: `status` is the HTTP status, `code` Baton's code,
    `field` the field of a submitted spec that is wrong as written ("time_limit",
    "jobs[1].resources.gpus"), None when the error is not about one."""

    def __init__(self, status, code, message, field=None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field


class BatonUnavailable(BatonError):
    """No server to talk to (not running, not configured)."""

    def __init__(self, message):
        super().__init__(0, "unavailable", message)


def _raise_for(status, data):
    code, message, field = "http_%d" % status, data.decode("utf-8", "replace"), None
    try:
        error = json.loads(data)["error"]
        code, message, field = error.get("code", code), error.get("message", message), error.get("field")
    except (ValueError, KeyError, TypeError, AttributeError):
        pass
    raise BatonError(status, code, message, field)


def _data_dir():
    home = os.environ.get("BATON_HOME")
    return home if home else os.path.join(os.path.expanduser("~"), ".baton")


def _read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return ""


def _tls_context(ca, local_ca):
    """What an https:// server's certificate is checked against: `ca`'s certificates alone when
    given, else the system's CAs and `local_ca` (the local `baton up`'s DATA/tls/ca.crt) when it
    exists and can be read. Host names and addresses are checked as well (never turned off)."""
    if ca:
        try:
            return ssl.create_default_context(cafile=ca)
        except (OSError, ssl.SSLError) as e:
            raise ValueError("ca: %s: cannot be read as PEM certificates (%s)" % (ca, e)) from None
    context = ssl.create_default_context()
    if os.path.exists(local_ca):
        try:
            context.load_verify_locations(cafile=local_ca)
        except (OSError, ssl.SSLError):
            pass  # another user's, or not a certificate: the system's CAs only
    return context


def _connect_error(server, e):
    """BatonUnavailable for a connection to `server` that failed with `e`; a certificate the
    client does not trust says what to do about it (and is marked, not to be tried again)."""
    if isinstance(e, ssl.SSLCertVerificationError):
        why = getattr(e, "verify_message", "") or str(e)
        if getattr(e, "verify_code", 0) in (62, 64):  # X509_V_ERR_HOSTNAME/IP_ADDRESS_MISMATCH
            message = ("cannot reach %s: the server's certificate is not for this address (%s): connect by "
                       "a name it carries, or give the server a certificate for it" % (server, why))
        else:
            message = ("cannot reach %s: the server's certificate is not trusted (%s): pass ca=FILE (or set "
                       "BATON_TLS_CA) with its CA, e.g. the server's DATA/tls/ca.crt" % (server, why))
        error = BatonUnavailable(message)
        error.untrusted = True
        return error
    return BatonUnavailable("cannot reach %s: %s" % (server, e))


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
    """One server, one token, one keep-alive connection. `server` may name several controllers
    sharing one store ("https://a:8470,https://b:8470", as `baton` takes them; http:// and
    https:// may be mixed): the client talks to the leader, following a standby's pointer
    (X-Baton-Leader) or the next address when one cannot be reached, for reads and for submits
    with an idempotency key (30 s at most).

    `ca`: the CA certificates (a PEM file) an https:// server's certificate is checked against,
    as `baton --tls-ca` (default: $BATON_TLS_CA, else the system's CAs and the local data
    directory's tls/ca.crt, which `baton up` makes)."""

    def __init__(self, server=None, token=None, timeout=60.0, ca=None):
        directory = _data_dir()
        server = server or os.environ.get("BATON_SERVER") or _read(os.path.join(directory, "server.url"))
        if not server:
            raise BatonUnavailable(
                "no server: pass server=URL, set BATON_SERVER, or start one with `baton up` "
                "(%s not found)" % os.path.join(directory, "server.url"))
        self.token = token or os.environ.get("BATON_TOKEN") or _read(os.path.join(directory, "admin.token"))
        self._servers = [s.strip().rstrip("/") for s in server.split(",") if s.strip()]
        schemes = set()
        for s in self._servers:
            url = urllib.parse.urlsplit(s)
            if url.scheme not in ("http", "https") or not url.hostname:
                raise ValueError("server: expected http://HOST:PORT or https://HOST:PORT, got %r" % s)
            schemes.add(url.scheme)
        self._ca = ca or os.environ.get("BATON_TLS_CA") or None
        self._local_ca = os.path.join(directory, "tls", "ca.crt")
        self._ssl_context = None
        self._timeout = timeout
        self._conn = None
        if "https" in schemes:
            self._context()  # a CA file that cannot be read: ValueError now, not at the first call
        self._use(self._servers[0])
        if len(self._servers) > 1:
            self._find_leader()

    def _find_leader(self, wait=2.0):
        """Asks every address at once which one leads (GET /healthz, `wait` seconds at most) and
        uses the first leader that answers, else the leader a standby names: a controller that
        takes connections and answers nothing (stalled, cut off) then costs nothing once another
        leads. With no answer in time, the list's order applies."""
        answers = queue.Queue()

        def probe(server):
            url = urllib.parse.urlsplit(server)
            tls = url.scheme == "https"
            port = url.port or (443 if tls else 80)
            try:
                if tls:
                    conn = http.client.HTTPSConnection(url.hostname, port, timeout=wait, context=self._context())
                else:
                    conn = http.client.HTTPConnection(url.hostname, port, timeout=wait)
                try:
                    conn.request("GET", "/healthz")
                    r = conn.getresponse()
                    r.read()
                finally:
                    conn.close()
                answers.put((server, r.getheader("X-Baton-Role") == "standby", r.getheader("X-Baton-Leader") or ""))
            except (OSError, http.client.HTTPException, ValueError):
                answers.put((server, None, ""))

        servers = list(self._servers)
        for s in servers:
            threading.Thread(target=probe, args=(s,), daemon=True).start()
        deadline, named = time.monotonic() + wait, ""
        for _ in servers:
            try:
                server, standby, leader = answers.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if standby is False:
                self._use(server)
                return
            if standby and leader:
                named = leader
        if named:
            if named not in self._servers:
                self._servers.append(named)
            self._use(named)

    def _context(self):
        """The one ssl.SSLContext of every https:// connection, made on first use."""
        if self._ssl_context is None:
            self._ssl_context = _tls_context(self._ca, self._local_ca)
        return self._ssl_context

    def _connection(self):
        """A new connection to the current server, by its scheme."""
        if self._tls:
            return http.client.HTTPSConnection(self._host, self._port, timeout=self._timeout,
                                               context=self._context())
        return http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)

    def _use(self, server):
        """Talks to `server` from the next request on."""
        url = urllib.parse.urlsplit(server)
        self.server = server
        self._tls = url.scheme == "https"
        self._host, self._port = url.hostname, url.port or (443 if self._tls else 80)
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _move_on(self, leader, failed_rounds):
        """After a standby's answer (`leader`: the URL it named, or "") or an unreachable
        server: the leader or the next address; pauses 200 ms after a round of every address."""
        if leader and leader != self.server:
            if leader not in self._servers:
                self._servers.append(leader)
            self._use(leader)
            return
        i = self._servers.index(self.server) if self.server in self._servers else -1
        self._use(self._servers[(i + 1) % len(self._servers)])
        if failed_rounds[0] % len(self._servers) == len(self._servers) - 1:
            time.sleep(0.2)
        failed_rounds[0] += 1

    # ---- the HTTP exchange ----

    def _request(self, method, path, body=None, raw=False, headers=None):
        repeatable = method == "GET" or "Idempotency-Key" in (headers or {})
        deadline, failures, untrusted = time.monotonic() + 30, [0], set()
        while True:
            try:
                data, response = self._exchange(method, path, body, headers)
            except BatonUnavailable as e:
                if getattr(e, "untrusted", False):
                    untrusted.add(self.server)  # no use asking it again in this call
                if (len(self._servers) < 2 or not repeatable or time.monotonic() > deadline
                        or untrusted.issuperset(self._servers)):
                    raise
                self._move_on("", failures)
                continue
            if response.getheader("X-Baton-Role") == "standby" and time.monotonic() < deadline:
                self._move_on(response.getheader("X-Baton-Leader") or "", failures)
                continue
            break
        if response.status >= 400:
            _raise_for(response.status, data)
        if raw:
            return data, response
        return json.loads(data) if data else {}

    def _exchange(self, method, path, body, headers):
        payload = None if body is None else json.dumps(body).encode("utf-8")
        headers = dict(headers or {}, Authorization="Bearer " + self.token)
        if payload is not None:
            headers["Content-Type"] = "application/json"
        for attempt in (0, 1):  # a keep-alive connection the server closed is retried once
            if self._conn is None:
                self._conn = self._connection()
            try:
                self._conn.request(method, path, body=payload, headers=headers)
                response = self._conn.getresponse()
                data = response.read()
                break
            except (ConnectionError, http.client.HTTPException, OSError) as e:
                self._conn.close()
                self._conn = None
                # A certificate not trusted is not trusted the second time either.
                if attempt == 1 or isinstance(e, ssl.SSLCertVerificationError):
                    raise _connect_error(self.server, e) from None
        return data, response

    # ---- jobs ----

    def submit(self, command, gpus=0, name=None, priority=None, project=None, pool=None, time_limit=None,
               env=None, workdir=None, retries=None, nodes=None, gpu_type=None, process_per_gpu=False,
               after=None, idempotency_key=None, dry_run=False, **fields):
        """Submits one job. `command` is a list (run as is) or a string (run by /bin/sh -c).

        The other fields are those of `baton submit` (see job_spec()): cpus, memory, gpu_memory,
        grace, signal, hold, preemptible, array too. As with the CLI, `workdir` defaults to the
        current directory and `name` to the program's name ("sh" for a string command).

        dry_run=True: the server checks the job as it would the submit and answers the jobs it
        would make (a list: one, or an array's tasks), as the job object shows them but without
        an id, making nothing; a refusal raises BatonError as the submit would."""
        spec = job_spec(command, gpus=gpus, name=name, priority=priority, project=project, pool=pool,
                        time_limit=time_limit, env=env, workdir=workdir, retries=retries, nodes=nodes,
                        gpu_type=gpu_type, process_per_gpu=process_per_gpu, after=after, **fields)
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        if dry_run:
            return self._request("POST", "/v1/jobs?dry_run=true", spec, headers=headers)["jobs"]
        return self._request("POST", "/v1/jobs", spec, headers=headers)

    def submit_batch(self, jobs, idempotency_key=None, dry_run=False):
        """Submits many jobs at once, all or nothing (POST /v1/jobs/batch); returns them in order.
        Each element is a dict of submit()'s keyword arguments, `command` included. dry_run=True:
        the jobs it would make, without ids, making nothing (see submit())."""
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
        path = "/v1/jobs/batch?dry_run=true" if dry_run else "/v1/jobs/batch"
        return self._request("POST", path, {"jobs": specs}, headers=headers)["jobs"]

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

    _UPDATABLE = ("time_limit", "priority", "name", "project", "pool", "begin", "after", "after_any",
                  "after_notok", "retries")

    def update(self, job_id, **fields):
        """Changes a job in place, as `baton update` (PATCH /v1/jobs/{id}): a waiting job's
        time_limit (seconds, or "4h", "4:00:00"), priority, name, project, pool, begin (None clears
        it), after, after_any, after_notok (lists of ids), retries; a running job's time_limit
        and name. An array's id changes every task that can. Returns the job."""
        unknown = set(fields) - set(self._UPDATABLE)
        if unknown:
            raise TypeError("update() got unexpected keyword arguments: %s (it changes %s)" %
                            (", ".join(sorted(unknown)), ", ".join(self._UPDATABLE)))
        if not fields:
            raise TypeError("update() needs a field to change (%s)" % ", ".join(self._UPDATABLE))
        return self._request("PATCH", "/v1/jobs/" + job_ref(job_id), dict(fields))

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
        conn = self._connection()
        try:
            try:
                conn.request("GET", path, headers=headers)
                # http.client lets go of it once it reads "Connection: close". With https:// an
                # ssl.SSLSocket, read, timed and shut down as a plain one.
                sock = conn.sock
                if socks is not None:
                    socks.append(sock)
                response = conn.getresponse()
            except (ConnectionError, http.client.HTTPException, OSError) as e:
                raise _connect_error(self.server, e) from None
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
