"""upskill's result folders, read so ``upskill-hub runs`` can show them beside ours.

upskill writes ``runs/<batch_id>/batch_summary.json`` (a ``BatchSummary``: batch id, model,
task, and one ``RunResult`` per run with ``run_type`` ``baseline`` or ``with_skill``,
``passed``, assertion counts and token stats) plus ``run_N/run_result.json`` per run. A
batch becomes rows in the same shape as :func:`upskill_hub.evals.history.comparison_rows`
(one per model and condition), with Wilson intervals on the pass rates. upskill records no
per-case pairing, so no lift interval is claimed for its batches.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from upskill_hub.boundedread import FileRefused, read_json_file
from upskill_hub.evals.stats import wilson_interval

BATCH_FILE = "batch_summary.json"
STATUS = "upskill batch"


def _batch_results(batch_dir: Path) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
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
    return [p for p in candidates if (p / BATCH_FILE).is_file() or any(p.glob("run_*/run_result.json"))]


def batch_rows(batch_dir: Path) -> list[dict[str, Any]]:
    """Comparison rows (one per model and condition) for one upskill batch folder."""
    loaded = _batch_results(batch_dir)
    if loaded is None:
        return []
    header, results = loaded
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in results:
        meta = r.get("metadata") or {}
        model = str(meta.get("model") or header.get("model") or "")
        condition = r.get("run_type") if r.get("run_type") in ("baseline", "with_skill") else "with_skill"
        groups.setdefault((model, condition), []).append(r)
    created = min((str((r.get("metadata") or {}).get("timestamp", "")) for r in results), default="")
    skill = next((str(r["skill_name"]) for r in results if r.get("skill_name")), "")
    rows = []
    for (model, condition), runs in sorted(groups.items()):
        n = len(runs)
        passed = sum(bool(r.get("passed")) for r in runs)
        errors = sum(r.get("error_message") is not None for r in runs)
        low, high = wilson_interval(passed, n)
        tokens = [((r.get("stats") or {}).get("total_tokens") or 0) for r in runs]
        rows.append(
            {
                "run_id": str(header.get("batch_id") or batch_dir.name),
                "created": created,
                "status": STATUS,
                "skill_name": skill,
                "skill_version": "",
                "model": model,
                "condition": condition,
                "n": n,
                "passed": passed,
                "errors": errors,
                "cached": 0,
                "pass_rate": passed / n if n else None,
                "ci_low": low,
                "ci_high": high,
                "mean_total_tokens": sum(tokens) / n if n else None,
                "lift": None,
                "lift_ci_low": None,
                "lift_ci_high": None,
                "p_value": None,
                "conclusive": None,
            }
        )
    return rows
