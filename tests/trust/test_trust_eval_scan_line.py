"""``eval --agent`` shows one scan line for the skill before an agent runs it here (issue 49 item 3).

The scan is the recorded cisco-ai-skill-scanner output of the malicious skill, put in place
of ``trust.scan_skill``, so these run without the scanner.
"""

from __future__ import annotations

import sys
from pathlib import Path

from _trust_kit import recorded, write_evil

from upskill_hub import trust
from upskill_hub.trust import ScannerRun, report_from_run

sys.path.insert(0, str(Path(__file__).parents[1]))
from cli_runner import run_cli  # noqa: E402


def _fake_scan(calls: list[str]):
    def scan_skill(skill, **_kw):
        calls.append(skill.name)
        return report_from_run(skill, ScannerRun(recorded("evil-helper"), "2.3.2"))

    return scan_skill


def _eval(skill: Path, tmp_path: Path, *extra: str) -> list[str]:
    return ["eval", str(skill), "--no-plots", "--no-baseline", "--cache-dir", str(tmp_path / "cache"),
            "-o", str(tmp_path / "runs"), *extra]  # fmt: skip


def test_an_agent_eval_shows_the_scan_line_before_the_consent_rule(tmp_path, capsys, monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(trust, "scan_skill", _fake_scan(calls))
    skill = write_evil(tmp_path / "pulled")
    code, _out, err = run_cli(_eval(skill, tmp_path, "--agent", "codex"), capsys, monkeypatch)
    lines = err.strip().splitlines()
    assert code == 1 and calls == ["evil-helper"], err
    scan_at = next(i for i, line in enumerate(lines) if line.startswith("scan evil-helper: CRITICAL"))
    consent_at = next(i for i, line in enumerate(lines) if "--allow-commands" in line)
    assert scan_at < consent_at, err  # the summary first, then the consent rule, unchanged
    assert "cisco-ai-skill-scanner 2.3.2" in lines[scan_at] and "worst: critical" in lines[scan_at]
    assert not (tmp_path / "runs").exists()  # nothing ran
    # Without --agent nothing of the skill executes here: no scan, no line.
    _code, _out, err = run_cli(_eval(skill, tmp_path, "--model", "no-such-provider/x"), capsys, monkeypatch)
    assert calls == ["evil-helper"] and "scan evil-helper" not in err, err


def test_the_scan_line_is_one_line_when_the_scanner_is_missing(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("UPSKILL_SKILL_SCANNER", str(tmp_path / "no-such-scanner"))
    skill = write_evil(tmp_path / "pulled")
    code, _out, err = run_cli(_eval(skill, tmp_path, "--agent", "codex"), capsys, monkeypatch)
    scan_lines = [line for line in err.splitlines() if line.startswith("scan evil-helper:")]
    assert code == 1 and len(scan_lines) == 1 and "not scanned" in scan_lines[0], err
    assert "--allow-commands" in err  # the consent rule still stops it


def test_a_validated_agent_run_shows_the_scan_line_once_before_its_first_call(tmp_path, capsys, monkeypatch):
    """With consent given, the line comes once everything is validated, before the first call;
    a bad option is still its own one-line error, with no scan before it."""
    calls: list[str] = []
    monkeypatch.setattr(trust, "scan_skill", _fake_scan(calls))
    skill = write_evil(tmp_path / "pulled")
    agent = ["--agent", "cmd:true {prompt}", "--allow-commands"]
    code, _out, err = run_cli(_eval(skill, tmp_path, *agent, "--agent-env", "HOME=/"), capsys, monkeypatch)
    assert code != 0 and calls == [] and len(err.strip().splitlines()) == 1, err
    _code, _out, err = run_cli(_eval(skill, tmp_path, *agent), capsys, monkeypatch)
    assert calls == ["evil-helper"], err
    assert [line for line in err.splitlines() if line.startswith("scan evil-helper: CRITICAL")], err
