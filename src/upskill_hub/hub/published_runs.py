"""The reference run for ``eval --compare``: the latest published run of a skill, or a run folder.

A published run lives in a skills dataset repo as two shards written by ``push``: its
summary in ``data/runs/<run_id>.parquet`` (skill, models, timestamp) and its rows in
``data/results/<run_id>.parquet`` (or ``data/results/<run_id>/shard-<i>.parquet``, one per Job). Only the per-case rows allow a paired comparison, so
both are read; the run chosen is the newest one of the same skill that shares a model
with the new run. Everything goes through ``huggingface_hub`` at one pinned commit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from upskill_hub.errors import UpskillError
from upskill_hub.rundir.schema import ResultRow, TriggerStats


@dataclass
class ReferenceRun:
    """The run a new one is compared with, and where it came from (for messages)."""

    run_id: str
    source: str  # "OWNER/NAME@commit" or the run folder
    rows: list[ResultRow]
    triggers: list[TriggerStats] = field(default_factory=list)  # its trigger figures (catalog mode)


def parse_source(source: str) -> tuple[str, str | None]:
    """``OWNER/NAME[@REV]`` -> ``(repo_id, revision)``; the repo id is checked."""
    from upskill_hub.hub.client import check_repo_id

    repo, _, rev = source.partition("@")
    return check_repo_id(repo), (rev or None)


def load_reference(source: str, skill_name: str, models: list[str]) -> ReferenceRun:
    """A run folder when ``source`` is an existing folder, else the latest published run."""
    path = Path(source)
    if path.is_dir():
        return _from_folder(path, skill_name)
    repo = source.partition("@")[0]
    if repo.count("/") != 1 or repo.startswith((".", "/", "~")):
        raise UpskillError(f"--compare {source!r}: no such run folder, and not a Hub repo OWNER/NAME[@REV]")
    repo_id, revision = parse_source(source)
    return _from_hub(repo_id, revision, skill_name, models)


def _from_folder(path: Path, skill_name: str) -> ReferenceRun:
    from upskill_hub.rundir import read_results

    rows = read_results(path)
    if not rows:
        raise UpskillError(f"--compare {path}: no result rows in that run folder")
    other = rows[0].skill_name
    if other != skill_name:
        raise UpskillError(f"--compare {path}: that run is of skill {other!r}, not {skill_name!r}")
    from upskill_hub.rundir import read_summary

    try:
        summary = read_summary(path)
    except UpskillError:  # the rows are the reference; the summary only adds trigger figures
        summary = None
    return ReferenceRun(rows[0].run_id, str(path), rows, summary.triggers if summary else [])


def _from_hub(repo_id: str, revision: str | None, skill_name: str, models: list[str]) -> ReferenceRun:
    from upskill_hub.hub import dataset_repo as dr
    from upskill_hub.hub import layout
    from upskill_hub.hub.client import REPO_TYPE, hub_errors, make_api
    from upskill_hub.hub.credentials import find_token

    api = make_api(find_token())
    with hub_errors(repo_id, action="read published runs from"):
        head = api.dataset_info(repo_id, revision=revision).sha or revision
        files = api.list_repo_files(repo_id, repo_type=REPO_TYPE, revision=head)
        shards = sorted(f for f in files if f.startswith(layout.RUNS_TABLE_DIR + "/") and f.endswith(".parquet"))
        candidates = []
        unreadable: list[str] = []
        for shard in shards:
            local = api.hf_hub_download(repo_id, shard, repo_type=REPO_TYPE, revision=head)
            try:
                table = dr.read_parquet_rows(Path(local).read_bytes(), shard)
            except UpskillError as exc:  # one corrupt summary shard must not hide the others
                unreadable.append(str(exc))
                continue
            for row in table:
                models_of = row.get("models") if isinstance(row.get("models"), list) else []
                # A trigger-only run has no eval rows to pair with: not a reference.
                if (
                    row.get("skill_name") == skill_name
                    and set(models_of) & set(models)
                    and row.get("run_id")
                    and dr.run_results_paths(files, str(row.get("run_id")))
                ):
                    candidates.append(row)
        if not candidates:
            skipped = f" ({len(unreadable)} unreadable run table(s) skipped: {unreadable[0]})" if unreadable else ""
            raise UpskillError(
                f"--compare {repo_id}: no published run of skill {skill_name!r} with model(s) "
                f"{', '.join(models)}{skipped}; push one with `upskill-hub push ... --results RUN_DIR`"
            )
        latest = max(candidates, key=lambda r: (str(r.get("timestamp") or ""), r["run_id"]))
        run_id = dr.check_run_id(latest["run_id"])
        rows = []
        # One file, or one per Job for a run sharded over Hugging Face Jobs.
        for path in dr.run_results_paths(files, run_id) or [dr.results_path(run_id)]:
            local = api.hf_hub_download(repo_id, path, repo_type=REPO_TYPE, revision=head)
            try:
                rows += [ResultRow.from_dict(r) for r in dr.read_parquet_rows(Path(local).read_bytes(), f"{repo_id}: {path}")]
            except TypeError as exc:  # a table with other columns than result rows have
                raise UpskillError(f"--compare {repo_id}: {path} does not hold result rows ({exc})") from None
    at = f"@{head[:12]}" if head else ""
    from upskill_hub.rundir import summary_from_record

    try:
        triggers = summary_from_record(latest).triggers
    except (TypeError, ValueError, AttributeError):  # a runs row another tool wrote badly
        triggers = []
    return ReferenceRun(run_id, f"{repo_id}{at}", rows, triggers)
