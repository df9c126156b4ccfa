"""``upskill-hub push``: publish skills and eval runs to a Hub dataset repo in one commit.

How a push works, and why:

1. Everything local is checked first (skills valid, run folders readable, repo id, token),
   so bad input pushes nothing.
2. We read the repo's head commit and file list, and plan against it: every file we would
   write is built deterministically and compared with the remote file's hash (LFS sha256
   or git blob id). Unchanged files are left out; if nothing changed, no commit is made
   and nothing is uploaded.
3. Results are append-only: a run whose shard already exists is never rewritten, so the
   same run pushed twice (or from two machines) is never duplicated.
4. The commit names the head we planned against (``parent_commit``). If another push got
   there first the Hub answers 412/409; we re-read, re-plan (the card now includes the
   other push's runs) and try again with backoff. Transient 429/5xx answers are retried
   the same way; LFS uploads already retry inside ``huggingface_hub``.

5. With a scanner (the CLI passes :func:`upskill_hub.trust.scan_skills`; ``--no-scan``
   drops it) every skill is scanned once, before the first attempt, and its findings go
   to ``data/security/<name>.parquet`` in the same commit (:func:`plan_security`). A row
   already in the repo for the same skill version and scanner version is kept as it is, so
   the scan's date alone never makes a commit. With no scanner installed the push goes on
   without security rows and says so once.

Nothing is written to the local skill or run folders, so an interrupted push leaves
both the repo (no commit) and the local results as they were: just push again. (The one
exception is a note, not data: when a secret exported after a run turns out to appear in
none of its rows, the run's local ``.results.parquet.check`` records that it was checked,
so the next push need not check again.)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from upskill_hub import rundir
from upskill_hub._util.hashing import git_blob_sha1, sha256_hex
from upskill_hub._util.percent import count
from upskill_hub._util.printable import escape_controls
from upskill_hub._util.redact import redact
from upskill_hub._util.retry import RetryPolicy, Verdict, parse_retry_after, run_with_retries
from upskill_hub.errors import HubError, OptionError, PathError, UpskillError
from upskill_hub.hub import dataset_repo as dr
from upskill_hub.hub import layout, table_cache
from upskill_hub.hub.card import render_card
from upskill_hub.hub.client import (
    REPO_TYPE,
    check_repo_id,
    describe_failure,
    http_status,
    hub_cause,
    hub_errors,
    is_transport_error,
    make_api,
    repo_url,
)
from upskill_hub.hub.marketplace import MARKETPLACE_PATH, marketplace_bytes
from upskill_hub.rundir.routing_rows import ROUTING_FILE
from upskill_hub.rundir.trigger_rows import TRIGGERS_FILE
from upskill_hub.skill import Skill, skills_in
from upskill_hub.trust.findings import ScanReport

#: Scans skills for push (``upskill_hub.trust.scan_skills``, or a recorded report in tests).
ScanFn = Callable[[list[Skill]], list[ScanReport]]

#: Answers after which a commit is re-planned and retried.
RETRY_STATUSES = {409, 412, 429, 500, 502, 503, 504}
DEFAULT_MAX_ATTEMPTS = 8


@dataclass(frozen=True)
class Change:
    """What a push does (or did) to one file of the repo."""

    path: str
    #: added | updated | deleted | unchanged | kept (a run's shard already in the repo:
    #: results are append-only, never rewritten)
    status: str
    size: int = 0


@dataclass
class Plan:
    """The operations that bring the repo at ``head`` to the pushed content."""

    head: str | None
    adds: dict[str, bytes] = field(default_factory=dict)
    deletes: list[str] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.adds and not self.deletes

    def want(self, path: str, data: bytes, current: Any) -> None:
        """Write ``data`` at ``path`` unless ``current`` (the remote file, or ``None``) holds it."""
        if current is None:
            self.adds[path] = data
            self.changes.append(Change(path, "added", len(data)))
        elif remote_matches(current, data):
            self.changes.append(Change(path, "unchanged", len(data)))
        else:
            self.adds[path] = data
            self.changes.append(Change(path, "updated", len(data)))


@dataclass
class PushResult:
    """What a push did, for the CLI to print and callers to check."""

    repo_id: str
    url: str
    changes: list[Change]
    commit_oid: str | None = None
    commit_url: str | None = None
    pr_url: str | None = None
    bytes_uploaded: int = 0
    attempts: int = 0
    skills: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    #: Lines for the user about what a folder of runs contributed (and what it left out).
    notes: list[str] = field(default_factory=list)
    #: The pushed skills' scans (empty when push did not scan).
    scans: list[ScanReport] = field(default_factory=list)

    @property
    def committed(self) -> bool:
        return self.commit_oid is not None

    def counts(self) -> dict[str, int]:
        out = {"added": 0, "updated": 0, "deleted": 0, "unchanged": 0, "kept": 0}
        for c in self.changes:
            out[c.status] = out.get(c.status, 0) + 1
        return out


@dataclass
class RemoteState:
    """The repo at one commit: its id and its files (path -> ``RepoFile``)."""

    head: str | None
    files: dict[str, Any]


# --------------------------------------------------------------------------- local input
#: The plan file of a ``triggers`` run folder.
TRIGGERS_PLAN_FILE = "triggers-plan.json"


def _run_skill(bundle: dr.RunBundle) -> str | None:
    """The skill a run measured, from its summary or plan (``None`` for a library routing run)."""
    if bundle.summary is not None:
        return bundle.summary.skill_name
    plan = rundir.read_plan(bundle.path)
    if plan is not None and plan.skill_name:
        return plan.skill_name
    triggers_plan = bundle.path / TRIGGERS_PLAN_FILE  # a trigger run's plan names its skill
    if triggers_plan.is_file() and not triggers_plan.is_symlink():
        name = rundir.read_run_json(triggers_plan).get("skill_name")
        return name if isinstance(name, str) else None
    return None


#: Files of a ``tune`` run folder (triggering/tune_run.py): a tune run is not published, the
#: skill it tuned is (its result is a new description in SKILL.md).
TUNE_RUN_FILES = ("tune-plan.json", "tune.jsonl", "tune_result.json")
#: Left-out runs named one per line, at most this many (then "... and N more").
_NAMED_LEFT_OUT = 10


def runs_in_folder(folder: Path, skill_names: set[str]) -> tuple[list[dr.RunBundle], list[str]]:
    """The runs directly inside ``folder`` (an output folder such as ``upskill-runs``) to publish.

    Every run of the skills being pushed (all runs when no skill is pushed) that has results;
    runs not started, of other skills, or of a kind push does not publish (``tune``) are left
    out, and the notes say which and why: "left out 1 run" for a folder of 3 made the user
    count. A run folder that is damaged stops the push, as a single ``--results RUN`` would.
    """
    picked: list[dr.RunBundle] = []
    left_out: dict[str, list[tuple[str, str]]] = {"unfinished": [], "other": [], "tune": []}
    for sub in sorted(folder.iterdir()):
        if sub.is_symlink() or not sub.is_dir():
            continue
        if not _looks_like_run(sub):
            if any(os.path.lexists(sub / n) for n in TUNE_RUN_FILES):
                left_out["tune"].append((sub.name, "a tune run: push the tuned skill instead"))
            continue
        try:
            bundle = dr.load_run_dir(sub, rows=False)
        except PathError as exc:
            if "has no results yet" not in str(exc):
                raise
            left_out["unfinished"].append((sub.name, "no results yet"))
            continue
        skill = _run_skill(bundle)
        if skill_names and skill not in skill_names:
            shown = escape_controls(skill, one_line=True) if skill else "no single skill"
            left_out["other"].append((sub.name, f"a run of {shown}, which is not pushed"))
            continue
        picked.append(bundle)
    notes = []
    kinds = (
        ("unfinished", "run", "without results"),
        ("other", "run", "of other skills"),
        ("tune", "tune run", ""),
    )
    parts = [
        f"{count(len(left_out[key]), noun)} {what}".strip() for key, noun, what in kinds if left_out[key]
    ]
    if parts:
        summary = parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"
        notes.append(f"{folder}: left out {summary}")
        named = sorted((name, why) for runs in left_out.values() for name, why in runs)
        notes += [f"  {escape_controls(name, one_line=True)}: {why}" for name, why in named[:_NAMED_LEFT_OUT]]
        if len(named) > _NAMED_LEFT_OUT:
            notes.append(f"  ... and {len(named) - _NAMED_LEFT_OUT} more")
    if not picked:
        which = f" of {', '.join(sorted(skill_names))}" if skill_names else ""
        raise PathError(folder, f"holds no finished eval run{which} to publish", kind="results folder")
    notes.insert(0, f"{folder}: publishing {count(len(picked), 'run')}")
    return picked, notes


def _looks_like_run(folder: Path) -> bool:
    names = (rundir.RUN_FILE, rundir.RESULTS_FILE, rundir.SUMMARY_FILE, TRIGGERS_FILE, ROUTING_FILE)
    return any(os.path.lexists(folder / n) for n in names)


def load_local(
    skill_dirs: Sequence[str | Path], run_dirs: Sequence[str | Path], notes: list[str] | None = None
) -> tuple[list[Skill], list[dr.RunBundle]]:
    """Validate every skill and run folder; raise on the first problem (nothing is pushed).

    A ``--results`` path may be one run folder, or a folder of runs (``upskill-runs``): then
    every finished run of the skills pushed is published (see :func:`runs_in_folder`).
    """
    if not skill_dirs and not run_dirs:
        raise UpskillError("nothing to push: give at least one SKILL_DIR or --results RUN_DIR")
    skills: list[Skill] = []
    seen: dict[str, Path] = {}
    for d in skill_dirs:
        # A skill folder, or a repository root: its skills as `skills list` finds them.
        for skill in skills_in(d):
            where = skill.path or Path(d)
            if skill.name in seen:
                raise UpskillError(f"two skills named {skill.name!r}: {seen[skill.name]} and {where}")
            seen[skill.name] = where
            dr.check_skill_secrets(skill)
            skills.append(skill)
    runs: list[dr.RunBundle] = []
    run_ids: dict[str, Path] = {}
    for d in run_dirs:
        folder = Path(d)
        if folder.is_dir() and not _looks_like_run(folder):
            found, said = runs_in_folder(folder, {s.name for s in skills})
            if notes is not None:
                notes.extend(said)
        else:
            found = [dr.load_run_dir(d, rows=False)]
        for bundle in found:
            if bundle.run_id in run_ids:
                raise UpskillError(
                    f"run {bundle.run_id} given twice: {run_ids[bundle.run_id]} and {bundle.path}"
                )
            run_ids[bundle.run_id] = bundle.path
            runs.append(bundle)
    return skills, runs


# --------------------------------------------------------------------------- remote state
def read_remote(api, repo_id: str, revision: str | None) -> RemoteState:
    """Head commit and file list of the repo at ``revision``."""
    from huggingface_hub.hf_api import RepoFile

    info = api.dataset_info(repo_id, revision=revision)
    head = info.sha
    files: dict[str, Any] = {}
    for entry in api.list_repo_tree(repo_id, repo_type=REPO_TYPE, revision=head or revision, recursive=True):
        if isinstance(entry, RepoFile):
            files[entry.path] = entry
    return RemoteState(head=head, files=files)


def remote_matches(remote_file: Any, data: bytes) -> bool:
    """True when the remote file holds exactly ``data`` (compared by hash, not downloaded)."""
    if remote_file is None or remote_file.size != len(data):
        return False
    if remote_file.lfs is not None:
        return remote_file.lfs.sha256 == sha256_hex(data)
    return remote_file.blob_id == git_blob_sha1(data)


class RemoteTables:
    """The repo's ``skills`` and ``runs`` tables at one commit, for rendering the card.

    The card lists every skill and run in the repo, not only those pushed now, so the
    remote tables are read, and only when a plan needs them. Each file is taken from the
    local :mod:`table cache <upskill_hub.hub.table_cache>` when a copy with the hash the
    file listing gives is there (always, for tables pushed from this machine); the others
    are downloaded in parallel with ``hf_hub_download`` and kept for the next push.
    """

    def __init__(self, api, repo_id: str, remote: RemoteState) -> None:
        self.api, self.repo_id, self.remote = api, repo_id, remote

    def _download(self, path: str, key: str | None) -> bytes:
        local = self.api.hf_hub_download(self.repo_id, path, repo_type=REPO_TYPE, revision=self.remote.head)
        data = Path(local).read_bytes()
        if key is not None:
            table_cache.put(data, key)
        return data

    def _files(self, paths: list[str]) -> dict[str, bytes]:
        from concurrent.futures import ThreadPoolExecutor

        out: dict[str, bytes] = {}
        missing: list[tuple[str, str | None]] = []
        for path in paths:
            key = table_cache.key_of(self.remote.files[path])
            data = table_cache.get(key) if key else None
            if data is None:
                missing.append((path, key))
            else:
                out[path] = data
        if missing:
            with ThreadPoolExecutor(max_workers=min(8, len(missing))) as pool:
                for (path, _), data in zip(
                    missing, pool.map(lambda m: self._download(*m), missing), strict=True
                ):
                    out[path] = data
        return out

    def rows(self, prefix: str, skip: set[str]) -> list[dict[str, Any]]:
        """Rows of the remote parquet files under ``prefix`` (except the paths in ``skip``)."""
        paths = sorted(
            p
            for p in self.remote.files
            if p.startswith(prefix + "/") and p.endswith(".parquet") and p not in skip
        )
        keys = {p: table_cache.key_of(self.remote.files[p]) for p in paths}
        decoded = {p: table_cache.get_rows(k) for p, k in keys.items() if k}
        files = self._files([p for p in paths if decoded.get(p) is None])
        rows: list[dict[str, Any]] = []
        for path in paths:
            found = decoded.get(path)
            if found is None:
                try:
                    found = dr.read_parquet_rows(files[path], path)
                except (
                    ValueError,
                    UpskillError,
                ):  # a corrupt shard (ArrowInvalid) must not block publishing the rest
                    continue
                if keys[path]:
                    table_cache.put_rows(keys[path], found)
            rows.extend(found)
        return rows


def remember_tables(adds: dict[str, bytes]) -> None:
    """Keep the ``skills`` and ``runs`` tables just committed, so the next push reads them locally."""
    for path, data in adds.items():
        if path.startswith(
            (layout.SKILLS_TABLE_DIR + "/", layout.RUNS_TABLE_DIR + "/", layout.SECURITY_TABLE_DIR + "/")
        ):
            table_cache.put(data)
            table_cache.put(data, f"gitblob-{git_blob_sha1(data)}")


# --------------------------------------------------------------------------- planning
def _card_runs(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``runs`` rows as the card reads them; a row another tool wrote badly is left out."""
    out = []
    for row in rows:
        try:
            out.append(rundir.summary_from_record(row).to_dict())
        except (TypeError, ValueError, AttributeError):
            continue
    return out


def plan_security(
    plan: Plan,
    remote: RemoteState,
    skills: list[Skill],
    scans: Mapping[str, ScanReport] | None,
    remote_rows: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """Plan each pushed skill's ``security`` row; return every row the card shows.

    A remote row for the same skill version and scanner version is kept byte for byte (a
    new scan of unchanged content differs only in its date). A skill pushed without a scan
    keeps its row only while its version is the one scanned; a row about an older version is
    deleted rather than left to describe files that are no longer there.
    """
    by_name: dict[str, dict[str, Any]] = {}
    for row in remote_rows:  # rows another tool wrote without our columns are not ours to show
        name = row.get("name")
        if (
            isinstance(name, str)
            and "scanner_version" in row
            and dr.security_table_path(name) in remote.files
        ):
            by_name[name] = row
    for skill in skills:
        path = dr.security_table_path(skill.name)
        old = by_name.get(skill.name)
        report = (scans or {}).get(skill.name)
        if report is not None and not (
            old is not None
            and old.get("version") == skill.version
            and old.get("scanner_version") == report.scanner_version
        ):
            record = dr.security_record(skill, report)
            plan.want(path, dr.security_table_bytes(record), remote.files.get(path))
            by_name[skill.name] = record
        elif old is not None and old.get("version") == skill.version:
            plan.changes.append(Change(path, "unchanged", remote.files[path].size))
        elif old is not None:
            plan.deletes.append(path)
            plan.changes.append(Change(path, "deleted", remote.files[path].size))
            del by_name[skill.name]
    return [by_name[n] for n in sorted(by_name)]


def build_plan(
    repo_id: str,
    remote: RemoteState,
    skills: list[Skill],
    runs: list[dr.RunBundle],
    fetch_rows: Callable[[str, set[str]], list[dict[str, Any]]],
    scans: Mapping[str, ScanReport] | None = None,
) -> Plan:
    """Compare the content we want with ``remote`` and list the operations needed.

    ``fetch_rows(prefix, skip)`` returns the rows of remote tables we do not rewrite (the
    card lists every skill and run in the repo, not only the ones pushed now). ``scans``
    holds the pushed skills' scans by name (see :func:`plan_security`).
    """
    plan = Plan(head=remote.head)

    def want(path: str, data: bytes) -> None:
        plan.want(path, data, remote.files.get(path))

    local_skill_rows = []
    for skill in skills:
        prefix = dr.skill_dir_path(skill.name) + "/"
        for rel in sorted(skill.files):
            want(prefix + rel, skill.files[rel])
        for path in sorted(remote.files):
            if path.startswith(prefix) and path[len(prefix) :] not in skill.files:
                plan.deletes.append(path)
                plan.changes.append(Change(path, "deleted", remote.files[path].size))
        want(dr.skill_table_path(skill.name), dr.skill_table_bytes(skill))
        local_skill_rows.append(dr.skill_record(skill))

    local_run_rows = []
    result_paths = [p for p in remote.files if p.startswith(layout.RESULTS_TABLE_DIR + "/")]
    trigger_paths = [p for p in remote.files if p.startswith(layout.TRIGGERS_TABLE_DIR + "/")]
    routing_paths = [p for p in remote.files if p.startswith(layout.ROUTING_TABLE_DIR + "/")]
    for run in runs:
        # Both shards of a run are append-only: one already in the repo is kept as it is,
        # without even reading the local rows (that makes a re-push cheap). A run made on
        # Hugging Face Jobs already has its rows in the repo, one file per Job: kept too.
        in_repo = dr.run_results_paths(remote.files, run.run_id)
        if in_repo:
            for path in in_repo:
                plan.changes.append(Change(path, "kept", remote.files[path].size))
        else:
            path = dr.results_path(run.run_id)
            results = dr.results_table_bytes(run)
            if results is not None:
                want(path, results)
                result_paths.append(path)
        tables = (  # append-only too: (path, its bytes from the run, what to note when it is pushed)
            (dr.triggers_path(run.run_id), dr.triggers_table_bytes, trigger_paths.append),
            (dr.routing_path(run.run_id), dr.routing_table_bytes, routing_paths.append),
            (dr.runs_path(run.run_id), dr.runs_table_bytes, lambda _p, r=run: local_run_rows.append(rundir.summary_record(r.summary))),
        )  # fmt: skip
        for path, table_bytes, pushed in tables:
            if path in remote.files:
                plan.changes.append(Change(path, "kept", remote.files[path].size))
            elif (data := table_bytes(run)) is not None:
                want(path, data)
                pushed(path)

    pushed_tables = {dr.skill_table_path(s.name) for s in skills}
    skill_rows = fetch_rows(layout.SKILLS_TABLE_DIR, pushed_tables) + local_skill_rows
    run_rows = fetch_rows(layout.RUNS_TABLE_DIR, set()) + local_run_rows
    has_security = any(p.startswith(layout.SECURITY_TABLE_DIR + "/") for p in remote.files)
    remote_security = fetch_rows(layout.SECURITY_TABLE_DIR, set()) if has_security else []
    security_rows = plan_security(plan, remote, skills, scans, remote_security)
    globs = dr.results_globs(result_paths)
    card = render_card(
        repo_id,
        skill_rows,
        _card_runs(run_rows),
        has_results=bool(globs),
        results_globs=globs,
        has_triggers=any(p.endswith(".parquet") for p in trigger_paths),
        has_routing=any(p.endswith(".parquet") for p in routing_paths),
        security=security_rows,
    )
    want(layout.CARD_PATH, card.encode("utf-8"))
    want(MARKETPLACE_PATH, marketplace_bytes(repo_id, skill_rows))  # so `hf skills` & co. can install
    return plan


def default_message(skills: list[Skill], runs: list[dr.RunBundle]) -> str:
    parts = []
    if skills:
        parts.append("skill" + ("s " if len(skills) > 1 else " ") + ", ".join(s.name for s in skills))
    if runs:
        parts.append("run" + ("s " if len(runs) > 1 else " ") + ", ".join(r.run_id for r in runs))
    text = "Push " + " and ".join(parts) + " with upskill-hub"
    return (
        text if len(text) <= 200 else f"Push {len(skills)} skill(s) and {len(runs)} run(s) with upskill-hub"
    )


# --------------------------------------------------------------------------- push
def push(
    skill_dirs: Sequence[str | Path],
    repo_id: str,
    *,
    results: Sequence[str | Path] = (),
    private: bool = False,
    revision: str | None = None,
    create_pr: bool = False,
    message: str | None = None,
    token: str | None = None,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    on_status: Callable[[str], None] | None = None,
    extra_files: Mapping[str, bytes] | None = None,
    scan: ScanFn | None = None,
) -> PushResult:
    """Push skill folders and eval run folders to the dataset repo ``repo_id`` in one commit.

    ``token`` defaults to the one ``huggingface_hub`` resolves (``HF_TOKEN`` or
    ``hf auth login``). Raises :class:`UpskillError` for anything the user can fix.
    ``extra_files`` (repo path -> bytes) go into the same commit when they differ from the
    repo's copy: the Jobs launcher records a run's shards with the run's summary this way.
    ``scan`` scans the skills (all at once) for their ``security`` rows; without it none is
    written (a remote row for an unchanged skill stays). A scanner that is missing or fails
    is one note in the result, and the push goes on without rows.
    """
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete
    from huggingface_hub.errors import HfHubHTTPError

    from upskill_hub.hub.credentials import require_token

    status = on_status or (lambda _msg: None)
    check_repo_id(repo_id)
    if revision is not None and not revision.strip():
        raise OptionError("revision", revision, "must not be empty")
    notes: list[str] = []
    skills, runs = load_local(skill_dirs, results, notes)
    token = token or require_token("push to the Hub")
    api = make_api(token)
    commit_message = redact(message or default_message(skills, runs))
    if not commit_message.strip():
        raise OptionError("message", message, "must not be empty")

    with hub_errors(repo_id, action="push to"):
        status(f"Reading {repo_id}")
        known = _try_read_remote(api, repo_id, revision)
    existing = set(known.files) if known else set()
    # Read and check the rows of every run the repo does not have yet, before creating or
    # changing anything remote: a broken run folder pushes nothing.
    for run in runs:
        needs_summary_shard = run.summary is not None and dr.runs_path(run.run_id) not in existing
        if not dr.run_results_paths(existing, run.run_id) or needs_summary_shard:
            status(f"Reading run {run.run_id}")
            run.prepare()
        if dr.triggers_path(run.run_id) not in existing:
            run.trigger_records()
        if dr.routing_path(run.run_id) not in existing:
            run.routing_records()

    scans = _scan(scan, skills, status, notes)

    url = repo_url(api.endpoint, repo_id)
    if known is None:  # a new repo, or a new branch of an existing one
        with hub_errors(repo_id, action="push to"):
            status(f"Creating {repo_id}")
            api.create_repo(repo_id, repo_type=REPO_TYPE, private=private, exist_ok=True)
            if revision and not create_pr:
                _ensure_branch(api, repo_id, revision)

    result = PushResult(
        repo_id=repo_id,
        url=url,
        changes=[],
        skills=[s.name for s in skills],
        runs=[r.run_id for r in runs],
        notes=notes,
        scans=list((scans or {}).values()),
    )
    uncertain = False  # a previous attempt may have landed despite its error answer

    def attempt(n: int) -> PushResult:
        result.attempts = n
        with hub_errors(repo_id, action="push to"):
            status("Comparing with the repo")
            # The first plan can use the state read above: parent_commit protects the commit
            # if the repo moved in between.
            remote = known if n == 1 and known is not None else read_remote(api, repo_id, revision)
            plan = build_plan(repo_id, remote, skills, runs, RemoteTables(api, repo_id, remote).rows, scans)
            for extra_path, data in (extra_files or {}).items():
                plan.want(extra_path, data, remote.files.get(extra_path))
        result.changes = plan.changes
        if plan.empty:
            if uncertain:
                # The earlier "failed" commit had in fact landed: report it, do not commit twice.
                result.commit_oid = remote.head
            return result
        operations: list[Any] = [
            CommitOperationAdd(path_in_repo=p, path_or_fileobj=d) for p, d in plan.adds.items()
        ]
        operations += [CommitOperationDelete(path_in_repo=p) for p in plan.deletes]
        status(f"Committing {len(plan.adds)} file(s), deleting {len(plan.deletes)}")
        info = api.create_commit(
            repo_id,
            operations,
            commit_message=commit_message,
            repo_type=REPO_TYPE,
            revision=revision,
            create_pr=create_pr,
            parent_commit=plan.head,
        )
        result.commit_oid = info.oid
        remember_tables(plan.adds)
        result.commit_url = str(info.commit_url) if info.commit_url else None
        result.pr_url = str(info.pr_url) if info.pr_url else None
        result.bytes_uploaded = sum(len(d) for d in plan.adds.values())
        return result

    def judge(exc: Exception) -> Verdict | None:
        # An LFS upload's failure arrives wrapped in a RuntimeError: judge what it wraps.
        cause = hub_cause(exc)
        if isinstance(cause, HfHubHTTPError) and http_status(cause) in RETRY_STATUSES:
            response = getattr(cause, "response", None)
            return Verdict(True, parse_retry_after(getattr(response, "headers", None)))
        return Verdict(True) if cause is not None and is_transport_error(cause) else None

    def on_retry(exc: Exception, next_n: int) -> None:
        nonlocal uncertain
        cause = hub_cause(exc) or exc
        code = http_status(cause) if isinstance(cause, HfHubHTTPError) else None
        # A 5xx or a dropped connection may hide a commit that landed: the next plan checks.
        uncertain = uncertain or code is None or code >= 500
        why = f"Hub answered {code}" if code is not None else f"connection problem ({type(cause).__name__})"
        status(f"{why}; retrying (attempt {next_n}/{max_attempts})")

    policy = RetryPolicy(
        max_retries=max_attempts - 1, backoff_base=0.25, backoff_cap=8.0, max_retry_after=30.0
    )
    try:
        return run_with_retries(attempt, policy=policy, judge=judge, on_retry=on_retry)
    except Exception as exc:
        cause = hub_cause(exc)
        if isinstance(cause, HfHubHTTPError) and http_status(cause) in (409, 412):
            problem, code = describe_failure(cause)  # the server's words, then "run the command again"
            raise HubError(
                repo_id,
                f"the repo kept changing under us ({max_attempts} attempts): {problem}",
                action="push to",
                status=code,
            ) from None
        with hub_errors(repo_id, action="push to"):
            raise


def _scan(
    scan: ScanFn | None, skills: list[Skill], status: Callable[[str], None], notes: list[str]
) -> dict[str, ScanReport] | None:
    """The skills' scans by name; ``None`` (and one note) when there is no scanner or it failed."""
    if scan is None or not skills:
        return None
    status(f"Scanning {count(len(skills), 'skill')}")
    try:
        reports = scan(skills)
    except UpskillError as exc:  # ScannerMissing / ScannerFailed: one line, already redacted
        notes.append(f"skills not scanned, no security rows written: {exc}")
        return None
    return {r.skill: r for r in reports}


def _try_read_remote(api, repo_id: str, revision: str | None) -> RemoteState | None:
    """The repo at ``revision``, or ``None`` when the repo or the branch does not exist yet."""
    from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

    try:
        return read_remote(api, repo_id, revision)
    except (RepositoryNotFoundError, RevisionNotFoundError):
        return None


def _ensure_branch(api, repo_id: str, branch: str) -> None:
    """Create ``branch`` from main when it does not exist yet (like ``hf upload --revision``)."""
    refs = api.list_repo_refs(repo_id, repo_type=REPO_TYPE)
    names = {b.name for b in refs.branches} | {t.name for t in refs.tags}
    if branch in names:
        return
    if len(branch) == 40 and all(ch in "0123456789abcdef" for ch in branch):
        raise UpskillError(f"--revision {branch} is a commit id; push needs a branch name")
    api.create_branch(repo_id, repo_type=REPO_TYPE, branch=branch, exist_ok=True)
