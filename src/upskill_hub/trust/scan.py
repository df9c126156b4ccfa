"""Scan skills: the scanner's findings, upskill-hub's own, the author's acknowledgements.

:func:`scan_skill` is the one entry point every front end uses (``skills scan``,
``skills install``, ``pull --max-severity``, push's card): it writes the skill's files
(plus what its evals would run, see :mod:`upskill_hub.trust.extras`) to a temporary
folder, has the scanner read it in its own process, and returns a :class:`ScanReport`.
That process serves every skill of the command (:func:`~upskill_hub.trust.scanner.shared_session`;
:func:`scan_skills` with an LLM model starts one for its skills), so only the first skill
waits for the scanner's import.
A skill from the Hub is scanned from memory the same way, so nothing is written to the
user's folders.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from upskill_hub._util.timestamps import utc_now
from upskill_hub.skill import Skill
from upskill_hub.trust.acks import apply_acks
from upskill_hub.trust.extras import allowed_tools_findings, map_back, staged_inputs
from upskill_hub.trust.findings import ScanReport, parse_scanner_json
from upskill_hub.trust.scanner import ScannerRun, ScanSession, find_scanner, shared_session


def report_from_run(skill: Skill, run: ScannerRun) -> ScanReport:
    """Build a skill's report from a scanner run over its staged copy (no process started here).

    Split from :func:`scan_skill` so a recorded scanner output can be turned into a report
    without the scanner installed (tests, benchmarks).
    """
    staged = staged_inputs(skill)
    files = {**skill.files, **staged.files}
    found = map_back(parse_scanner_json(run.data, files), staged) + staged.findings
    found += allowed_tools_findings(skill)
    data = run.data
    duration = data.get("scan_duration_seconds")
    return ScanReport(
        scanner_version=run.version,
        skill=skill.name,
        findings=apply_acks(found, skill.files),
        scanned_at=utc_now(),
        analyzers=[a for a in data.get("analyzers_used") or [] if isinstance(a, str)],
        duration_s=round(duration, 3) if isinstance(duration, int | float) else None,
    )


def scan_skill(skill: Skill, *, llm_model: str | None = None, timeout: float | None = None) -> ScanReport:
    """Scan one skill with the scanner's static analyzers (its LLM one only with ``llm_model``).

    Raises :class:`~upskill_hub.trust.scanner.ScannerMissing` (with the install line) or
    :class:`~upskill_hub.trust.scanner.ScannerFailed`, both one-line ``UpskillError``.
    """
    return scan_skills([skill], llm_model=llm_model, timeout=timeout)[0]


def scan_skills(
    skills: list[Skill], *, llm_model: str | None = None, timeout: float | None = None
) -> list[ScanReport]:
    """Each skill's report, in order, from one scanner process; ``timeout`` bounds each skill."""
    if not skills:
        return []
    exe = find_scanner()
    if llm_model is None:
        session = shared_session(exe)
        return [_scan_one(session, s, timeout) for s in skills]
    with ScanSession(exe=exe, llm_model=llm_model) as session:
        return [_scan_one(session, s, timeout) for s in skills]


def _scan_one(session: ScanSession, skill: Skill, timeout: float | None) -> ScanReport:
    """Stage ``skill`` (its files and what its evals run) in a temporary folder and scan it there."""
    staged = staged_inputs(skill)
    with tempfile.TemporaryDirectory(prefix="upskill-scan-") as tmp:
        folder = Path(tmp) / skill.name
        folder.mkdir()
        skill.write_files(folder)
        for rel, data in staged.files.items():
            target = folder / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        run = session.scan(folder, timeout=timeout)
    return report_from_run(skill, run)
