"""Skill scans without the scanner: a recorded cisco-ai-skill-scanner output parsed, acknowledged, judged."""

from __future__ import annotations

import json

import pytest
from _trust_kit import recorded, write_evil, write_sub

from upskill_hub.skill import require_skill
from upskill_hub.trust import (
    ScannerMissing,
    ScannerRun,
    ScanReport,
    SeverityAboveLimit,
    enforce_max_severity,
    find_scanner,
    report_from_run,
    to_sarif,
)
from upskill_hub.trust.scanner import scanner_env


def _report(folder, name):
    return report_from_run(require_skill(folder), ScannerRun(recorded(name), "2.3.2"))


def test_malicious_skill_reports_critical_findings_with_file_line_and_snippet(tmp_path):
    report = _report(write_evil(tmp_path), "evil-helper")
    # The scanner's 2 criticals, plus upskill-hub's own: the eval command that exfiltrates.
    assert report.max_severity == "critical" and report.counts["critical"] == 3
    by_rule = {f.rule: f for f in report.findings}
    post = by_rule["DATA_EXFIL_HTTP_POST"]
    assert (post.severity, post.where, post.analyzer) == ("critical", "scripts/sync.py:6", "static")
    assert "urlopen" in post.snippet
    # The scanner counts SKILL.md's lines after the frontmatter: the line shown is the file's.
    assert by_rule["YARA_command_injection_generic"].where == "SKILL.md:9"
    # upskill-hub's own rule: the eval's shell command is listed, labelled as ours.
    cmd = by_rule["UPSKILLHUB_EVAL_COMMAND"]
    assert (
        cmd.analyzer == "upskill-hub" and cmd.file == "skill_meta.json" and "aws/credentials" in cmd.snippet
    )
    assert ScanReport.from_dict(json.loads(json.dumps(report.to_dict()))).to_dict() == report.to_dict()
    with pytest.raises(SeverityAboveLimit) as exc:
        enforce_max_severity([report], "high")
    assert "critical finding YARA_command_injection_generic at SKILL.md:9" in str(exc.value)
    assert "(and 2 more above high)" in str(exc.value) and "\n" not in str(exc.value)


def test_acknowledged_finding_is_shown_and_no_longer_trips_max_severity(tmp_path):
    plain = _report(write_sub(tmp_path / "a"), "doc-convert")
    shell = next(f for f in plain.findings if f.rule == "COMMAND_INJECTION_SHELL_TRUE")
    assert (shell.severity, shell.where, shell.acknowledged) == ("high", "scripts/convert.py:8", None)
    with pytest.raises(SeverityAboveLimit, match=r"COMMAND_INJECTION_SHELL_TRUE at scripts/convert.py:8"):
        enforce_max_severity([plain], "medium")

    acked = _report(write_sub(tmp_path / "b", ack=True), "doc-convert")
    shell = next(f for f in acked.findings if f.rule == "COMMAND_INJECTION_SHELL_TRUE")
    assert shell.acknowledged.startswith("the agent passes paths")  # still there, marked
    assert acked.counts["acknowledged"] == 1 and acked.max_severity is None
    enforce_max_severity([acked], "medium")  # no raise
    sarif = to_sarif([acked])
    result = next(r for r in sarif["runs"][0]["results"] if r["ruleId"] == "COMMAND_INJECTION_SHELL_TRUE")
    assert result["suppressions"][0]["status"] == "accepted"


def test_a_malformed_ack_file_acknowledges_nothing_and_says_so(tmp_path):
    folder = write_sub(tmp_path)
    (folder / "skill-scan-ack.yaml").write_text(
        "acknowledged:\n  - rule: COMMAND_INJECTION_SHELL_TRUE\n    file: scripts/convert.py\n"
    )
    report = _report(folder, "doc-convert")
    assert all(f.acknowledged is None for f in report.findings)
    bad = next(f for f in report.findings if f.rule == "UPSKILLHUB_ACK_FILE_INVALID")
    assert "reason" in bad.message and bad.analyzer == "upskill-hub"
    with pytest.raises(SeverityAboveLimit):
        enforce_max_severity([report], "medium")


def test_missing_scanner_is_one_line_with_the_install_hint(monkeypatch, tmp_path):
    monkeypatch.setenv("UPSKILL_SKILL_SCANNER", str(tmp_path / "nope"))
    with pytest.raises(ScannerMissing) as exc:
        find_scanner()
    msg = str(exc.value)
    assert (
        "pipx install cisco-ai-skill-scanner==2.3.2" in msg
        and "UPSKILL_SKILL_SCANNER" in msg
        and "\n" not in msg
    )


def test_the_scanner_gets_no_secrets_unless_its_llm_analyzer_is_asked():
    base = {
        "PATH": "/bin",
        "HOME": "/h",
        "HF_TOKEN": "hf_x",
        "ANTHROPIC_API_KEY": "sk-a",
        "AWS_SECRET_ACCESS_KEY": "s",
    }
    assert scanner_env(with_llm=False, base=base) == {
        "PATH": "/bin",
        "HOME": "/h",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    with_llm = scanner_env(with_llm=True, base=base)
    assert (
        with_llm["ANTHROPIC_API_KEY"] == "sk-a"
        and "HF_TOKEN" not in with_llm
        and "AWS_SECRET_ACCESS_KEY" not in with_llm
    )


def test_unknown_max_severity_is_one_line():
    from upskill_hub.errors import UpskillError

    with pytest.raises(
        UpskillError, match="unknown severity 'huge'; use one of info, low, medium, high, critical"
    ):
        enforce_max_severity([], "huge")
