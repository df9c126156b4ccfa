"""upskill's result folders, read so ``upskill-hub runs`` can show them beside ours.

upskill writes ``runs/<batch_id>/batch_summary.json`` (a ``BatchSummary``: batch id, model,
task, and one ``RunResult`` per run with ``run_type`` ``baseline`` or ``with_skill``,
``passed``, assertion counts and token stats) plus ``run_N/run_result.json`` per run. This
module reads them; :func:`upskill_hub.lift.history.batch_rows` makes a batch rows of the
runs listing (one per model and condition), with Wilson intervals on the pass rates.

Each run of upskill's benchmark scores several test cases: ``assertions_passed`` of
``assertions_total``. A run is ``passed`` only when all of them pass, so a run scoring 3/4
counts as failed; the rows therefore carry the assertion counts too, and the table shows
them beside the run pass rate. A ``run_N`` folder with ``run_metadata.json`` but no
``run_result.json`` (upskill was stopped mid-run) becomes an ``incomplete`` row with the
reason, instead of vanishing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from upskill_hub._util.boundedread import FileRefused, read_json_file

BATCH_FILE = "batch_summary.json"
STATUS = "upskill batch"
INCOMPLETE = "incomplete"
RESULT_FILE = "run_result.json"
META_FILE = "run_metadata.json"


def _read_json(path: Path) -> Any:
    try:
        return read_json_file(path)  # bounded: type, size, nesting
    except FileRefused:
        return None


def incomplete_runs(batch_dir: Path, listed: set[int]) -> list[tuple[str, dict[str, Any], str]]:
    """``(folder name, run metadata, reason)`` for run folders without a readable result.

    ``listed`` holds run numbers the batch summary already reports (those are complete).
    """
    out = []
    for run_dir in sorted(p for p in batch_dir.glob("run_*") if p.is_dir()):
        meta = _read_json(run_dir / META_FILE)
        meta = meta if isinstance(meta, dict) else {}
        if isinstance(meta.get("run_number"), int) and meta["run_number"] in listed:
            continue
        result_path = run_dir / RESULT_FILE
        if not result_path.exists():
            has_meta = (run_dir / META_FILE).is_file()
            reason = (
                f"{run_dir.name}: only {META_FILE}, no {RESULT_FILE} (the run did not finish)"
                if has_meta
                else f"{run_dir.name}: no {RESULT_FILE}"
            )
        elif not isinstance(_read_json(result_path), dict):
            reason = f"{run_dir.name}: {RESULT_FILE} is not valid JSON"
        else:
            continue
        out.append((run_dir.name, meta, reason))
    return out


def batch_results(batch_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """(batch header, run results) of one folder; ``None`` if it is not an upskill batch."""
    try:
        data = read_json_file(batch_dir / BATCH_FILE)  # bounded: type, size, nesting
    except FileRefused:
        data = None
    if isinstance(data, dict) and isinstance(data.get("results"), list):
        return data, [r for r in data["results"] if isinstance(r, dict)]
    # A batch killed before its summary: the per-run files are all there is.
    results = []
    for run_file in sorted(batch_dir.glob("run_*/run_result.json")):
        try:
            result = read_json_file(run_file)
        except FileRefused:
            continue
        if isinstance(result, dict):
            results.append(result)
    if not results:
        return None
    meta = results[0].get("metadata") or {}
    return {"batch_id": meta.get("batch_id", batch_dir.name), "model": meta.get("model", "")}, results


def find_batches(root: Path) -> list[Path]:
    """upskill batch folders at ``root`` or directly under it."""
    root = Path(root)
    candidates = [root] + (sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else [])
    return [
        p
        for p in candidates
        if (p / BATCH_FILE).is_file() or any(p.glob(f"run_*/{RESULT_FILE}")) or any(p.glob(f"run_*/{META_FILE}"))
    ]
