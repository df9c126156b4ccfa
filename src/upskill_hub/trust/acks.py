"""Authors acknowledge findings in the skill folder: shown as acknowledged, never hidden.

A helper script that calls ``subprocess.run(`` is flagged by the scanner; its author can
say why it is fine in ``skill-scan-ack.yaml`` beside SKILL.md, which travels with the
skill (push, pull, install)::

    acknowledged:
      - rule: COMMAND_INJECTION_SHELL_TRUE
        file: scripts/convert.py
        reason: the command is fixed; the user's path is quoted with shlex.quote

An acknowledgement matches every finding of that rule in that file. The finding stays in
every report, marked with the reason; only policies (``--max-severity``) skip it. A
malformed ack file acknowledges nothing and is itself reported (upskill-hub's
``UPSKILLHUB_ACK_FILE_INVALID``), so a stranger cannot silence findings with a broken one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from upskill_hub._util import safeyaml
from upskill_hub.trust.findings import ANALYZER_UPSKILL_HUB, Finding

ACK_FILE = "skill-scan-ack.yaml"
#: Largest ack file read (bytes).
MAX_ACK_BYTES = 64_000
#: Longest reason kept (characters).
MAX_REASON_CHARS = 500


@dataclass(frozen=True)
class Ack:
    """One acknowledgement: findings of ``rule`` in ``file`` are fine, because ``reason``."""

    rule: str
    file: str
    reason: str


class AckFileError(ValueError):
    """The ack file cannot be used; ``str()`` says where and why."""


def parse_acks(data: bytes) -> list[Ack]:
    """The acknowledgements of an ack file's bytes; :class:`AckFileError` when it is malformed."""
    if len(data) > MAX_ACK_BYTES:
        raise AckFileError(f"{ACK_FILE} is larger than {MAX_ACK_BYTES} bytes")
    try:
        doc = safeyaml.load(data.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise AckFileError(f"{ACK_FILE} is not readable YAML ({type(exc).__name__})") from None
    if doc is None:
        return []
    items = doc.get("acknowledged") if isinstance(doc, dict) else None
    if not isinstance(items, list):
        raise AckFileError(f"{ACK_FILE}: expected a mapping with an 'acknowledged' list")
    out = []
    for i, item in enumerate(items):
        where = f"{ACK_FILE}: acknowledged[{i}]"
        if not isinstance(item, dict):
            raise AckFileError(f"{where}: must be a mapping with rule, file and reason")
        vals: dict[str, str] = {}
        for key in ("rule", "file", "reason"):
            v: Any = item.get(key)
            if not isinstance(v, str) or not v.strip():
                raise AckFileError(f"{where}.{key}: must be a non-empty string")
            vals[key] = " ".join(v.split())
        out.append(Ack(vals["rule"], vals["file"], vals["reason"][:MAX_REASON_CHARS]))
    return out


def apply_acks(findings: list[Finding], files: dict[str, bytes]) -> list[Finding]:
    """``findings`` with those the skill's ack file covers marked acknowledged (none removed).

    ``files`` is the skill's files by relative path; a malformed ack file adds one
    upskill-hub finding saying why and acknowledges nothing.
    """
    raw = files.get(ACK_FILE)
    if raw is None:
        return list(findings)
    try:
        acks = parse_acks(raw)
    except AckFileError as exc:
        bad = Finding(
            severity="medium",
            rule="UPSKILLHUB_ACK_FILE_INVALID",
            file=ACK_FILE,
            line=None,
            snippet=None,
            message=f"{exc}; no finding is acknowledged",
            analyzer=ANALYZER_UPSKILL_HUB,
        )
        return [*findings, bad]
    by_key = {(a.rule, a.file): a.reason for a in acks}
    out = []
    for f in findings:
        reason = by_key.get((f.rule, f.file or ""))
        # The ack file cannot acknowledge findings about itself.
        out.append(f.acknowledge(reason) if reason and f.file != ACK_FILE else f)
    return out
