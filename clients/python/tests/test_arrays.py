"""Issue 16: dependencies (after_any, after_notok, singleton, begin) and job arrays in the Python
client, with the CLI's names, checks and words.

A fake server checks what the client sends and which routes it names ("12_7"); then the real
`baton up`, with `baton` and `python3 -m baton_client` side by side."""

import calendar
import datetime
import json
import time

import pytest

from test_client import cli, pycli, server  # noqa: F401 - `server` is a fixture
from test_parity import fake  # noqa: F401 - `fake` is a fixture

from baton_client import (BatonError, Client, job_ref, job_spec, parse_begin, parse_refs,  # noqa: E402
                          parse_targets)
from baton_client.__main__ import main as pymain  # noqa: E402

BEGIN_WORDS = "is not a time (+2h, now+30m, 14:00, 2026-12-01, 2026-12-01T09:00, or RFC 3339)"


@pytest.fixture
def tz(monkeypatch):
    """A local time zone away from UTC (and the same one for the `baton` CLI's processes)."""
    monkeypatch.setenv("TZ", "Asia/Kolkata")  # UTC+05:30, no daylight saving
    time.tzset()
    yield "Asia/Kolkata"
    monkeypatch.undo()
    time.tzset()


# ---- what the client sends ----

def test_dependency_begin_and_array_fields_go_into_the_spec(fake, tmp_path, monkeypatch, tz):
    fake.json("POST", "/v1/jobs", {"id": 1})
    monkeypatch.chdir(tmp_path)
    c = Client(fake.url, "t")
    c.submit(["true"], after=[1, 2], after_any=3, after_notok=[4, 5], singleton=True,
             begin="2030-01-01T09:00:00Z", array="0-99%8")
    assert fake.requests[-1][3] == {
        "command": ["true"], "name": "true", "workdir": str(tmp_path), "resources": {"gpus": 0},
        "after": [1, 2], "after_any": [3], "after_notok": [4, 5], "singleton": True,
        "begin": "2030-01-01T09:00:00.000Z", "array": "0-99%8"}
    # A datetime: an aware one as it is, a naive one in local time (as the CLI's local forms).
    aware = datetime.datetime(2030, 1, 1, 9, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    assert job_spec(["x"], begin=aware)["begin"] == "2030-01-01T07:00:00.000Z"
    assert job_spec(["x"], begin=datetime.datetime(2030, 1, 1, 9, 0))["begin"] == "2030-01-01T03:30:00.000Z"
    assert job_spec(["x"], begin="2030-01-01T09:00")["begin"] == "2030-01-01T03:30:00.000Z"
    # Nothing for what was not asked: no empty lists, no false singleton.
    spec = job_spec(["x"], after=[], after_any=[], singleton=False, begin="")
    assert not {"after", "after_any", "after_notok", "singleton", "begin", "array"} & set(spec)
    # What needs the client's clock is read here, with the CLI's words; the rest is the server's
    # (test_the_server_checks_arrays_and_ids_and_a_dry_run_shows_the_tasks).
    with pytest.raises(ValueError) as e:
        job_spec(["x"], begin="tomorrow")
    assert 'begin: "tomorrow" ' + BEGIN_WORDS in str(e.value)
    assert fake.requests[-1][3]["array"] == "0-99%8" and len(fake.requests) == 1


def test_the_python_cli_sends_the_new_flags_as_baton_submit(fake, tmp_path, monkeypatch, capsys, tz):
    fake.json("POST", "/v1/jobs", {"id": 41})
    monkeypatch.chdir(tmp_path)
    argv = ["--server", fake.url, "--token", "t", "submit", "--after", "1,2", "--after", "3", "--after-any", "4,5",
            "--after-notok", "6", "--after-notok", "7,8", "--singleton", "--begin", "2030-06-01T12:00",
            "--array", "0-20:5%2", "--", "true"]
    assert pymain(argv) == 0
    assert capsys.readouterr().out == "41\n"
    assert fake.requests[-1][3] == {
        "command": ["true"], "name": "true", "workdir": str(tmp_path), "resources": {"gpus": 0},
        "after": [1, 2, 3], "after_any": [4, 5], "after_notok": [6, 7, 8], "singleton": True,
        "begin": "2030-06-01T06:30:00.000Z", "array": "0-20:5%2"}
    before = time.time()
    assert pymain(["--server", fake.url, "submit", "--begin", "now+90m", "--", "true"]) == 0
    sent = calendar.timegm(time.strptime(fake.requests[-1][3]["begin"][:19], "%Y-%m-%dT%H:%M:%S"))
    assert before + 5400 - 2 <= sent <= time.time() + 5400 + 1
    # Usage errors of the flags themselves, or of the client's clock: exit 2, nothing sent.
    sent = len(fake.requests)
    for bad, words in ((["--begin", "tomorrow"], '--begin: "tomorrow" ' + BEGIN_WORDS),
                       (["--after-any", "3,x"], "Could not convert: --after-any = 3,x")):
        assert pymain(["--server", fake.url, "submit", *bad, "--", "true"]) == 2, bad
        assert words in capsys.readouterr().err, bad
    assert len(fake.requests) == sent
    # The values are the server's to check: a refusal naming a field is a usage error (exit 2),
    # in the flag's words where `baton submit` names its flag; one naming none is exit 1.
    for field, message, code, said in (
            ("time_limit", 'time_limit: unknown unit (got "2x")', 2, 'baton: --time: unknown unit (got "2x")'),
            ("array", 'array: "0-99%0" has a bad throttle after %', 2, 'baton: array: "0-99%0" has a bad throttle'),
            (None, "after: job 9 does not exist", 1, "baton: after: job 9 does not exist")):
        error = {"code": "invalid_argument", "message": message}
        if field:
            error["field"] = field
        fake.json("POST", "/v1/jobs", {"error": error}, 400)
        assert pymain(["--server", fake.url, "submit", "--", "true"]) == code, field
        assert said in capsys.readouterr().err, field


def test_begin_reads_what_baton_submit_reads(tz):
    now = calendar.timegm((2026, 11, 25, 6, 0, 0))  # 11:30 in Kolkata
    assert parse_begin("now", now=now) == "2026-11-25T06:00:00.000Z"
    assert parse_begin("+2h", now=now) == "2026-11-25T08:00:00.000Z"
    assert parse_begin("now+30m", now=now) == "2026-11-25T06:30:00.000Z"
    assert parse_begin("+1.5h", now=now) == "2026-11-25T07:30:00.000Z"
    assert parse_begin("14:00", now=now) == "2026-11-25T08:30:00.000Z"  # later today
    assert parse_begin("09:15:30", now=now) == "2026-11-26T03:45:30.000Z"  # passed: tomorrow
    assert parse_begin("2026-12-01", now=now) == "2026-11-30T18:30:00.000Z"  # local midnight
    assert parse_begin("2026-12-01T09:00", now=now) == "2026-12-01T03:30:00.000Z"
    assert parse_begin("2026-12-01T09:00:05", now=now) == "2026-12-01T03:30:05.000Z"
    assert parse_begin("2026-12-01T09:00:00Z", now=now) == "2026-12-01T09:00:00.000Z"
    assert parse_begin("2026-12-01T09:00:00.25Z", now=now) == "2026-12-01T09:00:00.250Z"
    for bad in ("tomorrow", "now+", "nowish", "+2x", "25:00", "12:60", "2026-13-01", "2026-12-00",
                "2026-12-01T09:00Z", "2026-12-01T09", "14:00 ", "next week"):
        with pytest.raises(ValueError) as e:
            parse_begin(bad, now=now)
        assert str(e.value) == '--begin: "%s" %s' % (bad, BEGIN_WORDS)


def test_task_refs_name_tasks_in_every_route(fake):
    tasks = [{"id": 12 + i, "array_id": 12, "array_index": i, "array": "0-3", "name": "a", "user": "u",
              "state": "pending", "resources": {"nodes": 1}, "allocation": []} for i in range(4)]
    fake.routes[("GET", "/v1/jobs")] = lambda q, b: (200, {}, json.dumps({
        "jobs": [t for t in tasks if q.get("array") in (None, "12") and t["id"] > int(q.get("after", 0))],
        "next": None}).encode())
    for t in tasks:
        ref = "12_%d" % t["array_index"]
        fake.json("GET", "/v1/jobs/" + ref, t)
        for action in ("cancel", "hold", "release"):
            fake.json("POST", "/v1/jobs/%s/%s" % (ref, action), dict(t, state="cancelled"))
    fake.json("GET", "/v1/jobs/12", tasks[0])
    fake.json("POST", "/v1/jobs/12/hold", dict(tasks[0], state="held"))
    fake.routes[("GET", "/v1/jobs/12_2/logs")] = lambda q, b: (200, {"X-Baton-Log-Size": "7"}, b"task 2\n")
    c = Client(fake.url, "t")
    assert c.show("12_2")["id"] == 14 and fake.requests[-1][1] == "/v1/jobs/12_2"
    assert c.logs("12_2") == "task 2\n"
    assert c.cancel("12_1")["id"] == 13 and fake.requests[-1][:2] == ("POST", "/v1/jobs/12_1/cancel")
    assert c.hold(12)["state"] == "held" and fake.requests[-1][:2] == ("POST", "/v1/jobs/12/hold")
    # Several tasks: each named, as `baton cancel 12_0-2` does.
    fake.requests.clear()
    assert [j["id"] for j in c.cancel("12_0-2")] == [12, 13, 14]
    assert [r[1] for r in fake.requests] == ["/v1/jobs/12_0/cancel", "/v1/jobs/12_1/cancel", "/v1/jobs/12_2/cancel"]
    # Beside a filter, a task's name picks that task from the listing.
    assert c.select("12_3", name="a") == [15]
    # The array's tasks, and waiting for them all.
    assert [j["array_index"] for j in c.jobs(array=12)] == [0, 1, 2, 3]
    assert [q.get("array") for m, p, q, _, _ in fake.requests if p == "/v1/jobs"][-1] == "12"
    for t in tasks:
        t["state"] = "succeeded"
    ended = c.wait(12, timeout=5)
    assert [j["array_index"] for j in ended] == [0, 1, 2, 3]
    assert c.wait("12_3", timeout=5)["id"] == 15
    assert [j["id"] for j in c.wait_all("12_1-2", timeout=5)] == [13, 14]
    with pytest.raises(ValueError, match="not a range"):
        c.show("12_0-3")
    with pytest.raises(ValueError):
        c.jobs(array="12_1")


def test_refs_read_as_the_cli_reads_them():
    assert parse_refs(["12_0-3", "5", "7-9", "3,5", 4]) == ["12_0", "12_1", "12_2", "12_3", "5", "7", "8", "9",
                                                            "3", "4"]
    assert parse_targets(["12_1-2", 7, "10-12"]) == (["12_1", "12_2", 7], [(10, 12)])
    assert job_ref("12_0") == "12_0" and job_ref(12) == "12" and job_ref("12,") == "12"
    for bad in ("12_", "x_1", "0_1", "12_-1", "0"):
        with pytest.raises(ValueError, match="is not a job id or a range of them such as 10-20"):
            parse_refs([bad])
    with pytest.raises(ValueError, match="a range goes up"):
        parse_refs(["12_3-1"])
    with pytest.raises(ValueError, match="at most 100000 ids in one range"):
        parse_refs(["12_0-100000"])


# ---- against the real server, beside `baton` ----

SAME = ("name", "command", "resources", "after", "after_any", "after_notok", "singleton", "begin", "array",
        "state", "reason", "workdir")


def test_the_new_fields_give_the_same_job_as_baton_submit(server, tz):
    c = Client(server["url"], server["token"], ca=server["ca"])
    first, second = c.submit(["true"])["id"], c.submit(["false"])["id"]
    c.wait(first, timeout=30)
    c.wait(second, timeout=30)
    flags = ["--name", "deps", "--after-any", "%d,%d" % (first, second), "--after-notok", str(second),
             "--after", str(first), "--singleton", "--begin", "2030-01-01T09:00"]
    code, out, err = cli(server, "submit", *flags, "--", "true")
    assert code == 0, err
    code, pyout, err = pycli(server, "submit", *flags, "--", "true")
    assert code == 0, err
    api = c.submit(["true"], name="deps", after_any=[first, second], after_notok=second, after=first,
                   singleton=True, begin="2030-01-01T09:00")
    from_cli, from_py = c.show(int(out)), c.show(int(pyout))
    for field in set(SAME) - {"reason"}:  # a singleton waits for the one before it: the reasons differ
        assert from_cli.get(field) == from_py.get(field) == api.get(field), field
    assert from_py["begin"] == "2030-01-01T03:30:00.000Z" and from_py["after_any"] == [first, second]
    assert from_py["singleton"] is True and from_py["state"] == "pending"
    # Relative and UTC begin times: the same instant, to within the time between the calls.
    for begin in ("+2h", "now+30m", "2031-02-03T04:05:06Z", "2031-02-03"):
        code, out, err = cli(server, "submit", "--begin", begin, "--", "true")
        assert code == 0, err
        code, pyout, err = pycli(server, "submit", "--begin", begin, "--", "true")
        assert code == 0, err
        a, b = (calendar.timegm(time.strptime(c.show(int(o))["begin"][:19], "%Y-%m-%dT%H:%M:%S")) for o in (out, pyout))
        assert abs(a - b) <= 5, (begin, a, b)
    # Usage errors: exit 2 and the same words from both, before anything is sent.
    for bad in (["--begin", "tomorrow"], ["--begin", "now+"], ["--begin", "25:00"], ["--begin", "2026-12-01T09:00Z"],
                ["--array", "5-3"], ["--array", "1,%2"], ["--array", "0-99%0"], ["--array", "x"],
                ["--array", "0-2000000"], ["--array", "0-20000"], ["--after", "0"], ["--after-notok", "0"],
                ["--after-any", "-3"]):
        code_cli, _, err_cli = cli(server, "submit", *bad, "--", "true")
        code_py, _, err_py = pycli(server, "submit", *bad, "--", "true")
        assert code_cli == code_py == 2, (bad, err_cli, err_py)
        assert err_cli.strip() == err_py.strip(), bad
    # The flag parser's words, up to where each names its own help.
    code_cli, _, err_cli = cli(server, "submit", "--after-any", "1,x", "--", "true")
    code_py, _, err_py = pycli(server, "submit", "--after-any", "1,x", "--", "true")
    assert code_cli == code_py == 2 and err_cli.split(" (see")[0] == err_py.split(" (see")[0]
    # A job named that does not exist: the server's words, exit 1 from both.
    code_cli, _, err_cli = cli(server, "submit", "--after-notok", "9999", "--", "true")
    code_py, _, err_py = pycli(server, "submit", "--after-notok", "9999", "--", "true")
    assert code_cli == code_py == 1 and err_cli == err_py and "9999" in err_py


def _strip(job):
    """A job's JSON without what differs between two jobs submitted one after the other."""
    return {k: v for k, v in job.items() if k in SAME or k in ("array_index", "priority", "project", "pool", "env")}


def test_arrays_side_by_side(server):
    c = Client(server["url"], server["token"], ca=server["ca"])
    blocker = c.submit(["sleep", "60"], gpus=2)["id"]
    flags = ["-g", "1", "--array", "0-3%2", "--name", "arr"]
    command = ["sh", "-c", "echo task $BATON_ARRAY_INDEX of $BATON_ARRAY_JOB_ID; exit $(( BATON_ARRAY_INDEX % 2 ))"]
    code, out, err = cli(server, "submit", *flags, "--", *command)
    assert code == 0, err
    code, pyout, err = pycli(server, "submit", *flags, "--", *command)
    assert code == 0, err
    api = c.submit(command, gpus=1, array="0-3%2", name="arr")
    a, b = int(out), int(pyout)
    assert b == a + 4 and api["id"] == b + 4 and api["array_id"] == api["id"] and api["array_index"] == 0
    # The same tasks, the same JSON for each, through both front ends and the library.
    for array in (a, b, api["id"]):
        tasks = c.jobs(array=array)
        assert [(t["id"], t["array_id"], t["array_index"]) for t in tasks] == \
            [(array + i, array, i) for i in range(4)]
    for i in range(4):
        ref_a, ref_b = "%d_%d" % (a, i), "%d_%d" % (b, i)
        shown = [json.loads(cli(server, "show", ref_a, "--json")[1]),
                 json.loads(pycli(server, "show", ref_a, "--json")[1]),
                 json.loads(pycli(server, "show", ref_b, "--json")[1]), c.show("%d_%d" % (api["id"], i))]
        assert shown[0]["id"] == shown[1]["id"] == a + i
        assert _strip(shown[0]) == _strip(shown[1]) == _strip(shown[2]) == _strip(shown[3]), i
    assert c.show("%d_3" % a)["reason"] == "array_limit"
    # `jobs` folds an array into one line, as `baton jobs` does, unless --expand.
    for front in (cli, pycli):
        lines = [l.split() for l in front(server, "jobs")[1].splitlines()]
        assert ["%d_[0-3%%2]" % a, "arr"] == lines[2][:2] and "4 pending" in " ".join(lines[2]), (front, lines)
        lines = [l.split() for l in front(server, "jobs", "--expand")[1].splitlines()]
        assert [l[0] for l in lines[2:6]] == ["%d_%d" % (a, i) for i in range(4)], (front, lines)
    listed = [[(j["id"], j.get("array_id"), j.get("array_index"), j["state"]) for j in json.loads(out)["jobs"]]
              for out in (cli(server, "jobs", "--json")[1], pycli(server, "jobs", "--json")[1])]
    assert listed[0] == listed[1] and len(listed[0]) == 13  # --json: every task, from both
    # Bad refs: exit 2 and the same words from both.
    for args in (["show", "%d_0-3" % a], ["show", "%d_x" % a], ["logs", "x_1"], ["wait", "%d_3-1" % a],
                 ["cancel", "%d_" % a], ["hold", "0_1"]):
        code_cli, _, err_cli = cli(server, *args)
        code_py, _, err_py = pycli(server, *args)
        assert code_cli == code_py == 2, (args, err_cli, err_py)
        assert err_cli == err_py, args
    # Tasks by name: hold two with the CLI, two with the client, the same output.
    code_cli, out_cli, _ = cli(server, "hold", "%d_0-1" % a)
    code_py, out_py, _ = pycli(server, "hold", "%d_0-1" % b)
    assert code_cli == code_py == 0 and out_cli.replace(str(a), "A") == out_py.replace(str(b), "A")
    assert [t["state"] for t in c.jobs(array=a)] == [t["state"] for t in c.jobs(array=b)] == \
        ["held", "held", "pending", "pending"]
    # The array's id: every task the action applies to.
    assert cli(server, "hold", str(a))[1] == "job %d: held\n" % a
    assert pycli(server, "hold", str(b))[1] == "job %d: held\n" % b
    assert c.hold(api["id"])["id"] == api["id"]
    assert all(t["state"] == "held" for x in (a, b, api["id"]) for t in c.jobs(array=x))
    assert cli(server, "hold", "%d_2" % a) == pycli(server, "hold", "%d_2" % a)  # already held: the same words
    assert cli(server, "release", str(a))[0] == pycli(server, "release", str(b))[0] == 0
    c.cancel(api["id"])
    assert all(t["state"] == "cancelled" for t in c.wait(api["id"], timeout=30))
    c.cancel(blocker)
    # Waiting on an array's id waits for every task: tasks 1 and 3 fail, so both exit 1 and name them.
    code_cli, _, err_cli = cli(server, "wait", str(a))
    code_py, _, err_py = pycli(server, "wait", str(b))
    assert code_cli == code_py == 1
    assert err_cli.replace(str(a), "A") == err_py.replace(str(b), "A")
    assert [l.split()[2] for l in err_py.splitlines()] == ["%d_1" % b, "%d_3" % b]
    ended = c.wait(a, timeout=30)
    assert [(t["array_index"], t["state"]) for t in ended] == \
        [(0, "succeeded"), (1, "failed"), (2, "succeeded"), (3, "failed")]
    assert cli(server, "wait", "%d_0" % a, "%d_2" % a)[0] == pycli(server, "wait", "%d_0" % b, "%d_2" % b)[0] == 0
    assert cli(server, "wait", "%d_0-1" % a)[0] == pycli(server, "wait", "%d_0-1" % b)[0] == 1
    # A task's log, through both.
    for i in range(4):
        text = "task %d of %d\n" % (i, a)
        for _ in range(100):
            if c.logs("%d_%d" % (a, i)) == text:
                break
            time.sleep(0.05)
        assert cli(server, "logs", "%d_%d" % (a, i))[1] == pycli(server, "logs", "%d_%d" % (a, i))[1] == text


def test_the_server_checks_arrays_and_ids_and_a_dry_run_shows_the_tasks(server):
    """Arrays and dependency ids are the server's to check (one source of truth): the client sends
    them as given, a dry run shows the tasks an array makes, a refusal names its field, and
    `baton-py submit` says what `baton submit` says, exit 2."""
    c = Client(server["url"], server["token"], ca=server["ca"])
    for array, indices in (("0-99%8", list(range(100))), ("1,5,9", [1, 5, 9]), ("0-20:5", [0, 5, 10, 15, 20]),
                           ("3,1-2,3", [1, 2, 3])):
        jobs = c.submit(["true"], array=array, dry_run=True)
        assert [j["array_index"] for j in jobs] == indices, array
        assert all("id" not in j and j["state"] == "pending" and j["array"] == array for j in jobs)
    for bad, why in (("5-3", "is not a list of indices and ranges"), ("x", "is not a list of indices and ranges"),
                     ("1,", "ends with a comma"), ("1,%2", "ends with a comma"), ("%2", "names no index"),
                     ("0-9%0", "has a bad throttle after %"), ("0-9:0", "has a bad step"),
                     ("0-2000000", "has an index over 1000000"), ("0-20000", "has more than 10000 tasks")):
        with pytest.raises(BatonError) as e:
            c.submit(["true"], array=bad, dry_run=True)
        assert (e.value.status, e.value.field) == (400, "array")
        assert e.value.message == 'array: "%s" %s (e.g. 0-99%%8, 1,5,9 or 0-20:5)' % (bad, why)
        code_cli, _, err_cli = cli(server, "submit", "--array", bad, "--", "true")
        code_py, _, err_py = pycli(server, "submit", "--array", bad, "--", "true")
        assert code_cli == code_py == 2 and err_cli == err_py, (bad, err_cli, err_py)
    for kwargs, field in ((dict(after_any=[0]), "after_any"), (dict(after_notok=["x"]), "after_notok[0]"),
                          (dict(after=-1), "after"), (dict(after_any=list(range(1, 258))), "after_any")):
        with pytest.raises(BatonError) as e:
            c.submit(["x"], dry_run=True, **kwargs)
        assert e.value.status == 400 and e.value.field == field, (kwargs, e.value.message)
        assert e.value.message.startswith(field + ": "), e.value.message
    # A job that does not exist is the cluster's refusal, not the body's: no field, exit 1 from both.
    with pytest.raises(BatonError) as e:
        c.submit(["x"], after=999, dry_run=True)
    assert e.value.field is None and e.value.message == "after: job 999 does not exist"
    assert c.jobs(state=["pending", "held", "running", "succeeded", "failed", "cancelled"]) == []  # none made
