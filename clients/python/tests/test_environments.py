"""Issue 17: `venv=` and `conda=` in the Python client send what `baton submit --venv/--conda`
sends; a venv path is made absolute from the current directory, as the CLI does."""

import json
import os

from test_client import cli, pycli, server  # noqa: F401 - `server` is a fixture

from baton_client import Client, job_spec


def test_venv_is_absolute_and_conda_is_kept(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = job_spec(["python3", "train.py"], venv="envs/train/")
    assert spec["venv"] == os.path.join(str(tmp_path), "envs", "train")
    spec = job_spec(["python3", "train.py"], conda="torch-2.3")
    assert spec["conda"] == "torch-2.3" and "venv" not in spec


def test_the_cli_and_the_client_send_the_same_environment(server, tmp_path):
    c = Client(server["url"], server["token"], ca=server["ca"])
    venv = str(tmp_path / "venv")
    job = c.submit(["true"], venv=venv, hold=True)
    code, out, err = pycli(server, "submit", "--venv", venv, "--hold", "--", "true")
    assert code == 0, err
    _, shown, _ = cli(server, "show", out.strip(), "--json")
    assert json.loads(shown)["venv"] == job["venv"] == venv
    code, out, err = cli(server, "submit", "--conda", "base", "--hold", "--", "true")
    assert code == 0, err
    assert c.show(int(out.strip()))["conda"] == "base"
    job = c.submit(["true"], best_metric="acc:max", hold=True)
    assert job["best_metric"] == "acc:max"
    assert job["metric"] == {"name": "acc", "goal": "max", "last": None, "best": None}
