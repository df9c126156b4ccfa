"""The skills' security scans as the Space shows them: a Browse/Leaderboard cell, a banner, a tab.

``push`` records each skill's scan (:mod:`upskill_hub.trust`) in the dataset's ``security``
table (``data/security/<name>.parquet``, columns :data:`~upskill_hub.hub.layout.SECURITY_COLUMNS`).
The table is a visitor's data like every other, so it is read bounded: one row per known
skill, a findings JSON of at most :data:`MAX_FINDINGS_JSON_CHARS`, at most
:data:`MAX_FINDINGS_SHOWN` findings, each text field cut; and every text a finding holds
(its snippet is the hostile line itself) is escaped before it reaches HTML or Markdown.

A repo pushed before scans existed has no such table: each skill then reads as "not scanned",
never an error. A skill with an unacknowledged critical finding is marked wherever it is
listed (:func:`security_cell`) and on its page (:func:`security_banner`), whatever the rest
of its row claims: any one of ``max_severity``, the ``critical`` count or a finding says so.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

#: The scanner's levels, least to most severe (as :data:`upskill_hub.trust.findings.SEVERITIES`).
SEVERITIES: tuple[str, ...] = ("info", "low", "medium", "high", "critical")
#: Longest findings JSON parsed per skill (a larger one is not parsed; its counts still show).
MAX_FINDINGS_JSON_CHARS = 512 * 1024
#: Findings listed per skill (worst first, as the table stores them).
MAX_FINDINGS_SHOWN = 100
#: Characters kept per finding field shown (the rest is cut with ``…``).
FIELD_CHARS = {"rule": 120, "file": 300, "snippet": 300, "message": 600, "analyzer": 80,
               "acknowledged": 300, "category": 80}  # fmt: skip
#: Characters kept of the row's own texts (scanner, its version, the date, the version).
META_CHARS = 80
NOT_SCANNED = "not scanned"
#: What marks a skill with an unacknowledged critical finding, in every view.
CRITICAL_MARK = "⛔"


@dataclass(frozen=True)
class SkillScan:
    """One skill's scan, read and bounded: what every security view of the Space shows."""

    name: str
    version: str = ""
    scanner: str = ""
    scanner_version: str = ""
    scanned_at: str = ""
    max_severity: str = ""  # worst unacknowledged level, "" when none
    counts: dict[str, int] = field(default_factory=dict)  # unacknowledged findings per level
    acknowledged: int = 0
    findings: list[dict[str, Any]] = field(default_factory=list)
    #: Why some findings are not listed (too many, JSON too large or unreadable); "" when all are.
    findings_note: str = ""

    @property
    def critical(self) -> bool:
        """Whether an unacknowledged critical finding is recorded (by any of the row's fields)."""
        return (
            self.max_severity == "critical"
            or self.counts.get("critical", 0) > 0
            or any(f["severity"] == "critical" and f["acknowledged"] is None for f in self.findings)
        )


def _text(value: Any, limit: int) -> str:
    """A table cell as bounded text ("" for a null or a non-string)."""
    if not isinstance(value, str):
        return ""
    return value if len(value) <= limit else value[: limit - 1] + "…"


def _count(value: Any) -> int:
    """A count cell as a non-negative int (a null, NaN or negative reads as 0)."""
    try:
        n = int(value)
    except (TypeError, ValueError, OverflowError):
        return 0
    return max(n, 0)


def _level(value: Any) -> str:
    """A severity as one of :data:`SEVERITIES` (lower-cased), or "" when it is none of them."""
    low = value.strip().lower() if isinstance(value, str) else ""
    return low if low in SEVERITIES else ""


def _finding(d: dict[str, Any]) -> dict[str, Any]:
    """One finding dict (``trust.Finding.to_dict()``) with every field typed and bounded."""
    out: dict[str, Any] = {k: (_text(d.get(k), n) or None) for k, n in FIELD_CHARS.items()}
    out["severity"] = _level(d.get("severity")) or "info"
    out["rule"] = out["rule"] or "?"
    line = d.get("line")
    out["line"] = line if isinstance(line, int) and not isinstance(line, bool) and line > 0 else None
    if d.get("acknowledged") is not None and out["acknowledged"] is None:  # acknowledged, reason unreadable
        out["acknowledged"] = "(acknowledged)"
    return out


def _findings(raw: Any) -> tuple[list[dict[str, Any]], str]:
    """The findings JSON of a row, parsed within the bounds, and a note on what was left out."""
    from upskill_hub._util import safejson

    if not isinstance(raw, str) or not raw.strip():
        return [], ""
    if len(raw) > MAX_FINDINGS_JSON_CHARS:
        return [], f"the findings list is larger than {MAX_FINDINGS_JSON_CHARS // 1024} KB; not shown"
    try:
        items = safejson.loads(raw)
    except ValueError:
        return [], "the findings list is not readable JSON; not shown"
    if not isinstance(items, list):
        return [], "the findings list is not a list; not shown"
    found = [_finding(d) for d in items if isinstance(d, dict)]
    note = (
        f"showing the first {MAX_FINDINGS_SHOWN} of {len(found)} findings"
        if len(found) > MAX_FINDINGS_SHOWN
        else ""
    )
    return found[:MAX_FINDINGS_SHOWN], note


def read_scans(df, known: set[str] | None = None) -> dict[str, SkillScan]:
    """Skill name -> its scan, from the ``security`` table (the last row of a name wins).

    Rows of skills not in ``known`` (the ``skills`` table) are dropped: nothing lists them.
    """
    out: dict[str, SkillScan] = {}
    if df is None or not len(df):
        return out
    for row in df.to_dict("records"):
        name = row.get("name")
        if not isinstance(name, str) or (known is not None and name not in known):
            continue
        findings, note = _findings(row.get("findings"))
        counts = {s: _count(row.get(s)) for s in SEVERITIES}
        worst = _level(row.get("max_severity")) or next((s for s in reversed(SEVERITIES) if counts[s]), "")
        out[name] = SkillScan(
            name=name,
            version=_text(row.get("version"), META_CHARS),
            scanner=_text(row.get("scanner"), META_CHARS),
            scanner_version=_text(row.get("scanner_version"), META_CHARS),
            scanned_at=_text(row.get("scanned_at"), META_CHARS),
            max_severity=worst,
            counts=counts,
            acknowledged=_count(row.get("acknowledged")),
            findings=findings,
            findings_note=note,
        )
    return out


# --------------------------------------------------------------------------- views
def security_cell(scan: SkillScan | None) -> str:
    """The Browse / Leaderboard cell: worst unacknowledged level and its count, acknowledged count.

    ``⛔ critical (2) · 1 ack`` marks a critical skill; ``none · 1 ack`` a skill whose only
    findings are acknowledged; ``not scanned`` a repo pushed before scans.
    """
    if scan is None:
        return NOT_SCANNED
    level = "critical" if scan.critical else scan.max_severity
    listed = sum(f["severity"] == level and f["acknowledged"] is None for f in scan.findings)
    text = (
        f"{level} ({scan.counts.get(level, 0) or listed or 1})" if level else "none"
    )  # a count left out: the list's
    if scan.critical:
        text = f"{CRITICAL_MARK} {text}"
    return text + (f" · {scan.acknowledged} ack" if scan.acknowledged else "")


def security_rank(scan: SkillScan | None) -> int:
    """Sort key: 5 for critical down to 1 for info, 0 for none, -1 for not scanned."""
    if scan is None:
        return -1
    level = "critical" if scan.critical else scan.max_severity
    return SEVERITIES.index(level) + 1 if level else 0


def security_banner(scan: SkillScan | None) -> list[str]:
    """Lines for the skill page's header (Markdown): a warning for a critical skill, a summary otherwise."""
    from upskill_hub._util.percent import count
    from upskill_hub.space.render import markdown_text

    if scan is None:
        return ["", "Security: not scanned (pushed before upskill-hub scanned skills)."]
    found = ", ".join(f"{scan.counts[s]} {s}" for s in reversed(SEVERITIES) if scan.counts.get(s))
    by = " ".join(x for x in (scan.scanner, scan.scanner_version) if x)
    tail = (
        (f" · {count(scan.acknowledged, 'acknowledged finding')}" if scan.acknowledged else "")
        + (f" · scanned by {markdown_text(by)}" if by else "")
        + (f" on {markdown_text(scan.scanned_at)}" if scan.scanned_at else "")
    )
    if scan.critical:
        return ["", f"**{CRITICAL_MARK} Security: critical findings not acknowledged by the author** "
                f"({found or 'critical'}){tail}. Read the **Security** tab before installing or running it."]  # fmt: skip
    return ["", f"Security: {found or 'no unacknowledged findings'}{tail}."]


def _cell(text: str | None, *, pre: bool = False) -> str:
    """A finding's field as HTML text: controls and bidi marks made visible, then escaped."""
    from upskill_hub._util.printable import escape_controls

    body = html.escape(escape_controls(text or "", one_line=not pre), quote=True)
    return f"<td><pre>{body}</pre></td>" if pre else f"<td>{body}</td>"


def security_html(scan: SkillScan | None) -> str:
    """The Security tab: the findings, worst first, each with its rule, file:line, snippet and message."""
    if scan is None:
        return "<p>Not scanned: this skill was pushed before upskill-hub scanned skills.</p>"
    head = "".join(f"<p>{line}</p>" for line in _plain_summary(scan))
    if not scan.findings:
        body = "<p>No findings listed.</p>" if not scan.findings_note else ""
        return (
            head + body + (f"<p><em>{html.escape(scan.findings_note)}</em></p>" if scan.findings_note else "")
        )
    rows = []
    for f in scan.findings:
        where = f["file"] or "(skill)"
        where += f":{f['line']}" if f["file"] and f["line"] else ""
        ack = f["acknowledged"]
        level = f["severity"] + (" (acknowledged)" if ack is not None else "")
        mark = f"{CRITICAL_MARK} " if f["severity"] == "critical" and ack is None else ""
        rows.append(
            f'<tr class="uh-sev-{f["severity"]}"><td><b>{mark}{html.escape(level)}</b></td>'
            + _cell(f["rule"]) + _cell(where) + _cell(f["snippet"], pre=True)
            + _cell(f["message"] + (f" · acknowledged: {ack}" if ack is not None else ""))
            + "</tr>"
        )  # fmt: skip
    note = f"<p><em>{html.escape(scan.findings_note)}</em></p>" if scan.findings_note else ""
    return (
        head
        + '<table class="uh-security"><thead><tr><th>severity</th><th>rule</th><th>where</th>'
        + "<th>snippet</th><th>message</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
        + note
    )


def _plain_summary(scan: SkillScan) -> list[str]:
    """The tab's summary lines as escaped HTML text."""
    found = ", ".join(f"{scan.counts[s]} {s}" for s in reversed(SEVERITIES) if scan.counts.get(s))
    by = " ".join(x for x in (scan.scanner, scan.scanner_version) if x)
    lines = [
        (
            f"{CRITICAL_MARK} <b>Critical findings not acknowledged by the author.</b> "
            if scan.critical
            else ""
        )
        + html.escape(f"Unacknowledged: {found or 'none'} · acknowledged: {scan.acknowledged}")
    ]
    meta = " · ".join(
        x
        for x in (
            f"scanned by {by}" if by else "",
            scan.scanned_at,
            f"version {scan.version}" if scan.version else "",
        )
        if x
    )
    if meta:
        lines.append(html.escape(meta))
    return lines
