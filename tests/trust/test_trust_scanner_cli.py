"""``skills scan``, ``skills install`` and ``pull --max-severity`` with the real scanner.

Skipped with the install line where cisco-ai-skill-scanner is absent; failed instead under
``UPSKILL_REQUIRE_SKILL_SCANNER=1`` (CI), so CI cannot pass by skipping them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from _trust_kit import require_scanner, write_evil, write_sub

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cli_runner import run_cli  # noqa: E402


@pytest.fixture(autouse=True)
def _scanner():
    require_scanner()


def test_skills_scan_reports_the_malicious_skill_as_critical(tmp_path, capsys, monkeypatch):
    folder = write_evil(tmp_path)
    code, out, err = run_cli(["skills", "scan", str(folder), "--format", "json"], capsys, monkeypatch)
    assert code == 0, err
    report = json.loads(out)
    assert report["max_severity"] == "critical" and report["scanner_version"] == "2.3.2"
    rules = {(f["rule"], f["file"], f["line"]) for f in report["findings"]}
    assert ("DATA_EXFIL_HTTP_POST", "scripts/sync.py", 6) in rules
    code, out, err = run_cli(["skills", "scan", str(folder), "--max-severity", "high"], capsys, monkeypatch)
    assert code == 1 and "CRITICAL" in out and "above --max-severity high" in err
    assert len(err.strip().splitlines()) == 1


def test_an_acknowledged_subprocess_finding_is_shown_and_passes_max_severity(tmp_path, capsys, monkeypatch):
    code, _, err = run_cli(
        ["skills", "scan", str(write_sub(tmp_path / "a")), "--max-severity", "medium"], capsys, monkeypatch
    )
    assert code == 1 and "COMMAND_INJECTION_SHELL_TRUE at scripts/convert.py:8" in err
    code, out, err = run_cli(
        ["skills", "scan", str(write_sub(tmp_path / "b", ack=True)), "--max-severity", "medium"],
        capsys,
        monkeypatch,
    )
    assert code == 0, err
    assert "COMMAND_INJECTION_SHELL_TRUE" in out and "acknowledged: the agent passes paths" in out


def test_install_above_max_severity_writes_nothing(tmp_path, capsys, monkeypatch):
    dest = tmp_path / "agent-skills"
    args = [
        "skills",
        "install",
        str(write_evil(tmp_path / "src")),
        "--dest",
        str(dest),
        "--max-severity",
        "high",
    ]
    code, _, err = run_cli(args, capsys, monkeypatch)
    assert code == 1 and "refusing skill 'evil-helper'" in err and "nothing was installed" in err
    assert not dest.exists()


def test_pull_max_severity_refuses_the_malicious_skill_from_the_hub(
    hub_server, hub_repo_id, tmp_path, capsys, monkeypatch
):
    from upskill_hub.hub.push import push

    push([write_evil(tmp_path / "src")], hub_repo_id)
    out_dir = tmp_path / "pulled"
    code, _, err = run_cli(
        ["pull", hub_repo_id, "-o", str(out_dir), "--max-severity", "high"], capsys, monkeypatch
    )
    assert (
        code == 1 and "refusing skill 'evil-helper': critical finding" in err and "nothing was written" in err
    )
    assert not out_dir.exists()
    # Without the limit, the same pull writes the skill (the refusal was the scan's).
    code, _, err = run_cli(["pull", hub_repo_id, "-o", str(out_dir)], capsys, monkeypatch)
    assert code == 0, err
    assert (out_dir / "evil-helper" / "scripts" / "sync.py").is_file()
