"""A client for Baton's REST API (docs/api.md), standard library only.

    from baton_client import Client
    c = Client()                       # BATON_SERVER / BATON_TOKEN, else $BATON_HOME or ~/.baton
    job = c.submit(["python3", "train.py"], gpus=1, name="exp-1")
    c.wait(job["id"])
    print(c.logs(job["id"]))

Every call raises BatonError (with the HTTP status and the server's message) when the server
refuses, and BatonUnavailable when it cannot be reached: the CLI's exit code 1. Arguments the
client itself finds wrong raise ValueError: the CLI's exit code 2.
"""

import codecs
import http.client
import json
import os
import time
import urllib.parse

__all__ = ["Client", "BatonError", "BatonUnavailable", "TERMINAL_STATES"]

TERMINAL_STATES = ("succeeded", "failed", "cancelled", "timed_out")


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
               after=None, idempotency_key=None):
        """Submits one job. `command` is a list (run as is) or a string (run by /bin/sh -c)."""
        if isinstance(command, (list, tuple)):
            if not command or not all(isinstance(a, str) for a in command):
                raise ValueError("command: a non-empty list of strings, or a string")
            command = list(command)
        elif not isinstance(command, str) or not command:
            raise ValueError("command: a non-empty list of strings, or a string")
        spec = {"command": command, "resources": {"gpus": gpus}}
        for key, value in (("name", name), ("priority", priority), ("project", project), ("pool", pool),
                           ("time_limit", time_limit), ("env", env), ("workdir", workdir),
                           ("retries", retries), ("after", after)):
            if value is not None:
                spec[key] = value
        if nodes is not None:
            spec["resources"]["nodes"] = nodes
        if gpu_type is not None:
            spec["resources"]["gpu_type"] = gpu_type
        if process_per_gpu:
            spec["process_per_gpu"] = True
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self._request("POST", "/v1/jobs", spec, headers=headers)

    def jobs(self, state=None, user=None, project=None, limit=None):
        """Jobs, oldest first, following the server's pages; `state` a name or a list of names."""
        query = {}
        if state:
            query["state"] = state if isinstance(state, str) else ",".join(state)
        if user:
            query["user"] = user
        if project:
            query["project"] = project
        out, after = [], 0
        while True:
            page = dict(query, limit=1000, after=after)
            answer = self._request("GET", "/v1/jobs?" + urllib.parse.urlencode(page))
            out.extend(answer["jobs"])
            if limit is not None and len(out) >= limit:
                return out[:limit]
            if answer.get("next") is None:
                return out
            after = answer["next"]

    def show(self, job_id):
        return self._request("GET", "/v1/jobs/%d" % int(job_id))

    def cancel(self, job_id):
        return self._request("POST", "/v1/jobs/%d/cancel" % int(job_id), {})

    def hold(self, job_id):
        return self._request("POST", "/v1/jobs/%d/hold" % int(job_id), {})

    def release(self, job_id):
        return self._request("POST", "/v1/jobs/%d/release" % int(job_id), {})

    def logs(self, job_id, follow=False):
        """The job's output as text; with follow=True an iterator of chunks until the job ends
        (the server streams them: GET /v1/jobs/ID/logs?follow=1)."""
        if not follow:
            data, _ = self._request("GET", "/v1/jobs/%d/logs" % int(job_id), raw=True)
            return data.decode("utf-8", "replace")
        return self._stream("/v1/jobs/%d/logs?follow=1" % int(job_id))

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

    def _stream(self, path, headers=None):
        """A streamed answer on a connection of its own: yields the body's text as it comes."""
        headers = dict(headers or {}, Authorization="Bearer " + self.token)
        conn = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
        try:
            try:
                conn.request("GET", path, headers=headers)
                sock = conn.sock  # http.client lets go of it once it reads "Connection: close"
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
