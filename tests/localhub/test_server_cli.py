"""`upskill-hub hub serve`: help text, a real server process, no tokens in its output."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

from typer.testing import CliRunner


def _serving_url(proc: subprocess.Popen) -> tuple[str, str]:
    """The URL a `hub serve --port 0` child printed (its socket is bound before it says so),
    and what it printed up to there. Fails if the child exits first.

    Read from the pipe itself, not through the file object: a line iterator reads ahead,
    and ``communicate(timeout=…)`` later reads the descriptor, so lines printed right after
    the URL (the token count, "Jobs enabled") were lost in the iterator's buffer."""
    assert proc.stdout is not None
    seen = b""
    while chunk := os.read(proc.stdout.fileno(), 65536):
        seen += chunk
        found = re.search(r"export HF_ENDPOINT=(http://\S+)\s", seen.decode(errors="replace"))  # whole URL
        if found:
            return found.group(1), seen.decode(errors="replace")
    raise AssertionError(f"server did not start: {seen.decode(errors='replace')}")

def test_serve_help_says_what_it_is_for():
    from upskill_hub.cli.app import app

    result = CliRunner().invoke(app, ["hub", "serve", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    for needle in (
        "offline work, air-gapped teams and tests",
        "HF_ENDPOINT",
        "HF_HUB_DISABLE_XET=1",
        "--read-token",
    ):
        assert needle in text


def test_serve_process_serves_and_never_prints_tokens(tmp_path):
    import httpx2

    write, read = "hf_" + "cliWriteTokenForServeTest0001", "hf_" + "cliReadTokenForServeTest00002"
    cmd = [sys.executable, "-m", "upskill_hub.cli.app", "hub", "serve", "--root", str(tmp_path / "root")]
    cmd += ["--port", "0", "--token", write, "--read-token", read, "--trusted-publisher", "acme"]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, "COLUMNS": "200"}
    )
    try:
        url, head = _serving_url(proc)
        auth = {"authorization": f"Bearer {write}"}
        created = httpx2.post(f"{url}/api/repos/create", json={"name": "r", "type": "dataset"}, headers=auth)
        assert created.status_code == 200
        assert created.json()["url"] == f"{url}/datasets/user/r"
        refused = httpx2.post(
            f"{url}/api/repos/create", json={"name": "r2"}, headers={"authorization": f"Bearer {read}"}
        )
        assert refused.status_code == 403
        assert httpx2.get(f"{url}/api/organizations/acme/overview").json()["trustedKernelPublisher"] is True
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=20)
    text = head + out.decode()
    assert f"export HF_ENDPOINT={url}" in text
    assert "POST /api/repos/create 200" in text and "POST /api/repos/create 403" in text
    assert write not in text and read not in text
    assert "any bearer token may write" not in text  # tokens were given


def test_serve_warns_when_any_token_may_write(tmp_path, monkeypatch):
    import uvicorn

    from upskill_hub.cli.app import app

    calls = {}
    # Do not block in the server: this test only checks the startup lines and the options.
    monkeypatch.setattr(
        uvicorn.Server, "run",
        lambda server, sockets=None: calls.update(server=server, ports=[s.getsockname()[1] for s in sockets]),
    )  # fmt: skip
    result = CliRunner().invoke(app, ["hub", "serve", "--root", str(tmp_path / "r"), "--port", "0"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "any bearer token may write" in text
    # --port 0: the OS picks the port; the URL printed is the socket the server was handed.
    (port,) = calls["ports"]
    assert port > 0 and f"export HF_ENDPOINT=http://127.0.0.1:{port}" in text
    assert calls["server"].config.access_log is False


def test_serve_bad_root_is_one_line_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    cmd = [sys.executable, "-m", "upskill_hub.cli.app", "hub", "serve", "--root", str(blocker / "sub")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.strip().startswith("Error: cannot use --root")
    assert "Traceback" not in proc.stderr


def test_serve_on_a_busy_port_is_one_line_and_never_says_serving(tmp_path):
    """Issue 29 class 7: it printed "serving..." and then uvicorn's Errno 98."""
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        cmd = [sys.executable, "-m", "upskill_hub.cli.app", "hub", "serve", "--root", str(tmp_path / "root"),
               "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
    assert lines == [f"Error: cannot listen on 127.0.0.1:{port}: another program is using that port: stop it or pick another --port"], proc.stderr
    assert "serving" not in proc.stderr and proc.stdout == ""


def test_serve_runs_jobs_and_stops_them_when_it_stops(tmp_path):
    """A real `hub serve` process: a Job runs under it; SIGINT ends the server and the Job."""
    import json

    import httpx2

    root = tmp_path / "root"
    cmd = [sys.executable, "-m", "upskill_hub.cli.app", "hub", "serve", "--root", str(root)]
    cmd += ["--port", "0", "--jobs", "--max-jobs", "1"]
    write = "hf_" + "jobsWriteTokenForServeTest0001"
    env = {**os.environ, "UPSKILL_HUB_WRITE_TOKENS": write, "COLUMNS": "200"}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    auth = {"authorization": f"Bearer {write}"}
    try:
        url, head = _serving_url(proc)
        deadline = time.monotonic() + 30
        spec = {"command": ["python", "-c", "import time; time.sleep(60)"], "dockerImage": "python:3.12"}
        job = httpx2.post(f"{url}/api/jobs/user", json=spec, headers=auth).json()
        second = httpx2.post(f"{url}/api/jobs/user", json=spec, headers=auth).json()
        while (
            httpx2.get(f"{url}/api/jobs/user/{job['id']}", headers=auth).json()["status"]["stage"]
            != "RUNNING"
        ):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        queued = httpx2.get(f"{url}/api/jobs/user/{second['id']}", headers=auth).json()
        assert queued["status"]["stage"] == "SCHEDULING"  # --max-jobs 1
        # Someone follows the running Job's log: the stream must not keep the server up.
        follower = httpx2.stream("GET", f"{url}/api/jobs/user/{job['id']}/logs", headers=auth, timeout=60)
        response = follower.__enter__()
        assert response.status_code == 200
    finally:
        proc.send_signal(signal.SIGINT)
        started = time.monotonic()
        out, _ = proc.communicate(timeout=30)
    assert time.monotonic() - started < 15
    follower.__exit__(None, None, None)
    assert "Jobs enabled: write-token holders run commands on this machine (at most 1 at once)" in (
        head + out.decode()
    )
    for job_id in (job["id"], second["id"]):
        record = json.loads((root / "jobs" / "user" / job_id / "job.json").read_text())
        assert (record["stage"], record["message"]) == ("ERROR", "server stopped")


def test_serve_refuses_a_bad_max_jobs(tmp_path):
    cmd = [sys.executable, "-m", "upskill_hub.cli.app", "hub", "serve", "--root", str(tmp_path / "r")]
    proc = subprocess.run([*cmd, "--max-jobs", "0"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.strip() == "Error: --max-jobs must be between 1 and 256, got 0"
    assert not (tmp_path / "r").exists()


def test_serve_runs_no_jobs_unless_asked_and_never_without_write_tokens(tmp_path, monkeypatch):
    import uvicorn

    from upskill_hub.cli.app import app

    calls = {}
    monkeypatch.setattr(uvicorn.Server, "run", lambda server, sockets=None: calls.update(app=server.config.app))
    monkeypatch.delenv("UPSKILL_HUB_WRITE_TOKENS", raising=False)
    result = CliRunner().invoke(app, ["hub", "serve", "--root", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert calls["app"].state.hub.config.jobs_enabled is False  # off by default
    result = CliRunner().invoke(app, ["hub", "serve", "--root", str(tmp_path / "r"), "--jobs"])
    assert result.exit_code == 1
    assert "--jobs lets write-token holders run commands on this machine" in str(result.exception)


def test_a_server_without_jobs_refuses_to_run_one(tmp_path):
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    from upskill_hub.localhub.testing import TEST_WRITE_TOKEN, running_server

    with running_server(tmp_path / "hub", write_tokens=(TEST_WRITE_TOKEN,), jobs_enabled=False) as hub:
        api = HfApi(endpoint=hub.url, token=TEST_WRITE_TOKEN)
        try:
            api.run_job(image="python:3.12", command=["python", "-c", "print(1)"], namespace="user")
            raise AssertionError("a Job ran on a server without --jobs")
        except HfHubHTTPError as exc:
            assert exc.response.status_code == 403
            assert "Jobs are disabled on this local Hub" in str(exc)
        assert not list(api.list_jobs(namespace="user"))
        assert api.list_jobs_hardware()
