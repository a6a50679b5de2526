"""Issue 16: recurring jobs in the Python client: `schedule=` in a spec, Client.crons() and
delete_cron(), and `python3 -m baton_client crons` beside `baton crons` on a real `baton up`."""

import json
import time

from test_client import cli, pycli, server  # noqa: F401 - `server` is a fixture

from baton_client import BatonError, Client, job_spec


def test_schedule_goes_into_the_spec():
    spec = job_spec(["python3", "eval.py"], schedule="0 3 * * *", workdir="/tmp")
    assert spec["schedule"] == "0 3 * * *"
    assert "schedule" not in job_spec(["true"], workdir="/tmp")


def test_crons_list_and_delete_match_the_cli(server):
    c = Client(server["url"], server["token"], ca=server["ca"])
    job = c.submit(["python3", "eval.py"], name="nightly", schedule="30 3 * * mon-fri")
    assert job["state"] == "pending"
    assert job["schedule"] == "30 3 * * mon-fri"
    assert job["cron_id"] == job["id"]
    assert c.show(job["id"])["reason"] == "schedule"

    crons = c.crons()
    assert [x["id"] for x in crons] == [job["id"]]
    assert crons[0]["runs"] == 1 and crons[0]["last"] is None
    assert crons[0]["next_run"] == job["begin"]
    code, out, _ = cli(server, "crons", "--json")
    assert code == 0
    assert [x["id"] for x in json.loads(out)["crons"]] == [job["id"]]
    code, out, _ = pycli(server, "crons")
    assert code == 0
    assert "30 3 * * mon-fri" in out and "nightly" in out and "SCHEDULE" in out

    # The Python CLI submits one; the `baton` CLI sees it.
    code, out, err = pycli(server, "submit", "--schedule", "@daily", "--", "echo", "hi")
    assert code == 0, err
    second = int(out.strip())
    assert "recurring job %d (@daily): first run at" % second in err
    code, out, _ = cli(server, "crons")
    assert "@daily" in out

    deleted = c.delete_cron(job["id"])
    assert deleted["id"] == job["id"]
    assert c.show(job["id"])["state"] == "cancelled"
    code, out, _ = pycli(server, "crons", "delete", str(second))
    assert code == 0 and "recurring job %d: deleted" % second in out
    assert c.crons() == []
    code, out, _ = cli(server, "crons")
    assert "no recurring jobs" in out

    try:
        c.delete_cron(job["id"])
        raise AssertionError("a deleted cron was deleted again")
    except BatonError as e:
        assert e.status == 404
        assert e.message == "no recurring job %d (deleted before)" % job["id"]
    code, _, err = pycli(server, "crons", "delete", str(job["id"]))
    assert code == 1 and "no recurring job %d (deleted before)" % job["id"] in err


def test_a_bad_schedule_is_refused_with_the_servers_words(server):
    c = Client(server["url"], server["token"], ca=server["ca"])
    try:
        c.submit(["true"], schedule="0 3 * *")
        raise AssertionError("accepted a four-field schedule")
    except BatonError as e:
        assert e.status == 400
        assert "needs 5 fields" in e.message


def test_a_job_sized_from_its_model_matches_the_cli(server):
    """`model=` (and `--model` of the Python CLI) sizes the job as `baton submit --model` does."""
    c = Client(server["url"], server["token"], ca=server["ca"])
    for _ in range(500):  # sizing needs the node's GPUs: wait for its agent
        if any(n.get("state") == "ready" for n in c.nodes()):
            break
        time.sleep(0.02)
    job = c.submit(["true"], model={"name": "Llama-2-7B", "task": "inference"})
    assert job["resources"]["gpus"] == 1
    assert job["sized"].startswith("Llama-2-7B inference in bf16: 1 GPU of ")
    code, out, err = pycli(server, "submit", "--model", "Llama-2-7B", "--", "true")
    assert code == 0, err
    code, out, _ = cli(server, "show", out.strip(), "--json")
    assert json.loads(out)["sized"] == job["sized"]
    code, _, err = pycli(server, "submit", "--task", "finetune", "--", "true")
    assert code == 2 and "--task: sizes a job from its model" in err
