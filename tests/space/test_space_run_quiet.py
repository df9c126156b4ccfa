"""``space run`` with its output piped prints no library progress bars (issue 48 item 4)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from space_helpers import free_port, wait_for

CLI = [sys.executable, "-c", "from upskill_hub.cli.app import entry; entry()"]
BAR_MARKS = ("|█", "it/s]", "Fetching ")


@pytest.mark.slow
def test_space_run_piped_prints_no_progress_bars(space_repo):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_DISABLE_PROGRESS_BARS")}
    port = free_port()
    cmd = [*CLI, "space", "run", "--repo", space_repo, "--port", str(port), "--host", "127.0.0.1"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(f"http://127.0.0.1:{port}/", proc)
        from gradio_client import Client

        client = Client(f"http://127.0.0.1:{port}/", verbose=False)
        status, *_ = client.predict(space_repo, api_name="/load")  # snapshot_download of the tables
        client.predict(space_repo, "greeting", api_name="/open_skill")  # ... and of a skill's files
    finally:
        proc.terminate()
        try:
            _out, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            _out, err = proc.communicate()
    assert not [mark for mark in BAR_MARKS if mark in err], err
