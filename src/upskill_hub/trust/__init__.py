"""Trust: scan skills for prompt injection, exfiltration and malicious code before they are used.

The findings come from ``cisco-ai-skill-scanner``, run as a program of its own
(:mod:`.scanner`); upskill-hub adds what only it knows a skill will run (:mod:`.extras`),
the author's acknowledgements (:mod:`.acks`) and the ``--max-severity`` policy
(:mod:`.policy`). Front ends (``skills scan``/``install``, ``pull``, push's card, the
Space) use the names exported here.
"""

from __future__ import annotations

from upskill_hub.trust.acks import ACK_FILE, Ack, parse_acks
from upskill_hub.trust.findings import SEVERITIES, Finding, ScanReport, check_severity, severity_rank
from upskill_hub.trust.policy import SeverityAboveLimit, enforce_max_severity, over_limit
from upskill_hub.trust.sarif import to_sarif
from upskill_hub.trust.scan import report_from_run, scan_skill, scan_skills
from upskill_hub.trust.scanner import (
    INSTALL_HINT,
    PINNED,
    ScannerFailed,
    ScannerMissing,
    ScannerRun,
    find_scanner,
)

__all__ = [
    "ACK_FILE",
    "INSTALL_HINT",
    "PINNED",
    "SEVERITIES",
    "Ack",
    "Finding",
    "ScanReport",
    "ScannerFailed",
    "ScannerMissing",
    "ScannerRun",
    "SeverityAboveLimit",
    "check_severity",
    "enforce_max_severity",
    "find_scanner",
    "over_limit",
    "parse_acks",
    "report_from_run",
    "scan_skill",
    "scan_skills",
    "severity_rank",
    "to_sarif",
]
