"""The Python client against a real `baton up`, beside the `baton` command line.

Run by `make test` through scripts/python-client-tests, which sets BATON_BINARY."""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from baton_client import BatonError, BatonUnavailable, Client  # noqa: E402

BATON = os.environ.get("BATON_BINARY", "baton")


@pytest.fixture
def server():
    """A `baton up` on 127.0.0.1:0 in a temporary directory; its URL (https://), admin token,
    directory and CA certificate (DIR/tls/ca.crt, which the server's certificate is checked against)."""
    with tempfile.TemporaryDirectory(prefix="baton-py-") as d:
        env = dict(os.environ, BATON_NVML_LIBRARY="/nonexistent/libnvidia-ml.so.1")
        log = open(os.path.join(d, "baton.out"), "w")
        proc = subprocess.Popen([BATON, "up", "--data", d, "--listen", "127.0.0.1:0", "--gpus", "2xH100-80GB"],
                                stdout=log, stderr=subprocess.STDOUT, env=env)
        url_file = os.path.join(d, "server.url")
        for _ in range(600):
            if os.path.exists(url_file) and open(url_file).read().strip():
                break
            assert proc.poll() is None, open(os.path.join(d, "baton.out")).read()
            time.sleep(0.01)
        url = open(url_file).read().strip()
        token = open(os.path.join(d, "admin.token")).read().strip()
        ca = os.path.join(d, "tls", "ca.crt")
        try:
            yield {"url": url, "token": token, "dir": d, "ca": ca}
        finally:
            c = Client(url, token, ca=ca)
            for job in c.jobs(state=["pending", "held", "running"]):
                c.cancel(job["id"])
                c.wait(job["id"], timeout=10)
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
            log.close()


def cli(server, *args):
    """`baton ARGS...` with BATON_HOME at the server's directory: (exit code, stdout, stderr)."""
    env = dict(os.environ, BATON_HOME=server["dir"])
    env.pop("BATON_SERVER", None)
    env.pop("BATON_TOKEN", None)
    env.pop("BATON_TLS_CA", None)  # the server's CA: BATON_HOME/tls/ca.crt
    p = subprocess.run([BATON, *args], capture_output=True, text=True, env=env, timeout=60)
    return p.returncode, p.stdout, p.stderr


def pycli(server, *args):
    """`python3 -m baton_client ARGS...` the same way."""
    env = dict(os.environ, BATON_HOME=server["dir"], PYTHONPATH=os.path.dirname(HERE))
    env.pop("BATON_SERVER", None)
    env.pop("BATON_TOKEN", None)
    env.pop("BATON_TLS_CA", None)
    p = subprocess.run([sys.executable, "-m", "baton_client", *args], capture_output=True, text=True, env=env,
                       timeout=60)
    return p.returncode, p.stdout, p.stderr


def test_submit_show_wait_logs_and_cancel(server):
    c = Client(server["url"], server["token"], ca=server["ca"])
    job = c.submit("echo hello from $BATON_JOB_ID", gpus=1, name="hello", env={"A": "1"})
    assert job["state"] in ("pending", "running")
    done = c.wait(job["id"], timeout=30)
    assert done["state"] == "succeeded"
    assert done["exit_code"] == 0
    for _ in range(200):
        if c.logs(job["id"]):
            break
        time.sleep(0.02)
    assert c.logs(job["id"]) == "hello from %d\n" % job["id"]
    long = c.submit(["sleep", "60"])
    assert c.show(long["id"])["command"] == ["sleep", "60"]
    assert c.cancel(long["id"])["id"] == long["id"]
    assert c.wait(long["id"], timeout=30)["state"] == "cancelled"
    with pytest.raises(TimeoutError):
        c.wait(c.submit(["sleep", "30"])["id"], timeout=0.2)


def test_update_changes_a_waiting_job_and_a_running_jobs_time_limit(server):
    c = Client(server["url"], server["token"], ca=server["ca"])
    waiting = c.submit(["true"], hold=True)
    job = c.update(waiting["id"], priority="high", name="renamed", time_limit="2:00:00")
    assert (job["priority"], job["name"], job["time_limit_s"]) == ("high", "renamed", 7200)
    running = c.submit(["sleep", "60"], time_limit=600)
    for _ in range(500):
        if c.show(running["id"])["state"] == "running":
            break
        time.sleep(0.02)
    assert c.update(running["id"], time_limit=1200)["time_limit_s"] == 1200
    with pytest.raises(BatonError) as e:
        c.update(running["id"], priority="low")
    assert e.value.status == 409 and "only its time limit and name change" in str(e.value)
    with pytest.raises(TypeError):
        c.update(running["id"], gpus=2)


def test_logs_follow_streams_until_the_job_ends(server):
    c = Client(server["url"], server["token"], ca=server["ca"])
    job = c.submit("for i in 1 2 3; do echo line $i; sleep 0.3; done")
    chunks = list(c.logs(job["id"], follow=True))
    assert "".join(chunks) == "line 1\nline 2\nline 3\n"


def test_followed_log_arrives_while_the_job_runs(server):
    c = Client(server["url"], server["token"], ca=server["ca"])
    job = c.submit("echo first; sleep 2; echo second")
    stream = c.logs(job["id"], follow=True)
    start = time.monotonic()
    got = ""
    while "first" not in got:
        got += next(stream)
    # The first line came through the stream before the job ended (it sleeps 2 s).
    assert time.monotonic() - start < 1.8
    assert c.show(job["id"])["state"] == "running"
    assert got + "".join(stream) == "first\nsecond\n"


def test_a_quiet_followed_log_outlasts_the_clients_timeout(server):
    c = Client(server["url"], server["token"], timeout=1.0, ca=server["ca"])
    job = c.submit("sleep 2; echo late")
    assert "".join(c.logs(job["id"], follow=True)) == "late\n"


def test_events_stream_as_server_sent_events(server):
    c = Client(server["url"], server["token"], ca=server["ca"])
    first = next(c.events())
    assert first["kind"] == "node_joined"
    assert first["seq"] >= 1


def test_errors_carry_the_servers_words(server):
    c = Client(server["url"], server["token"], ca=server["ca"])
    with pytest.raises(BatonError) as e:
        c.show(999)
    assert e.value.status == 404
    assert "999" in e.value.message
    with pytest.raises(BatonError) as e:
        c.submit(["true"], gpus=-1)
    assert e.value.status == 400
    assert "resources.gpus" in e.value.message
    with pytest.raises(BatonError) as e:
        Client(server["url"], "wrong", ca=server["ca"]).jobs()
    assert e.value.status == 401
    with pytest.raises(BatonError) as e:  # the server's to check, naming the field
        c.submit([])
    assert (e.value.status, e.value.field) == (400, "command") and e.value.message.startswith("command: ")
    with pytest.raises(BatonUnavailable):
        Client("http://127.0.0.1:1", "x").jobs()


def _stranger_ca(d):
    """A self-signed certificate of no one's: a CA file that does not sign the server's."""
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command to make a certificate with")
    key, cert = os.path.join(d, "stranger.key"), os.path.join(d, "stranger.crt")
    p = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-subj", "/CN=stranger", "-days", "1", "-keyout", key, "-out", cert],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return cert


def test_https_the_servers_certificate_is_checked_against_its_ca(server, tmp_path, monkeypatch):
    """`baton up` serves https:// with its own CA (DIR/tls/ca.crt). The client trusts it when
    given it (ca=, BATON_TLS_CA) or when it is the local data directory's, and refuses a
    certificate no CA it has signed, at once and saying what to do."""
    assert server["url"].startswith("https://"), server["url"]
    assert os.path.exists(server["ca"])
    empty = tmp_path / "home"
    empty.mkdir()
    for name in ("BATON_TLS_CA", "BATON_SERVER", "BATON_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("BATON_HOME", str(empty))  # no local CA: only what each client is given
    # Its own CA, given: the API over TLS, a followed log (a stream) too.
    c = Client(server["url"], server["token"], ca=server["ca"])
    job = c.submit(["echo", "over tls"])
    assert job["id"] in [j["id"] for j in c.jobs()]
    assert "".join(c.logs(job["id"], follow=True)) == "over tls\n"
    assert c.wait(job["id"], timeout=30)["state"] == "succeeded"
    assert next(c.events())["seq"] >= 1
    # Another CA's certificate, given: refused with the words of `baton`, and not tried again.
    stranger = _stranger_ca(str(tmp_path))
    start = time.monotonic()
    with pytest.raises(BatonUnavailable) as e:
        Client(server["url"], server["token"], ca=stranger).jobs()
    assert time.monotonic() - start < 10
    assert "certificate is not trusted" in e.value.message, e.value.message
    assert "ca=FILE" in e.value.message and "BATON_TLS_CA" in e.value.message
    with pytest.raises(BatonUnavailable, match="certificate is not trusted"):
        next(Client(server["url"], server["token"], ca=stranger).events())  # a stream's connection too
    # Neither given nor local: the system's CAs do not know it.
    with pytest.raises(BatonUnavailable, match="certificate is not trusted"):
        Client(server["url"], server["token"]).jobs()
    # BATON_TLS_CA when ca= is not given; ca= before it.
    monkeypatch.setenv("BATON_TLS_CA", stranger)
    with pytest.raises(BatonUnavailable, match="certificate is not trusted"):
        Client(server["url"], server["token"]).jobs()
    assert Client(server["url"], server["token"], ca=server["ca"]).show(job["id"])["id"] == job["id"]
    monkeypatch.setenv("BATON_TLS_CA", server["ca"])
    assert Client(server["url"], server["token"]).show(job["id"])["id"] == job["id"]
    monkeypatch.delenv("BATON_TLS_CA")
    # The local data directory's CA (what `baton up` made there), with its server.url and token.
    monkeypatch.setenv("BATON_HOME", server["dir"])
    assert Client().show(job["id"])["id"] == job["id"]
    # A CA file that cannot be read: a usage error, before anything is sent.
    with pytest.raises(ValueError, match="cannot be read as PEM certificates"):
        Client(server["url"], server["token"], ca=str(tmp_path / "missing.crt"))
    # The same port answers plain http:// on loopback, as before.
    plain = "http://" + server["url"][len("https://"):]
    assert Client(plain, server["token"]).show(job["id"])["id"] == job["id"]


def test_idempotency_key_gives_the_same_job(server):
    c = Client(server["url"], server["token"], ca=server["ca"])
    a = c.submit(["true"], idempotency_key="py-1")
    b = c.submit(["true"], idempotency_key="py-1")
    assert a["id"] == b["id"]


def test_the_cli_and_the_client_report_the_same(server):
    c = Client(server["url"], server["token"], ca=server["ca"])
    ids = [c.submit(["true"], name="py-%d" % i)["id"] for i in range(3)]
    code, out, err = cli(server, "submit", "--name", "from-cli", "--", "false")
    assert code == 0, err
    ids.append(int(out.strip()))
    for i in ids:
        c.wait(i, timeout=30)
    code, out, err = cli(server, "jobs", "--all", "--json")
    assert code == 0, err
    from_cli = {j["id"]: (j["name"], j["user"], j["state"], j["exit_code"]) for j in json.loads(out)["jobs"]}
    from_py = {j["id"]: (j["name"], j["user"], j["state"], j["exit_code"]) for j in c.jobs()}
    assert from_cli == from_py
    assert from_py[ids[-1]][2] == "failed"
    # Without --all both list only what is still to run or running: nothing here.
    assert json.loads(cli(server, "jobs", "--json")[1])["jobs"] == json.loads(pycli(server, "jobs", "--json")[1])["jobs"] == []
    assert json.loads(pycli(server, "jobs", "--all", "--json")[1])["jobs"] == c.jobs()
    # The same commands through both front ends: the same answers and exit codes.
    assert cli(server, "show", str(ids[0]), "--json")[0] == 0
    assert json.loads(cli(server, "show", str(ids[0]), "--json")[1])["state"] == \
        json.loads(pycli(server, "show", str(ids[0]), "--json")[1])["state"]
    assert cli(server, "wait", str(ids[0]))[0] == pycli(server, "wait", str(ids[0]))[0] == 0
    assert cli(server, "wait", str(ids[-1]))[0] == pycli(server, "wait", str(ids[-1]))[0] == 1
    code_cli, _, err_cli = cli(server, "show", "999")
    code_py, _, err_py = pycli(server, "show", "999")
    assert code_cli == code_py == 1
    assert err_cli.strip() == err_py.strip()
    assert pycli(server, "wait", "1", "--timeout", "soon")[0] == 2  # a usage error, as the CLI's
    code, out, err = pycli(server, "submit", "-g", "1", "--", "echo", "hi")
    assert code == 0, err
    assert c.wait(int(out), timeout=30)["state"] == "succeeded"
    assert cli(server, "logs", out.strip())[1] == pycli(server, "logs", out.strip())[1]


def test_the_readme_install_runs(tmp_path):
    """The install commands of clients/python/README.md, run as written with Debian's Python,
    in a copy of the repository (pip builds in the source directory), with a HOME of its own
    and no pip settings of this machine's: nothing is fetched."""
    readme = open(os.path.join(os.path.dirname(HERE), "README.md")).read()
    block = readme.split("```sh\n", 1)[1].split("```", 1)[0]
    assert "pip install" in block
    repo = tmp_path / "repo"
    shutil.copytree(os.path.dirname(HERE), repo / "clients" / "python",
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", ".pytest_cache"))
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    p = subprocess.run(["bash", "-ec", block], capture_output=True, text=True, env=env, cwd=str(repo))
    assert p.returncode == 0, block + p.stdout + p.stderr
    assert "usage: baton-py" in p.stdout, p.stdout
    q = subprocess.run([str(tmp_path / ".venvs" / "baton" / "bin" / "python"), "-c",
                        "import baton_client; print(baton_client.TERMINAL_STATES[0])"],
                       capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert q.stdout.strip() == "succeeded", q.stderr


def test_several_servers_the_client_follows_a_standby_to_the_leader(server):
    """BATON_SERVER=dead,standby,...: an address that does not answer is passed over, and a
    standby's 307 with X-Baton-Leader (as a standby controller answers) leads to the leader.
    The stand-in standby speaks plain http://, the leader https://: each by its own scheme."""
    import http.server
    import socket
    import threading

    leader = server["url"]

    class Standby(http.server.BaseHTTPRequestHandler):
        def _point(self):
            self.send_response(307)
            self.send_header("X-Baton-Role", "standby")
            self.send_header("X-Baton-Leader", leader)
            self.send_header("Location", leader + self.path)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        do_GET = do_POST = _point

        def log_message(self, *args):
            pass

    standby = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Standby)
    threading.Thread(target=standby.serve_forever, daemon=True).start()
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
    try:
        urls = "http://127.0.0.1:%d,http://127.0.0.1:%d" % (dead.getsockname()[1], standby.server_address[1])
        c = Client(urls, server["token"], ca=server["ca"])
        job = c.submit(["true"], idempotency_key="k-1")
        assert c.server == leader
        assert c.show(job["id"])["id"] == job["id"]
        # A submit without a key is not sent twice where the first may have landed, but a
        # standby's answer means it did not: that one is followed too.
        c2 = Client("http://127.0.0.1:%d,%s" % (standby.server_address[1], leader), server["token"], ca=server["ca"])
        assert c2.submit(["true"])["id"] > job["id"]
        assert c2.server == leader
    finally:
        standby.shutdown()
        dead.close()


def test_several_servers_a_stalled_one_costs_nothing(server):
    """An address that takes connections and answers nothing (a controller stopped with SIGSTOP
    keeps its listening socket), listed first: the client and the command line ask every
    address at once and talk to the one that leads, instead of waiting on the stalled one."""
    import socket

    stalled = socket.socket()
    stalled.bind(("127.0.0.1", 0))
    stalled.listen(16)  # never accepted: the kernel completes each connection, no one answers
    try:
        urls = "https://127.0.0.1:%d,%s" % (stalled.getsockname()[1], server["url"])
        start = time.monotonic()
        c = Client(urls, server["token"], ca=server["ca"])
        job = c.submit(["true"])
        assert c.server == server["url"]
        assert c.show(job["id"])["id"] == job["id"]
        assert time.monotonic() - start < 5, "waited on the stalled address"
        start = time.monotonic()
        code, out, err = cli(server, "--server", urls, "jobs", "--all")
        assert code == 0, err
        assert str(job["id"]) in out
        assert time.monotonic() - start < 5, "the command line waited on the stalled address"
    finally:
        stalled.close()

