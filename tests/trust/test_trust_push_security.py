"""``push`` records each skill's scan beside it: the ``security`` config and the card's Security section.

Most tests scan with a recorded cisco-ai-skill-scanner output (``data/*.scanner.json``)
through push's ``scan`` seam, so they run without the scanner; one runs the real scanner
through the CLI and skips (or fails under UPSKILL_REQUIRE_SKILL_SCANNER=1) without it.
Everything is read back with the real clients from the local Hub (``HF_ENDPOINT``).
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

from _trust_kit import recorded, require_scanner, write_evil
from huggingface_hub import HfApi

from upskill_hub.hub.push import push
from upskill_hub.skill import Skill, require_skill
from upskill_hub.trust import ScannerRun, ScanReport, report_from_run

sys.path.insert(0, str(Path(__file__).parents[1]))
from cli_runner import run_cli  # noqa: E402


def _recorded_scan(scanned_at: str = "2026-11-28T21:00:00Z", version: str = "2.3.2"):
    """A ``scan`` for push that reads the recorded output of evil-helper (and counts its calls)."""
    calls: list[list[str]] = []

    def scan(skills: list[Skill]) -> list[ScanReport]:
        calls.append([s.name for s in skills])
        reports = [report_from_run(s, ScannerRun(recorded("evil-helper"), version)) for s in skills]
        return [replace(r, scanned_at=scanned_at) for r in reports]

    scan.calls = calls  # type: ignore[attr-defined]
    return scan


def _security_rows(repo_id: str, tmp_path: Path) -> list[dict]:
    from datasets import load_dataset

    cache = tmp_path / f"ds-{len(list(tmp_path.iterdir()))}"
    return load_dataset(repo_id, "security", split="train", cache_dir=str(cache)).to_list()


def _readme(repo_id: str) -> str:
    return Path(HfApi().hf_hub_download(repo_id, "README.md", repo_type="dataset")).read_text(
        encoding="utf-8"
    )


def _commits(repo_id: str) -> int:
    return len(HfApi().list_repo_commits(repo_id, repo_type="dataset"))


def test_push_records_critical_findings_in_the_dataset_and_on_the_card(hub_server, hub_repo_id, tmp_path):
    skill_dir = write_evil(tmp_path / "skills")
    scan = _recorded_scan()
    result = push([skill_dir], hub_repo_id, scan=scan)
    assert result.committed and scan.calls == [["evil-helper"]]  # one call for every skill
    assert "data/security/evil-helper.parquet" in {c.path for c in result.changes if c.status == "added"}

    (row,) = _security_rows(hub_repo_id, tmp_path)
    assert list(row) == [
        "name", "version", "scanner", "scanner_version", "scanned_at", "max_severity",
        "critical", "high", "medium", "low", "info", "acknowledged", "findings",
    ]  # fmt: skip
    assert (row["name"], row["scanner"], row["scanner_version"]) == (
        "evil-helper",
        "cisco-ai-skill-scanner",
        "2.3.2",
    )
    assert row["max_severity"] == "critical" and row["critical"] >= 2 and row["acknowledged"] == 0
    assert row["version"] == require_skill(skill_dir).version
    findings = json.loads(row["findings"])
    assert findings[0]["severity"] == "critical"
    assert {"DATA_EXFIL_HTTP_POST", "UPSKILLHUB_EVAL_COMMAND"} <= {f["rule"] for f in findings}

    card = HfApi().dataset_info(hub_repo_id).card_data.to_dict()
    assert [c["config_name"] for c in card["configs"]] == ["skills", "security"]
    readme = _readme(hub_repo_id)
    assert "## Security" in readme
    assert (
        f"| evil-helper | **CRITICAL** | {row['critical']} |" in readme
        and "cisco-ai-skill-scanner 2.3.2 | 2026-11-28 |" in readme
    )


def test_pushing_the_same_skill_again_makes_no_commit_though_the_scan_is_newer(
    hub_server, hub_repo_id, tmp_path
):
    skill_dir = write_evil(tmp_path / "skills")
    assert push([skill_dir], hub_repo_id, scan=_recorded_scan()).committed
    before = _commits(hub_repo_id)

    again = push([skill_dir], hub_repo_id, scan=_recorded_scan(scanned_at="2026-12-25T08:00:00Z"))
    assert not again.committed and _commits(hub_repo_id) == before
    assert {c.status for c in again.changes} == {"unchanged"}
    # A new scanner version is a new scan: the row (and the card's date) is replaced.
    newer = push([skill_dir], hub_repo_id, scan=_recorded_scan("2026-12-26T08:00:00Z", version="2.4.0"))
    assert newer.committed
    assert _security_rows(hub_repo_id, tmp_path)[0]["scanner_version"] == "2.4.0"
    assert "cisco-ai-skill-scanner 2.4.0 | 2026-12-26 |" in _readme(hub_repo_id)


def test_a_changed_skill_pushed_without_a_scan_loses_its_old_row(hub_server, hub_repo_id, tmp_path):
    """No row may describe files that are no longer the skill's."""
    skill_dir = write_evil(tmp_path / "skills")
    assert push([skill_dir], hub_repo_id, scan=_recorded_scan()).committed
    (skill_dir / "SKILL.md").write_text(
        (skill_dir / "SKILL.md").read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8"
    )
    result = push([skill_dir], hub_repo_id)  # no scanner given
    assert result.committed
    assert {c.path: c.status for c in result.changes}["data/security/evil-helper.parquet"] == "deleted"
    files = HfApi().list_repo_files(hub_repo_id, repo_type="dataset")
    assert not any(f.startswith("data/security/") for f in files)
    assert "## Security" not in _readme(hub_repo_id)


def test_push_without_the_scanner_goes_on_and_says_so_once(
    hub_server, hub_repo_id, tmp_path, capsys, monkeypatch
):
    skill_dir = write_evil(tmp_path / "skills")
    monkeypatch.setenv("UPSKILL_SKILL_SCANNER", str(tmp_path / "no-such-scanner"))
    code, _out, err = run_cli(["push", str(skill_dir), "--repo", hub_repo_id], capsys, monkeypatch)
    assert code == 0, err
    assert err.count("skills not scanned") == 1 and "pipx install cisco-ai-skill-scanner" in err
    files = HfApi().list_repo_files(hub_repo_id, repo_type="dataset")
    assert "skills/evil-helper/SKILL.md" in files and not any(f.startswith("data/security/") for f in files)


def test_push_cli_scans_and_no_scan_skips(hub_server, hub_repo_id, tmp_path, capsys, monkeypatch):
    from upskill_hub import trust

    skill_dir = write_evil(tmp_path / "skills")
    scan = _recorded_scan()
    monkeypatch.setattr(trust, "scan_skills", scan)
    code, _out, err = run_cli(
        ["push", str(skill_dir), "--repo", hub_repo_id, "--no-scan"], capsys, monkeypatch
    )
    assert code == 0 and scan.calls == [], err
    code, _out, err = run_cli(["push", str(skill_dir), "--repo", hub_repo_id], capsys, monkeypatch)
    assert code == 0 and scan.calls == [["evil-helper"]], err
    assert "scan evil-helper: CRITICAL" in err
    assert _security_rows(hub_repo_id, tmp_path)[0]["max_severity"] == "critical"


def test_push_with_the_real_scanner_records_the_malicious_skill(
    hub_server, hub_repo_id, tmp_path, capsys, monkeypatch
):
    require_scanner()
    skill_dir = write_evil(tmp_path / "skills")
    code, _out, err = run_cli(["push", str(skill_dir), "--repo", hub_repo_id], capsys, monkeypatch)
    assert code == 0, err
    (row,) = _security_rows(hub_repo_id, tmp_path)
    assert row["max_severity"] == "critical" and row["critical"] >= 1
    assert "| evil-helper | **CRITICAL** |" in _readme(hub_repo_id)


def test_the_space_marks_a_pushed_critical_skill(hub_server, hub_repo_id, tmp_path):
    """push's security row and the Space's reader agree: what push records, the Space marks (issue 49)."""
    from upskill_hub.space import data, security, views

    push([write_evil(tmp_path / "skills")], hub_repo_id, scan=_recorded_scan())
    lib = data.load_library(hub_repo_id, token=False, allow_local=False)
    scan = lib.security["evil-helper"]
    assert scan.critical
    assert not [n for n in lib.notes if n.startswith("security")]  # push's types are the Space's
    assert security.security_cell(scan).startswith(security.CRITICAL_MARK + " critical")
    assert security.CRITICAL_MARK in views.skill_summary_markdown(lib, "evil-helper")
