"""``kernels push`` ends with the line that loads the kernel: pasted as printed, it works
(issue 48 item 3), and a piped push prints no library progress bar (item 4)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from upskill_hub.kernels.builders.local import build_local

BAR_MARKS = ("|█", "it/s]")


def _load_line(stdout: str) -> str:
    lines = [ln for ln in stdout.splitlines() if ln.startswith("load it: ")]
    assert len(lines) == 1, stdout
    return lines[0].removeprefix("load it: ")


def test_printed_load_line_works_as_written(hub_server, hub_repo_id: str, noarch_project: Path) -> None:
    build_local(noarch_project, smoke=False)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_DISABLE_PROGRESS_BARS")}
    proc = subprocess.run(
        [sys.executable, "-m", "upskill_hub.cli.app", "kernels", "push", str(noarch_project), "--repo", hub_repo_id],
        capture_output=True, text=True, timeout=600, env={**env, "COLUMNS": "200"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert not [m for m in BAR_MARKS if m in proc.stderr], proc.stderr
    line = _load_line(proc.stdout)

    call = ast.parse(line, mode="eval").body
    assert isinstance(call, ast.Call) and ast.unparse(call.func) == "kernels.get_kernel"
    assert [ast.literal_eval(a) for a in call.args] == [hub_repo_id]
    keywords = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    assert keywords == {"version": 1, "trust_remote_code": True}

    # `user` is no trusted kernel publisher: the line as printed loads it in a fresh process.
    script = f"import kernels, torch\nk = {line}\nprint(k.tiny_noarch(torch.zeros(2)).tolist())"
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert loaded.returncode == 0, loaded.stderr[-3000:]
    assert loaded.stdout.strip().splitlines()[-1] == "[1.0, 1.0]"
