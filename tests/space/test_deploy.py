"""``space deploy``: the uploaded files alone install and launch the app."""

from __future__ import annotations

import os
import site
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
import yaml
from space_helpers import free_port, wait_for

from upskill_hub.space.deploy import write_space_files

REPO_ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-c", "from upskill_hub.cli.app import entry; entry()"]


def _front(readme: str) -> dict:
    return yaml.safe_load(readme.split("---\n")[1])


def test_space_files_card_and_requirements(tmp_path):
    import gradio

    out = write_space_files(tmp_path / "space", skills_repo="me/skills")
    meta = _front((out / "README.md").read_text())
    assert meta["sdk"] == "gradio" and meta["sdk_version"] == gradio.__version__
    assert meta["app_file"] == "app.py" and meta["hf_oauth"] is True
    assert tuple(int(x) for x in str(meta["python_version"]).split(".")) >= (3, 11)
    reqs = (out / "requirements.txt").read_text().splitlines()
    names = {r.split(">")[0].split("=")[0].split("<")[0].strip().lower() for r in reqs if r and not r.startswith("#")}
    assert {"huggingface-hub", "datasets", "openai", "anthropic", "nh3", "pandas"} <= names
    assert f"gradio[oauth]=={gradio.__version__}" in reqs  # same Gradio as sdk_version, with sign-in support
    assert "torch" not in names
    assert (out / "upskill_hub" / "space" / "ui.py").is_file()
    assert not list(out.rglob("__pycache__"))
    assert '"me/skills"' in (out / "upskill_space.json").read_text()


def test_checked_in_space_folder_matches_what_deploy_writes(tmp_path):
    out = write_space_files(tmp_path / "space", vendor=False)
    for name in ("app.py", "README.md", "requirements.txt"):
        assert (REPO_ROOT / "space" / name).read_text() == (out / name).read_text(), (
            f"space/{name} is stale: run `upskill-hub space deploy --out space --no-vendor`"
        )


def test_deploy_cli_errors_are_one_line(tmp_path):
    res = subprocess.run([*CLI, "space", "deploy", "--repo", "bad repo id"], capture_output=True, text=True)
    assert res.returncode == 1 and res.stderr.startswith("Error:") and "Traceback" not in res.stderr
    res = subprocess.run([*CLI, "space", "run", "--port", "70000"], capture_output=True, text=True)
    assert res.returncode == 1 and "--port" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.slow
def test_deployed_space_installs_in_a_fresh_venv_and_serves(space_repo, hub_server, tmp_path):
    from gradio_client import Client
    from huggingface_hub import HfApi, snapshot_download

    owner = space_repo.split("/")[0]
    space_id = f"{owner}/upskill-space"
    res = subprocess.run(
        [*CLI, "space", "deploy", "--repo", space_id, "--skills-repo", space_repo],
        capture_output=True, text=True, env=os.environ.copy(),
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    files = set(HfApi().list_repo_files(space_id, repo_type="space"))
    assert {"app.py", "README.md", "requirements.txt", "upskill_space.json", "upskill_hub/space/ui.py"} <= files
    assert HfApi().space_info(space_id).sha  # the Hub knows it as a Space

    # A deploy of the same files again leaves the repo as it was.
    subprocess.run([*CLI, "space", "deploy", "--repo", space_id, "--skills-repo", space_repo], check=True,
                   capture_output=True)  # fmt: skip
    assert set(HfApi().list_repo_files(space_id, repo_type="space")) == files

    local = Path(snapshot_download(space_id, repo_type="space", local_dir=tmp_path / "downloaded"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    # Reuse the already-installed third-party packages (no network), but not upskill_hub:
    # a path added through a .pth line does not process that folder's own .pth files, so
    # the editable install of this checkout stays invisible and the vendored copy is used.
    target_site = next((venv / "lib").glob("python3*/site-packages"))
    (target_site / "reuse.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    pip = subprocess.run([str(py), "-m", "pip", "install", "--no-index", "-r", str(local / "requirements.txt")],
                         capture_output=True, text=True)  # fmt: skip
    assert pip.returncode == 0, pip.stdout + pip.stderr
    where = subprocess.run([str(py), "-c", "import upskill_hub; print(upskill_hub.__file__)"], cwd=local,
                           capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    assert Path(where).resolve().is_relative_to(local.resolve())

    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("SKILLS_REPO", "PYTHONPATH")}
    env.update(GRADIO_SERVER_NAME="127.0.0.1", GRADIO_SERVER_PORT=str(port), GRADIO_ANALYTICS_ENABLED="False")
    proc = subprocess.Popen([str(py), "app.py"], cwd=local, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}/"
        wait_for(url, proc)
        # The default repo came from upskill_space.json (SKILLS_REPO is not set here).
        assert space_repo in urllib.request.urlopen(url + "config", timeout=10).read().decode()
        status, table, *_ = Client(url, verbose=False).predict(space_repo, api_name="/load")
        assert "3 skills" in status
        assert {r[0] for r in table["data"]} == {"greeting", "xss-demo", "json-helper"}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
