"""``--max-severity LEVEL``: refuse a skill whose worst unacknowledged finding is above LEVEL."""

from __future__ import annotations

from upskill_hub._util.printable import escape_controls
from upskill_hub.errors import UpskillError
from upskill_hub.trust.findings import Finding, ScanReport, check_severity, severity_rank


class SeverityAboveLimit(UpskillError):
    """A scanned skill has an unacknowledged finding above the allowed severity."""

    def __init__(self, report: ScanReport, limit: str, action: str) -> None:
        self.report = report
        self.limit = limit
        self.action = action
        super().__init__(self.describe())

    def describe(self) -> str:
        over = over_limit(self.report, self.limit)
        worst = over[0]
        more = f" (and {len(over) - 1} more above {self.limit})" if len(over) > 1 else ""
        skill = escape_controls(self.report.skill, one_line=True)
        msg = escape_controls(worst.message, one_line=True)[:160]
        return (
            f"refusing skill {skill!r}: {worst.severity} finding {worst.rule} at {escape_controls(worst.where, one_line=True)}"
            f" ({msg}){more} is above --max-severity {self.limit}; {self.action}"
        )


def over_limit(report: ScanReport, limit: str) -> list[Finding]:
    """The unacknowledged findings above ``limit``, worst first."""
    cap = severity_rank(check_severity(limit))
    return [f for f in report.unacknowledged if severity_rank(f.severity) > cap]


def enforce_max_severity(
    reports: list[ScanReport], limit: str | None, *, action: str = "nothing was written"
) -> None:
    """Raise :class:`SeverityAboveLimit` for the first report above ``limit`` (no-op when None).

    Acknowledged findings never count; ``action`` ends the line (what the refusal left undone).
    """
    if limit is None:
        return
    level = check_severity(limit)
    for report in reports:
        if over_limit(report, level):
            raise SeverityAboveLimit(report, level, action)
