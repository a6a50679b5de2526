"""Issue 16: the Python client with the CLI's semantics, side by side with `baton`.

Unit tests against a fake HTTP server in the test (what the client sends, how it puts the logs
of several nodes together), then the real `baton up` (with two more `baton agent`s for a job on
three nodes), comparing what `baton` and the client do."""

import http.server
import json
import os
import signal
import subprocess
import threading
import time
import urllib.parse

import pytest

from test_client import BATON, cli, pycli, server  # noqa: F401 - `server` is a fixture

from baton_client import BatonError, Client, job_spec, parse_targets  # noqa: E402
from baton_client.__main__ import main as pymain  # noqa: E402


# ---- a fake server: records what it is sent, answers from a table ----

class FakeBaton:
    """A tiny HTTP server: `routes` maps (METHOD, path) to a function(query, body) -> (status,
    headers, body as bytes or a list of byte pieces sent with pauses)."""

    def __init__(self):
        self.routes, self.requests = {}, []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *args):
                pass

            def _answer(self, method):
                url = urllib.parse.urlsplit(self.path)
                query = dict(urllib.parse.parse_qsl(url.query))
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                fake.requests.append((method, url.path, query, body, dict(self.headers)))
                route = fake.routes.get((method, url.path))
                missing = (404, {}, b'{"error": {"code": "not_found", "message": "no route"}}')
                status, headers, out = route(query, body) if route else missing
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                if isinstance(out, bytes):
                    self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                for piece in [out] if isinstance(out, bytes) else out:
                    self.wfile.write(piece)
                    self.wfile.flush()
                    if not isinstance(out, bytes):
                        time.sleep(0.05)

            def do_GET(self):
                self._answer("GET")

            def do_POST(self):
                self._answer("POST")

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def json(self, method, path, value, status=200):
        self.routes[(method, path)] = lambda q, b: (status, {"Content-Type": "application/json"},
                                                    json.dumps(value).encode())

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def fake():
    f = FakeBaton()
    yield f
    f.close()


def paged_log(text_by_node, default, page=7):
    """A log route that honours `offset` and `node`, in pages of `page` bytes, as the server does."""
    def route(q, body):
        data = text_by_node[q.get("node", default)].encode()
        if q.get("follow"):
            lines = data.split(b"\n")
            return 200, {}, [line + b"\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
        offset = int(q.get("offset", 0))
        return 200, {"X-Baton-Log-Size": str(len(data))}, data[offset:offset + page]
    return route


def test_every_field_goes_into_the_spec_as_the_cli_sends_it(fake, tmp_path, monkeypatch):
    fake.json("POST", "/v1/jobs", {"id": 1})
    fake.json("POST", "/v1/jobs/batch", {"jobs": [{"id": 2}, {"id": 3}]})
    monkeypatch.chdir(tmp_path)
    c = Client(fake.url, "t")
    c.submit(["python3", "/x/train.py"], gpus=0.5, cpus=4, memory="64GiB", gpu_memory=40 << 30, gpu_type="H100",
             grace=10, signal="USR1@2m", hold=True, after=7, array="0-9%2", env=["A=1", "B=x=y"], retries=2,
             time_limit="2h", nodes=1, priority="high", project="p", pool="dev", preemptible=True,
             max_preemptions=3, idempotency_key="k")
    method, path, _, spec, headers = fake.requests[-1]
    assert (method, path, headers["Idempotency-Key"]) == ("POST", "/v1/jobs", "k")
    assert spec == {
        "command": ["python3", "/x/train.py"], "name": "python3", "workdir": str(tmp_path),
        "resources": {"gpus": 0.5, "cpus": 4, "memory": "64GiB", "gpu_memory": 40 << 30, "gpu_type": "H100",
                      "nodes": 1},
        "grace_period": 10, "signal": "USR1@2m", "hold": True, "after": [7], "array": "0-9%2",
        "env": {"A": "1", "B": "x=y"}, "retries": 2, "time_limit": "2h", "priority": "high", "project": "p",
        "pool": "dev", "preemptible": True, "max_preemptions": 3}
    # The defaults: the current directory, the program's name ("sh" for a string), nothing else.
    c.submit("echo hi | wc -c")
    assert fake.requests[-1][3] == {"command": "echo hi | wc -c", "name": "sh", "workdir": str(tmp_path),
                                    "resources": {"gpus": 0}}
    assert c.submit(["true"], workdir="/srv")["id"] == 1 and fake.requests[-1][3]["workdir"] == "/srv"
    c.submit(["true"], preemptible=False)
    assert fake.requests[-1][3]["preemptible"] is False
    jobs = c.submit_batch([{"command": ["a"], "gpus": 1, "time_limit": 90}, {"command": "b; c", "name": "n"}])
    assert [j["id"] for j in jobs] == [2, 3]
    assert fake.requests[-1][1:4:2] == ("/v1/jobs/batch", {"jobs": [
        {"command": ["a"], "name": "a", "workdir": str(tmp_path), "resources": {"gpus": 1}, "time_limit": 90},
        {"command": "b; c", "name": "n", "workdir": str(tmp_path), "resources": {"gpus": 0}}]})
    with pytest.raises(ValueError):
        c.submit_batch([])
    with pytest.raises(ValueError, match=r"jobs\[1\]"):
        c.submit_batch([{"command": ["a"]}, {"name": "no command"}])
    # The spec's values are the server's to check: sent as given ("0.25" is read as --gpus reads it).
    c.submit(["a"], gpus="0.25", array="5-3")
    assert fake.requests[-1][3]["resources"]["gpus"] == "0.25" and fake.requests[-1][3]["array"] == "5-3"
    # A dry run: the same spec to ?dry_run=true, the jobs it would make back.
    fake.json("POST", "/v1/jobs", {"dry_run": True, "jobs": [{"name": "a", "state": "pending"}]})
    assert c.submit(["a"], dry_run=True) == [{"name": "a", "state": "pending"}]
    assert fake.requests[-1][1:3] == ("/v1/jobs", {"dry_run": "true"})
    with pytest.raises(ValueError, match="KEY=VALUE"):
        job_spec(["a"], env=["novalue"])


def test_the_python_cli_sends_what_baton_submit_sends(fake, tmp_path, monkeypatch, capsys):
    fake.json("POST", "/v1/jobs", {"id": 41})
    monkeypatch.chdir(tmp_path)
    argv = ["--server", fake.url, "--token", "t", "submit", "-g", "2", "-t", "1h30m", "--env", "A=1", "--env", "B=2",
            "--gpu-type", "A100", "--gpu-memory", "40GiB", "--cpus", "8", "--memory", "64GiB", "--nodes", "2",
            "-p", "low", "--project", "p", "--pool", "q", "--name", "n", "--retries", "3",
            "--max-preemptions", "4", "--after", "5",
            "--after", "6,7", "--grace", "5s", "--signal", "USR1@1m", "--hold", "--preemptible", "--array", "1-4",
            "--", "python3", "x.py", "--lr", "0.1"]
    assert pymain(argv) == 0
    assert capsys.readouterr().out == "41\n"
    assert fake.requests[-1][3] == {
        "command": ["python3", "x.py", "--lr", "0.1"], "name": "n", "workdir": str(tmp_path),
        "resources": {"gpus": 2, "gpu_type": "A100", "gpu_memory": "40GiB", "cpus": 8, "memory": "64GiB",
                      "nodes": 2},
        "time_limit": "1h30m", "env": {"A": "1", "B": "2"}, "priority": "low", "project": "p", "pool": "q",
        "retries": 3, "max_preemptions": 4, "after": [5, 6, 7], "grace_period": "5s", "signal": "USR1@1m",
        "hold": True, "preemptible": True, "array": "1-4"}
    # Not preemptible, chosen: said as false (neither flag: nothing, the server's default).
    assert pymain(argv[:4] + ["submit", "--no-preemptible", "--", "true"]) == 0
    assert fake.requests[-1][3]["preemptible"] is False
    capsys.readouterr()
    # One word with shell characters runs under sh, as with `baton submit`; --workdir wins.
    assert pymain(["--server", fake.url, "submit", "--workdir", "/w", "--", "make && ./run"]) == 0
    assert fake.requests[-1][3] == {"command": "make && ./run", "name": "sh", "workdir": "/w",
                                    "resources": {"gpus": 0}}


def test_targets_take_ids_ranges_and_lists():
    assert parse_targets([7, "8", "10-12", "3,5-6"]) == ([7, 8, 3], [(10, 12), (5, 6)])
    for bad in ["x", "0", "1-", "-1", "12_", "_3", "12_x", "0_1"]:
        with pytest.raises(ValueError, match="is not a job id or a range of them such as 10-20"):
            parse_targets([bad])
    with pytest.raises(ValueError, match="a range goes up"):
        parse_targets(["5-3"])


def test_logs_of_a_job_on_three_nodes_come_prefixed_in_allocation_order(fake):
    logs = {"n2": "two a\ntwo b\n", "n1": "one\n", "n3": "three, no newline"}
    fake.json("GET", "/v1/jobs/5", {"id": 5, "state": "succeeded", "resources": {"nodes": 3},
                                     "allocation": [{"node": "n2", "gpus": [0]}, {"node": "n1", "gpus": [0]},
                                                    {"node": "n3", "gpus": [1]}]})
    fake.routes[("GET", "/v1/jobs/5/logs")] = paged_log(logs, "n2")
    c = Client(fake.url, "t")
    assert c.logs(5) == ("[n2 rank 0] two a\n[n2 rank 0] two b\n[n1 rank 1] one\n"
                         "[n3 rank 2] three, no newline\n")  # a newline added, as `baton logs` does
    asked = [q.get("node") for m, p, q, _, _ in fake.requests if p == "/v1/jobs/5/logs"]
    assert asked[0] == "n2" and asked[-1] == "n3" and len(asked) > 3  # several pages per node
    assert c.logs(5, node="n1") == "one\n"  # one node: as it is
    # Followed: every node's lines as they come, whole and prefixed.
    got = "".join(c.logs(5, follow=True))
    assert got.endswith("\n")
    assert sorted(got.splitlines()) == ["[n1 rank 1] one", "[n2 rank 0] two a", "[n2 rank 0] two b",
                                        "[n3 rank 2] three, no newline"]
    assert "".join(c.logs(5, follow=True, node="n2")) == "two a\ntwo b\n"
    # A one-node job's log is as it was, without a node named.
    fake.json("GET", "/v1/jobs/6", {"id": 6, "state": "running", "resources": {"nodes": 1},
                                     "allocation": [{"node": "n1", "gpus": [0]}]})
    fake.routes[("GET", "/v1/jobs/6/logs")] = paged_log({"n1": "solo\nline\n"}, "n1")
    assert c.logs(6) == "solo\nline\n"
    assert all("node" not in q for m, p, q, _, _ in fake.requests if p == "/v1/jobs/6/logs")


def test_many_at_once_picks_from_the_listed_jobs(fake):
    jobs = [{"id": i, "name": "sweep-%d" % i if i % 2 else "other", "user": "u", "state": "pending"}
            for i in range(1, 9)]
    fake.routes[("GET", "/v1/jobs")] = lambda q, b: (200, {}, json.dumps({
        "jobs": [j for j in jobs if j["id"] > int(q["after"])], "next": None}).encode())
    for i in range(1, 9):
        fake.json("POST", "/v1/jobs/%d/hold" % i, {"id": i, "state": "held"})
    fake.json("POST", "/v1/jobs/4/hold", {"error": {"code": "conflict", "message": "job 4 is running"}}, 409)
    c = Client(fake.url, "t")
    assert c.hold(3)["id"] == 3  # one id: the job, as before
    assert [j["id"] for j in c.hold("5-7", 1)] == [1, 5, 6, 7]
    listing = [q for m, p, q, _, _ in fake.requests if p == "/v1/jobs"][-1]
    assert (listing["state"], listing["after"]) == ("pending", "0")
    assert [j["id"] for j in c.hold(name="sweep-*")] == [1, 3, 5, 7]
    assert [j["id"] for j in c.hold("2-8", name="sweep-*")] == [3, 5, 7]
    with pytest.raises(BatonError) as e:
        c.hold(all=True)
    assert e.value.status == 409 and list(e.value.failed) == [4] and len(e.value.done) == 7
    with pytest.raises(ValueError, match="no jobs named"):
        c.hold()


# ---- against the real server, beside `baton` ----

def test_slurms_bare_numbers_and_clock_times_read_alike(server):
    """-t 30 is 30 minutes and --memory 4000 is 4000 MiB (as Slurm's --time and --mem), 2:30:00 and 1-12 are
    Slurm's clock forms: the same job from baton and baton-py."""
    c = Client(server["url"], server["token"], ca=server["ca"])
    for flags, limit_s, memory in ((["-t", "30", "--memory", "4000"], 1800, 4000 << 20),
                                   (["-t", "2:30:00", "--memory", "1.5"], 9000, 3 << 19),
                                   (["-t", "1-12"], 129600, 0)):
        code, out, err = cli(server, "submit", "--hold", *flags, "--", "true")
        assert code == 0, err
        code, pyout, err = pycli(server, "submit", "--hold", *flags, "--", "true")
        assert code == 0, err
        for job in (c.show(int(out)), c.show(int(pyout))):
            assert job["time_limit_s"] == limit_s, (flags, job)
            assert job["resources"]["memory_bytes"] == memory, (flags, job)


def test_all_fields_give_the_same_job_as_baton_submit(server):
    c = Client(server["url"], server["token"], ca=server["ca"])
    first = c.submit(["true"])["id"]
    flags = ["-g", "1", "--gpu-type", "H100", "--gpu-memory", "40GiB", "--cpus", "2", "--memory", "1GiB",
             "-p", "high", "--project", "research", "--name", "twin", "-t", "2h", "--grace", "10s",
             "--signal", "USR1@2m", "--retries", "2", "--max-preemptions", "2", "--after", str(first),
             "--env", "A=1", "--env", "B=2", "--hold", "--preemptible"]
    code, out, err = cli(server, "submit", *flags, "--", "python3", "-c", "print(1)")
    assert code == 0, err
    code, pyout, err = pycli(server, "submit", *flags, "--", "python3", "-c", "print(1)")
    assert code == 0, err
    from_cli, from_py = c.show(int(out)), c.show(int(pyout))
    api = c.submit(["python3", "-c", "print(1)"], gpus=1, gpu_type="H100", gpu_memory=40 << 30, cpus=2,
                   memory="1GiB", priority="high", project="research", name="twin", time_limit=7200,
                   grace="10s", signal="USR1@2m", retries=2, max_preemptions=2, after=[first],
                   env={"A": "1", "B": "2"}, hold=True, preemptible=True)
    fields = ("name", "command", "resources", "priority", "project", "pool", "time_limit_s", "grace_period_s",
              "signal", "retries", "max_preemptions", "env", "workdir", "after", "preemptible", "hold", "state")
    for field in fields:
        assert from_cli.get(field) == from_py.get(field) == api.get(field), field
    assert from_py["state"] == "held" and from_py["workdir"] == os.getcwd()
    assert from_py["max_preemptions"] == 2 and from_py["preemptions"] == 0
    assert from_py["resources"]["memory_bytes"] == 1 << 30 and from_py["signal"] == "USR1@2m"
    # Usage errors: exit 2 and the same words from both, before anything is sent.
    for bad in (["-t", "1.5x"], ["-t", "1.h"], ["--memory", "1.5XB"], ["--gpus", "0.1234"], ["--env", "=x"],
                ["--signal", "KILL"], ["-p", "urgent"]):
        code_cli, _, err_cli = cli(server, "submit", *bad, "--", "true")
        code_py, _, err_py = pycli(server, "submit", *bad, "--", "true")
        assert code_cli == code_py == 2, (bad, err_cli, err_py)
        assert err_cli.strip() == err_py.strip(), bad
    # A failure the server reports: exit 1 and the server's words from both.
    code_cli, _, err_cli = cli(server, "submit", "--after", "999", "--", "true")
    code_py, _, err_py = pycli(server, "submit", "--after", "999", "--", "true")
    assert code_cli == code_py == 1 and err_cli == err_py and "999" in err_py


def test_batch_queue_and_nodes(server):
    c = Client(server["url"], server["token"], ca=server["ca"])
    big = c.submit(["sleep", "60"], gpus=2)
    jobs = c.submit_batch([{"command": ["true"], "gpus": 1, "name": "b-%d" % i} for i in range(3)])
    ids = [j["id"] for j in jobs]
    assert ids == list(range(big["id"] + 1, big["id"] + 4))
    assert [c.show(i)["name"] for i in ids] == ["b-0", "b-1", "b-2"]
    for _ in range(100):
        if c.show(big["id"])["state"] == "running" and len(c.queue()) == 3:
            break
        time.sleep(0.05)
    queued = [j["id"] for j in c.queue()]
    assert queued == ids
    assert [j["id"] for j in json.loads(cli(server, "queue", "--json")[1])["jobs"]] == queued
    assert [j["id"] for j in json.loads(pycli(server, "queue", "--json")[1])["jobs"]] == queued
    assert [j["id"] for j in c.queue(limit=2)] == ids[:2]
    code, out, _ = pycli(server, "queue")
    assert code == 0 and out.splitlines()[0].split()[:2] == ["#", "ID"] and len(out.splitlines()) == 4
    names = [n["name"] for n in c.nodes()]
    assert names == [n["name"] for n in json.loads(cli(server, "nodes", "--json")[1])["nodes"]]
    assert names == [n["name"] for n in json.loads(pycli(server, "nodes", "--json")[1])["nodes"]]
    assert c.node(names[0])["name"] == names[0] and len(c.node(names[0])["gpus"]) == 2
    assert pycli(server, "nodes")[1].split()[0] == "NAME"
    with pytest.raises(BatonError) as e:
        c.submit_batch([{"command": ["true"]}, {"command": ["true"], "gpus": -1}])
    assert e.value.status == 400 and "jobs[1]" in e.value.message
    assert e.value.field == "jobs[1].resources.gpus"  # the spec's field, as the server names it


def test_cancel_hold_and_release_many(server):
    c = Client(server["url"], server["token"], ca=server["ca"])
    blocker = c.submit(["sleep", "60"], gpus=2)["id"]
    ids = [c.submit(["true"], gpus=1, name="sweep" if i % 2 else "other")["id"] for i in range(6)]
    # Ids: the CLI and the client alike.
    assert cli(server, "hold", str(ids[0]), str(ids[1]))[0] == 0
    assert pycli(server, "hold", str(ids[2]), str(ids[3]))[0] == 0
    assert [c.show(i)["state"] for i in ids[:4]] == ["held"] * 4
    code_cli, _, err_cli = cli(server, "hold", str(blocker))
    code_py, _, err_py = pycli(server, "hold", str(blocker))
    assert code_cli == code_py == 1 and err_cli == err_py  # 409: it runs
    assert cli(server, "release", str(ids[0]))[0] == pycli(server, "release", str(ids[1]))[0] == 0
    assert [c.show(i)["state"] for i in ids[:4]] == ["pending", "pending", "held", "held"]
    # Ranges and filters.
    assert [j["id"] for j in c.release("%d-%d" % (ids[0], ids[-1]))] == ids[2:4]
    assert pycli(server, "hold", "--name", "sweep")[0] == 0
    assert [c.show(i)["state"] for i in ids] == ["pending", "held"] * 3
    assert pycli(server, "release", "--all", "--user", c.show(ids[0])["user"])[0] == 0
    assert all(c.show(i)["state"] == "pending" for i in ids)
    code, _, err = pycli(server, "cancel", "%d-%d" % (ids[0], ids[2]), "--name", "other")
    assert code == 0, err
    assert [c.show(i)["state"] for i in ids[:3]] == ["cancelled", "pending", "cancelled"]
    assert [j["id"] for j in c.cancel(all=True, state="pending")] == [ids[1]] + ids[3:]
    assert c.show(blocker)["state"] == "running"
    assert [j["id"] for j in c.cancel(all=True)] == [blocker]
    assert c.wait(blocker, timeout=30)["state"] == "cancelled"
    assert cli(server, "cancel")[0] == pycli(server, "cancel")[0] == 2
    assert pycli(server, "cancel", "3-x")[0] == 2


def _agent(server, name, d, gpus):
    token = open(os.path.join(server["dir"], "agent.token")).read().strip()
    log = open(os.path.join(d, name + ".out"), "w")
    # The server's own CA, as an operator gives it to each agent (its URL is https://).
    return subprocess.Popen([BATON, "agent", "--server", server["url"], "--token", token, "--name", name,
                             "--data", os.path.join(d, name), "--gpus", gpus, "--address", "127.0.0.1",
                             "--tls-ca", server["ca"], "--allow-root-jobs"], stdout=log, stderr=subprocess.STDOUT,
                            env=dict(os.environ, BATON_NVML_LIBRARY="/nonexistent/libnvidia-ml.so.1"))


def test_logs_of_a_job_on_three_nodes(server, tmp_path):
    c = Client(server["url"], server["token"], ca=server["ca"])
    agents = [_agent(server, name, str(tmp_path), "2xH100-80GB") for name in ("n1", "n2")]
    try:
        for _ in range(400):
            if sum(n["state"] == "ready" for n in c.nodes()) == 3:
                break
            time.sleep(0.05)
        assert sum(n["state"] == "ready" for n in c.nodes()) == 3, c.nodes()
        job = c.submit("echo rank $NODE_RANK of 3; sleep 0.5; echo bye $NODE_RANK; printf end", gpus=6, nodes=3)
        followed = "".join(c.logs(job["id"], follow=True))
        done = c.wait(job["id"], timeout=60)
        assert done["state"] == "succeeded", done
        nodes = [part["node"] for part in done["allocation"]]
        assert len(nodes) == 3
        # A last line without a newline gets one, as `baton logs` prints it.
        expected = "".join("[%s rank %d] rank %d of 3\n[%s rank %d] bye %d\n[%s rank %d] end\n" %
                           (n, r, r, n, r, r, n, r) for r, n in enumerate(nodes))
        text = ""
        for _ in range(100):
            text = c.logs(job["id"])
            if text == expected:
                break
            time.sleep(0.05)
        assert text == expected
        assert sorted(followed.splitlines()) == sorted(expected.splitlines())
        # One node named: its log as it is.
        assert c.logs(job["id"], node=nodes[1]) == "rank 1 of 3\nbye 1\nend"
        # The two command lines print the same: every node's, labelled, or the one named.
        assert cli(server, "logs", str(job["id"]))[1] == pycli(server, "logs", str(job["id"]))[1] == expected
        for r, n in enumerate(nodes):
            assert cli(server, "logs", str(job["id"]), "--node", n)[1] == \
                pycli(server, "logs", str(job["id"]), "--node", n)[1] == "rank %d of 3\nbye %d\nend" % (r, r)
        for front in (cli, pycli):
            code, out, err = front(server, "logs", "-f", str(job["id"]))
            assert code == 0 and sorted(out.splitlines()) == sorted(expected.splitlines()), (front, err)
    finally:
        for a in agents:
            a.send_signal(signal.SIGTERM)
        for a in agents:
            a.wait(timeout=30)
