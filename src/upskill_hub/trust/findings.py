"""What a skill scan found: typed findings and the report, parsed from the scanner's JSON.

The findings come from ``cisco-ai-skill-scanner`` (run in its own process, see
:mod:`upskill_hub.trust.scanner`); this module only reads its ``--format json`` document
into types the rest of upskill-hub (push's card, the Space, ``pull --max-severity``)
shares, and back from the dict a dataset row or a JSON file holds.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

from upskill_hub.errors import UpskillError

#: Severities from least to most severe (the scanner's levels, lower-cased).
SEVERITIES: tuple[str, ...] = ("info", "low", "medium", "high", "critical")
#: The analyzer name of findings upskill-hub adds itself (never the scanner's).
ANALYZER_UPSKILL_HUB = "upskill-hub"
#: Longest snippet kept per finding (a minified line can be megabytes).
MAX_SNIPPET_CHARS = 300


def severity_rank(level: str) -> int:
    """Position of ``level`` in :data:`SEVERITIES` (unknown levels rank as ``info``)."""
    try:
        return SEVERITIES.index(level.lower())
    except ValueError:
        return 0


def check_severity(level: str, option: str = "--max-severity") -> str:
    """``level`` lower-cased, or a one-line error naming the levels."""
    low = level.strip().lower()
    if low not in SEVERITIES:
        raise UpskillError(f"{option}: unknown severity {level!r}; use one of {', '.join(SEVERITIES)}")
    return low


@dataclass(frozen=True)
class Finding:
    """One thing a skill asks an agent (or an eval) to do that may be unsafe.

    ``file`` is relative to the skill folder; ``line`` is 1-based in that file, or None
    when the finding is about the skill as a whole. ``acknowledged`` is the author's reason
    when the skill's ack file acknowledges this rule in this file: the finding is still
    shown, only policies (``--max-severity``) skip it.
    """

    severity: str
    rule: str
    file: str | None
    line: int | None
    snippet: str | None
    message: str
    analyzer: str
    acknowledged: str | None = None
    category: str | None = None

    @property
    def where(self) -> str:
        """``file:line``, ``file``, or ``(skill)`` for a finding about the whole skill."""
        if not self.file:
            return "(skill)"
        return f"{self.file}:{self.line}" if self.line else self.file

    def acknowledge(self, reason: str) -> Finding:
        return replace(self, acknowledged=reason)

    def to_dict(self) -> dict[str, Any]:
        return {
            "severity": self.severity,
            "rule": self.rule,
            "file": self.file,
            "line": self.line,
            "snippet": self.snippet,
            "message": self.message,
            "analyzer": self.analyzer,
            "acknowledged": self.acknowledged,
            "category": self.category,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Finding:
        return cls(
            severity=_severity(d.get("severity")),
            rule=str(d.get("rule") or "?"),
            file=_opt_str(d.get("file")),
            line=d["line"] if isinstance(d.get("line"), int) and d["line"] > 0 else None,
            snippet=_opt_str(d.get("snippet")),
            message=str(d.get("message") or ""),
            analyzer=str(d.get("analyzer") or "?"),
            acknowledged=_opt_str(d.get("acknowledged")),
            category=_opt_str(d.get("category")),
        )


@dataclass
class ScanReport:
    """One skill's scan: every finding (acknowledged ones included), the scanner's version, when."""

    scanner_version: str
    skill: str
    findings: list[Finding] = field(default_factory=list)
    scanned_at: str = ""
    #: The scanner's analyzers that ran (``static_analyzer``, ``pipeline``...; ``llm`` when asked).
    analyzers: list[str] = field(default_factory=list)
    duration_s: float | None = None

    def _sorted(self) -> list[Finding]:
        return sorted(
            self.findings, key=lambda f: (-severity_rank(f.severity), f.file or "", f.line or 0, f.rule)
        )

    @property
    def unacknowledged(self) -> list[Finding]:
        """The findings no ack covers, worst first: what policies judge."""
        return [f for f in self._sorted() if f.acknowledged is None]

    @property
    def max_severity(self) -> str | None:
        """The worst unacknowledged finding's severity; None when there is none."""
        open_ = self.unacknowledged
        return open_[0].severity if open_ else None

    @property
    def counts(self) -> dict[str, int]:
        """Unacknowledged findings per severity (every level present), plus ``acknowledged``."""
        c = Counter(f.severity for f in self.findings if f.acknowledged is None)
        out = {level: c.get(level, 0) for level in reversed(SEVERITIES)}
        out["acknowledged"] = sum(1 for f in self.findings if f.acknowledged is not None)
        return out

    def worst(self, n: int = 3) -> list[Finding]:
        """The ``n`` worst findings, unacknowledged ones first."""
        return (self.unacknowledged + [f for f in self._sorted() if f.acknowledged is not None])[:n]

    def summary(self) -> str:
        """One line: ``critical 2, high 1, ... (1 acknowledged); scanner 2.3.2``."""
        counts = self.counts
        parts = [f"{level} {counts[level]}" for level in reversed(SEVERITIES) if counts[level]]
        found = ", ".join(parts) or "no unacknowledged findings"
        ack = f" ({counts['acknowledged']} acknowledged)" if counts["acknowledged"] else ""
        return f"{found}{ack}; cisco-ai-skill-scanner {self.scanner_version}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "skill": self.skill,
            "scanner": "cisco-ai-skill-scanner",
            "scanner_version": self.scanner_version,
            "scanned_at": self.scanned_at,
            "max_severity": self.max_severity,
            "counts": self.counts,
            "analyzers": list(self.analyzers),
            "duration_s": self.duration_s,
            "findings": [f.to_dict() for f in self._sorted()],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ScanReport:
        """Read :meth:`to_dict` back (``max_severity`` and ``counts`` are recomputed)."""
        if not isinstance(d, dict) or not isinstance(d.get("findings", []), list):
            raise UpskillError("not a skill scan report (an object with 'findings' expected)")
        return cls(
            scanner_version=str(d.get("scanner_version") or "?"),
            skill=str(d.get("skill") or "?"),
            findings=[Finding.from_dict(f) for f in d.get("findings", []) if isinstance(f, dict)],
            scanned_at=str(d.get("scanned_at") or ""),
            analyzers=[str(a) for a in d.get("analyzers") or [] if isinstance(a, str)],
            duration_s=d.get("duration_s") if isinstance(d.get("duration_s"), int | float) else None,
        )


def parse_scanner_json(data: Any, files: dict[str, bytes] | None = None) -> list[Finding]:
    """The findings of one ``skill-scanner scan --format json`` document.

    ``files`` (the skill's files by relative path) corrects a line number: the scanner
    counts SKILL.md's lines from the end of its frontmatter, so where the reported line
    does not hold the snippet, the first line that does is used.
    """
    if not isinstance(data, dict) or not isinstance(data.get("findings"), list):
        raise UpskillError(
            "the skill scanner's output has no 'findings' list (is it cisco-ai-skill-scanner 2.x?)"
        )
    out = []
    for raw in data["findings"]:
        if not isinstance(raw, dict):
            continue
        file = _opt_str(raw.get("file_path"))
        line = raw.get("line_number") if isinstance(raw.get("line_number"), int) else None
        snippet = _opt_str(raw.get("snippet"))
        if snippet and len(snippet) > MAX_SNIPPET_CHARS:
            snippet = snippet[: MAX_SNIPPET_CHARS - 1] + "…"
        if file and snippet and files and file in files:
            line = _line_of(files[file], snippet, line)
        title = str(raw.get("title") or "")
        desc = str(raw.get("description") or "")
        out.append(
            Finding(
                severity=_severity(raw.get("severity")),
                rule=str(raw.get("rule_id") or raw.get("id") or "?"),
                file=file,
                line=line if line and line > 0 else None,
                snippet=snippet,
                message=f"{title}: {desc}" if title and desc and desc != title else (title or desc),
                analyzer=str(raw.get("analyzer") or "?"),
                category=_opt_str(raw.get("category")),
            )
        )
    return out


def _line_of(data: bytes, snippet: str, reported: int | None) -> int | None:
    """The 1-based line of ``data`` holding ``snippet``'s first line, keeping ``reported`` when it does."""
    lines = data.decode("utf-8", "replace").splitlines()
    needle = snippet.strip().splitlines()[0].strip() if snippet.strip() else ""
    if not needle:
        return reported
    if reported and 0 < reported <= len(lines) and needle in lines[reported - 1]:
        return reported
    return next((i + 1 for i, text in enumerate(lines) if needle in text), reported)


def _severity(value: Any) -> str:
    low = str(value or "info").lower()
    return low if low in SEVERITIES else "info"


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
