"""skill-creator's workspace layout: a run folder exported so its eval viewer opens it as it is.

skill-creator (anthropics/skills, ``skills/skill-creator``, followed at commit
:data:`ANCHOR`) keeps one folder per answer and its viewer, ``eval-viewer/generate_review.py``,
finds runs by walking the workspace for folders that hold ``outputs/``. What it and
``scripts/aggregate_benchmark.py`` read, per ``references/schemas.md``::

    <workspace>/
      benchmark.json                        the Benchmark tab (generate_review.py --benchmark)
      eval-<id>/eval_metadata.json          eval_id (aggregate_benchmark.py)
      eval-<id>/<configuration>/run-<k>/
        outputs/answer.md                   the answer, shown as an output file
        eval_metadata.json                  prompt and eval_id (the viewer looks in the run folder and its parent)
        grading.json                        expectations[] (text, passed, evidence) and summary
        timing.json                         total_tokens, duration_ms, total_duration_seconds

``<configuration>`` is ``with_skill`` / ``without_skill``; with several model x mode
groups each group is its own pair (``<group>-with_skill``, ``<group>-without_skill``): the
viewer's badge matches the substring and the answers of two models are never pooled.
Failed calls have no answer to show and graded nothing: they get no folder (``benchmark.json``
lists them in ``runs[]`` with ``errors: 1``). Timing goes to ``timing.json`` only:
aggregate_benchmark.py reads ``timing.json`` (and its tokens) only when ``grading.json``
holds no time, and counts ``execution_metrics.output_chars`` as tokens when ``timing.json``
has none, so ``grading.json`` carries neither.

The whole workspace is written into a temporary sibling and renamed into place, and a
marker file says it is ours, so a later export replaces it and nothing else is overwritten.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from upskill_hub._util.fsutil import atomic_replace_dir, write_json_atomic, write_text_atomic
from upskill_hub.errors import PathError

#: The anthropics/skills commit whose skill-creator scripts and schemas this layout follows.
ANCHOR = "anthropics/skills@9d2f1ae187231d8199c64b5b762e1bdf2244733d"
#: skill-creator's configuration names for a with-skill answer and a baseline one.
WITH, WITHOUT = "with_skill", "without_skill"
#: Marks a folder as written by ``runs export`` (so a later export may replace it).
MARKER = ".upskill-hub-export.json"
#: The answer's file inside ``outputs/``.
ANSWER_FILE = "answer.md"
#: The files of one answer's folder (``eval-N/<configuration>/run-K/``), the viewer's and aggregate_benchmark.py's.
RUN_FILES = ("outputs/" + ANSWER_FILE, "eval_metadata.json", "grading.json", "timing.json")


def configuration(condition: str, group: str | None) -> str:
    """skill-creator's configuration for an answer: ``with_skill`` / ``without_skill``, prefixed
    by its group's name (a safe folder name) when a run measured several model x mode groups."""
    base = WITH if condition == "with_skill" else WITHOUT
    if group is None:
        return base
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", group).strip("._-") or "model"
    return f"{safe}-{base}"


def grading_document(entry: Mapping[str, Any]) -> dict[str, Any]:
    """``grading.json`` of one ``benchmark.json`` ``runs[]`` entry (schemas.md's grading.json)."""
    r = entry["result"]
    return {
        "expectations": list(entry.get("expectations") or []),
        "summary": {
            "passed": r["passed"],
            "failed": r["failed"],
            "total": r["total"],
            "pass_rate": r["pass_rate"],
        },
        "execution_metrics": {
            "total_tool_calls": r.get("tool_calls", 0),
            "errors_encountered": r.get("errors", 0),
        },
        "user_notes_summary": {
            "uncertainties": [],
            "needs_review": list(entry.get("notes") or []),
            "workarounds": [],
        },
    }


def timing_document(entry: Mapping[str, Any]) -> dict[str, Any]:
    """``timing.json`` of one ``runs[]`` entry: its tokens and its wall-clock time."""
    seconds = float(entry["result"]["time_seconds"])
    return {
        "total_tokens": int(entry["result"]["tokens"]),
        "duration_ms": round(seconds * 1000),
        "total_duration_seconds": seconds,
    }


def run_folder(entry: Mapping[str, Any]) -> str:
    """``eval-<id>/<configuration>/run-<k>``: where one ``runs[]`` entry's files go."""
    return f"eval-{int(entry['eval_id'])}/{entry['configuration']}/run-{int(entry['run_number'])}"


def is_export(dest: Path) -> bool:
    """Whether ``dest`` is a folder an earlier ``runs export`` wrote (it holds our marker)."""
    marker = dest / MARKER
    return marker.is_file() and not marker.is_symlink()


def check_destination(dest: Path) -> None:
    """Refuse, in one line, a destination that is not a new folder, an empty one or an earlier export."""
    if dest.is_symlink():
        raise PathError(dest, "is a symbolic link; export into a plain folder")
    if not dest.exists():
        return
    if not dest.is_dir():
        raise PathError(dest, "exists and is not a folder; choose a new or empty folder")
    if any(dest.iterdir()) and not is_export(dest):
        raise PathError(dest, "is not empty and not an earlier `runs export`; choose a new or empty folder")


def write_workspace(
    dest: Path,
    benchmark: Mapping[str, Any],
    answers: Sequence[str | None],
    prompts: Mapping[str, str],
    run_id: str,
) -> list[str]:
    """Write skill-creator's workspace for one run at ``dest``; the answer folders written.

    ``benchmark`` is the run's ``benchmark.json`` document; ``answers[i]`` the answer text of
    its ``runs[i]`` (``None`` for a failed call, which gets no folder); ``prompts`` each
    case id's prompt where known. ``dest`` is replaced as a whole (see :func:`check_destination`).
    """
    check_destination(dest)
    entries = list(benchmark["runs"])
    written: list[str] = []

    def fill(tmp: Path) -> None:
        evals: dict[int, str] = {}
        for entry, answer in zip(entries, answers, strict=True):
            if answer is None:
                continue
            folder = tmp / run_folder(entry)
            case = str(entry.get("case_id") or entry.get("eval_name") or entry["eval_id"])
            meta = {
                "eval_id": int(entry["eval_id"]),
                "eval_name": str(entry.get("eval_name") or case),
                "prompt": prompts.get(case) or f"(case {case}: the run folder keeps no prompt)",
                "assertions": [e.get("text", "") for e in entry.get("expectations") or []],
            }
            evals.setdefault(int(entry["eval_id"]), case)
            write_text_atomic(folder / "outputs" / ANSWER_FILE, answer, fsync=False)
            write_json_atomic(folder / "eval_metadata.json", meta, fsync=False)
            write_json_atomic(folder / "grading.json", grading_document(entry), fsync=False)
            write_json_atomic(folder / "timing.json", timing_document(entry), fsync=False)
            written.append(run_folder(entry))
        for eval_id, case in evals.items():
            meta = {"eval_id": eval_id, "eval_name": case, "prompt": prompts.get(case, "")}
            write_json_atomic(tmp / f"eval-{eval_id}" / "eval_metadata.json", meta, fsync=False)
        write_json_atomic(tmp / "benchmark.json", dict(benchmark), fsync=False)
        write_json_atomic(
            tmp / MARKER, {"tool": "upskill-hub", "run_id": run_id, "layout": ANCHOR}, fsync=False
        )

    atomic_replace_dir(Path(os.path.abspath(dest)), fill)
    return written
