"""Skill scans on the terminal: the report of ``skills scan`` and the summary ``install``/``pull`` show.

Every finding's text comes from a stranger's skill (snippets, file names) or from the
scanner quoting it, so each is printed with controls escaped and never read as markup.
"""

from __future__ import annotations

from typing import Any

import typer

from upskill_hub._util.printable import escape_controls
from upskill_hub.trust import Finding, ScanReport

_STYLE = {"critical": "bold red", "high": "red", "medium": "yellow", "low": "cyan", "info": "dim"}

#: ``--max-severity`` as every command that scans spells it.
MAX_SEVERITY_HELP = (
    "Scan each skill first (cisco-ai-skill-scanner) and refuse, writing nothing, when an "
    "unacknowledged finding is above LEVEL (info, low, medium, high, critical)."
)


def max_severity_option() -> Any:
    """The ``--max-severity LEVEL`` option (shared by ``skills scan``/``install`` and ``pull``)."""
    return typer.Option(None, "--max-severity", metavar="LEVEL", help=MAX_SEVERITY_HELP)


def _one(text: object) -> str:
    return escape_controls(str(text), one_line=True)


def print_finding(console: Any, f: Finding, *, indent: str = "  ") -> None:
    """``SEVERITY RULE file:line message`` with the snippet below, and the ack's reason."""
    from rich.text import Text

    line = Text(indent)
    line.append(f"{f.severity.upper():<8}", style=_STYLE.get(f.severity, ""))
    line.append(f" {_one(f.rule)} ", style="bold")
    line.append(_one(f.where), style="cyan")
    if f.analyzer == "upskill-hub":
        line.append(" [upskill-hub]", style="dim")
    line.append(f"  {_one(f.message)}")
    if f.acknowledged is not None:
        line.append(f"  (acknowledged: {_one(f.acknowledged)})", style="green")
    console.print(line, soft_wrap=True)
    if f.snippet:
        console.print(Text(f"{indent}         {_one(f.snippet)}", style="dim"), soft_wrap=True)


def print_report(console: Any, report: ScanReport) -> None:
    """The whole report of one skill: its summary line, then every finding, worst first."""
    print_summary(console, report, worst=0)
    for f in report.worst(len(report.findings)):
        print_finding(console, f)


def print_summary(console: Any, report: ScanReport, *, worst: int = 3) -> None:
    """One line per skill (max severity, counts, scanner version) and its ``worst`` open findings."""
    from rich.text import Text

    level = report.max_severity
    head = Text("scan ")
    head.append(_one(report.skill), style="bold")
    head.append(": ")
    head.append(level.upper() if level else "OK", style=_STYLE.get(level or "", "green"))
    head.append(f" ({_one(report.summary())})")
    console.print(head, soft_wrap=True)
    for f in report.unacknowledged[:worst]:
        print_finding(console, f, indent="    ")
