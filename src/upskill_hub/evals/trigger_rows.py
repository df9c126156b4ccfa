"""The run folder's ``triggers.jsonl``: one :class:`TriggerRow` per trigger call.

Written by ``upskill-hub triggers`` (and ``--library`` routing runs) and catalog-mode
evals as calls finish; read back by resume, ``runs`` and ``push`` (the ``triggers`` config).
"""

from __future__ import annotations

import json
from pathlib import Path

from upskill_hub.errors import PathError
from upskill_hub.evals.schema import TriggerRow

#: A run folder's trigger rows (one :class:`TriggerRow` per line).
TRIGGERS_FILE = "triggers.jsonl"


def read_trigger_rows(run_dir: Path, *, run_id: str | None = None) -> list[TriggerRow]:
    """The :class:`TriggerRow` lines of ``run_dir/triggers.jsonl`` (none when it is absent)."""
    path = Path(run_dir) / TRIGGERS_FILE
    if not path.is_file():
        return []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PathError(path, f"cannot be read ({exc})") from None
    # What follows the last newline is empty, or a line a killed writer left unfinished.
    lines = text.split("\n")[:-1]
    rows: list[TriggerRow] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            if not isinstance(data, dict):
                raise TypeError("not a JSON object")
            row = TriggerRow.from_dict(data)
        except (ValueError, TypeError) as exc:
            raise PathError(path, f"line {number} is not a trigger row ({str(exc).splitlines()[0]})") from None
        if run_id is not None and row.run_id != run_id:
            raise PathError(path, f"line {number} belongs to run {row.run_id!r}, not {run_id!r}")
        rows.append(row)
    return rows
