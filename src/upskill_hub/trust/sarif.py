"""SARIF 2.1.0 for ``skills scan --format sarif`` (GitHub Code Scanning and other viewers).

Written from the :class:`ScanReport`, not copied from the scanner's own SARIF: the report
also holds upskill-hub's findings and the author's acknowledgements, which SARIF carries as
``suppressions`` of kind ``external`` with status ``accepted`` and the reason (a viewer
shows them as acknowledged; none is dropped).
"""

from __future__ import annotations

from typing import Any

from upskill_hub.trust.findings import ScanReport

_LEVEL = {"critical": "error", "high": "error", "medium": "warning", "low": "note", "info": "note"}
SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def to_sarif(reports: list[ScanReport], roots: list[str] | None = None) -> dict[str, Any]:
    """One SARIF log, one run; ``roots[i]`` prefixes report i's paths (the skill folder)."""
    rules: dict[str, dict[str, Any]] = {}
    results = []
    version = reports[0].scanner_version if reports else "unknown"
    for i, report in enumerate(reports):
        root = (roots[i].rstrip("/") + "/") if roots and roots[i] else ""
        for f in report.findings:
            rules.setdefault(f.rule, {"id": f.rule, "properties": {"analyzer": f.analyzer}})
            result: dict[str, Any] = {
                "ruleId": f.rule,
                "level": _LEVEL.get(f.severity, "note"),
                "message": {"text": f.message or f.rule},
                "properties": {"severity": f.severity, "analyzer": f.analyzer, "skill": report.skill},
            }
            if f.file:
                loc: dict[str, Any] = {"artifactLocation": {"uri": root + f.file}}
                if f.line:
                    loc["region"] = {"startLine": f.line}
                    if f.snippet:
                        loc["region"]["snippet"] = {"text": f.snippet}
                result["locations"] = [{"physicalLocation": loc}]
            if f.acknowledged is not None:
                result["suppressions"] = [
                    {"kind": "external", "status": "accepted", "justification": f.acknowledged}
                ]
            results.append(result)
    driver = {
        "name": "upskill-hub skills scan",
        "informationUri": "https://github.com/cisco-ai-defense/skill-scanner",
        "rules": list(rules.values()),
        "properties": {"scanner": "cisco-ai-skill-scanner", "scanner_version": version},
    }
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [{"tool": {"driver": driver}, "results": results}]}
