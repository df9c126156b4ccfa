"""Scan skills: the scanner's findings, upskill-hub's own, the author's acknowledgements.

:func:`scan_skill` is the one entry point every front end uses (``skills scan``,
``skills install``, ``pull --max-severity``, push's card): it writes the skill's files
(plus what its evals would run, see :mod:`upskill_hub.trust.extras`) to a temporary
folder, runs the scanner there in its own process, and returns a :class:`ScanReport`.
A skill from the Hub is scanned from memory the same way, so nothing is written to the
user's folders.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from upskill_hub._util.timestamps import utc_now
from upskill_hub.skill import Skill
from upskill_hub.trust.acks import apply_acks
from upskill_hub.trust.extras import map_back, staged_inputs
from upskill_hub.trust.findings import ScanReport, parse_scanner_json
from upskill_hub.trust.scanner import ScannerRun, find_scanner, run_scanner


def report_from_run(skill: Skill, run: ScannerRun) -> ScanReport:
    """Build a skill's report from a scanner run over its staged copy (no process started here).

    Split from :func:`scan_skill` so a recorded scanner output can be turned into a report
    without the scanner installed (tests, benchmarks).
    """
    staged = staged_inputs(skill)
    files = {**skill.files, **staged.files}
    found = map_back(parse_scanner_json(run.data, files), staged) + staged.findings
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
    exe = find_scanner()
    staged = staged_inputs(skill)
    with tempfile.TemporaryDirectory(prefix="upskill-scan-") as tmp:
        folder = Path(tmp) / skill.name
        folder.mkdir()
        skill.write_files(folder)
        for rel, data in staged.files.items():
            target = folder / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        run = run_scanner(folder, llm_model=llm_model, timeout=timeout, exe=exe)
    return report_from_run(skill, run)


def scan_skills(
    skills: list[Skill], *, llm_model: str | None = None, timeout: float | None = None
) -> list[ScanReport]:
    """:func:`scan_skill` for each skill, in order."""
    return [scan_skill(s, llm_model=llm_model, timeout=timeout) for s in skills]
