"""``upskill-hub pull`` and installs from the Hub: fetch skills from a dataset repo, safely.

A Hub repo is untrusted input. Before anything is written we:

* pin one commit, so every file comes from the same state of the repo;
* read the ``skills`` table and check every skill name and every recorded path
  (no ``..``, no absolute paths, no backslashes) with :func:`check_relpath`;
* check that the files under ``skills/<name>/`` are exactly the recorded ones (no extra,
  no missing, no symlinks or other non-file entries);
* download each file and compare its size and sha256 with the table;
* validate the resulting folder with :func:`load_skill` and its content hash.

Only when every requested skill passed all checks is anything written, each skill folder
replaced atomically. A refused repo leaves the target untouched.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from upskill_hub import rundir
from upskill_hub._util import limits
from upskill_hub._util.fsutil import atomic_replace_dir, check_relpath, storage_error, too_big
from upskill_hub._util.hashing import sha256_hex
from upskill_hub.errors import UpskillError
from upskill_hub.hub import dataset_repo as dr
from upskill_hub.hub import layout
from upskill_hub.hub.client import REPO_TYPE, check_repo_id, hub_errors, make_api
from upskill_hub.skill import Skill, load_skill, name_problem


@dataclass
class PullResult:
    """What ``pull`` wrote: per skill ``written`` or ``unchanged``."""

    repo_id: str
    commit: str | None
    out_dir: Path
    status: dict[str, str] = field(default_factory=dict)
    skills: list[Skill] = field(default_factory=list)
    #: The skills' scans (``upskill_hub.trust.ScanReport``), when ``max_severity`` asked for them.
    scans: list[Any] = field(default_factory=list)


def _refuse(repo_id: str, why: str) -> UpskillError:
    return UpskillError(f"refusing skills from {repo_id}: {why}; nothing was written")


def _read_table(api, repo_id: str, head: str, paths: list[str]) -> dict[str, dict[str, Any]]:
    """Skills table rows by skill name, checking each row's name against its file name."""
    rows: dict[str, dict[str, Any]] = {}
    for path in paths:
        local = api.hf_hub_download(repo_id, path, repo_type=REPO_TYPE, revision=head)
        try:
            table_rows = dr.read_parquet_rows(Path(local).read_bytes())
        except Exception as exc:
            raise _refuse(repo_id, f"{path} is not a readable skills table ({type(exc).__name__})") from None
        stem = path[len(layout.SKILLS_TABLE_DIR) + 1 : -len(".parquet")]
        for row in table_rows:
            name = row.get("name")
            why = name_problem(name)
            if why:
                raise _refuse(repo_id, f"{path} names a skill whose name {why}")
            if name != stem:
                raise _refuse(repo_id, f"{path} holds skill {name!r}, expected {stem!r}")
            if name in rows:
                raise _refuse(repo_id, f"skill {name!r} is listed twice")
            rows[name] = row
    return rows


def _check_entries(
    repo_id: str, name: str, row: dict[str, Any], tree: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """The recorded files of one skill, after checking them against the repo tree."""
    recorded: dict[str, dict[str, Any]] = {}
    for f in row.get("files") or []:
        rel = f.get("path") if isinstance(f, dict) else None
        if not isinstance(rel, str):
            raise _refuse(repo_id, f"skill {name!r} has a file entry without a path")
        try:
            check_relpath(rel)
        except UpskillError as exc:
            raise _refuse(repo_id, f"skill {name!r} lists an {exc}") from None
        if rel in recorded:
            raise _refuse(repo_id, f"skill {name!r} lists {rel!r} twice")
        sha = f.get("sha256")
        if not isinstance(sha, str) or len(sha) != 64:
            raise _refuse(repo_id, f"skill {name!r} has no valid sha256 recorded for {rel!r}")
        recorded[rel] = f
    for rel in recorded:
        clash = next((d for d in _parents(rel) if d in recorded), None)
        if clash is not None:
            raise _refuse(repo_id, f"skill {name!r} lists {clash!r} both as a file and as a folder")
    if "SKILL.md" not in recorded:
        raise _refuse(repo_id, f"skill {name!r} has no SKILL.md recorded")
    prefix = dr.skill_dir_path(name) + "/"
    present = {}
    for path, entry in tree.items():
        if path.startswith(prefix):
            present[path[len(prefix) :]] = entry
    for rel, entry in present.items():
        if entry is None:
            raise _refuse(repo_id, f"{prefix + rel!r} is not a regular file")
        if rel not in recorded:
            raise _refuse(repo_id, f"{prefix + rel!r} is not recorded in the skills table")
    missing = sorted(set(recorded) - set(present))
    if missing:
        raise _refuse(repo_id, f"{prefix + missing[0]!r} is recorded but missing from the repo")
    for rel, f in recorded.items():
        if present[rel].size != f.get("size"):
            raise _refuse(repo_id, f"{prefix + rel!r} does not have its recorded size")
        if isinstance(f.get("size"), int) and f["size"] > limits.MAX_FILE_BYTES:
            raise _refuse(repo_id, f"{prefix + rel!r} {too_big(f['size'], limits.MAX_FILE_BYTES)}")
    return recorded


def _parents(rel: str) -> list[str]:
    """``a/b/c.md`` -> ``["a", "a/b"]``."""
    parts = rel.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def _repo_tree(api, repo_id: str, head: str) -> dict[str, Any]:
    """Every entry of the repo: ``RepoFile`` for files, ``None`` for anything else that is not a folder."""
    from huggingface_hub.hf_api import RepoFile, RepoFolder

    out: dict[str, Any] = {}
    for entry in api.list_repo_tree(repo_id, repo_type=REPO_TYPE, revision=head, recursive=True):
        if isinstance(entry, RepoFolder):
            continue
        out[entry.path] = entry if isinstance(entry, RepoFile) else None
    return out


def load_skills_from_hub(
    repo_id: str, names: list[str] | None, revision: str | None = None, *, token: str | None = None
) -> list[Skill]:
    """Download and verify skills from the dataset repo ``repo_id`` (all when ``names`` is None).

    Raises :class:`UpskillError` for an unknown skill (listing the available ones) and for
    any repo content that fails the checks above. Nothing is written outside the Hub cache.
    """
    skills, _ = _load(repo_id, names, revision, token)
    return skills


def fetch_skills(
    repo_id: str, names: list[str] | None, revision: str | None = None, *, token: str | None = None
) -> tuple[list[Skill], str | None]:
    """:func:`load_skills_from_hub` plus the commit they were read at (recorded by managed installs)."""
    return _load(repo_id, names, revision, token)


def _load(
    repo_id: str, names: list[str] | None, revision: str | None, token: str | None
) -> tuple[list[Skill], str | None]:
    from upskill_hub.hub.credentials import find_token

    check_repo_id(repo_id)
    api = make_api(token or find_token())
    with hub_errors(repo_id, action="read skills from"):
        info = api.dataset_info(repo_id, revision=revision)
        head = info.sha or revision
        tree = _repo_tree(api, repo_id, head)
        table_paths = sorted(
            p for p in tree if p.startswith(layout.SKILLS_TABLE_DIR + "/") and p.endswith(".parquet")
        )
        if not table_paths:
            # A marketplace repo (hf skills, Claude Code): the index alone says where skills are.
            from upskill_hub.hub.marketplace import MARKETPLACE_PATH, load_from_index

            if MARKETPLACE_PATH in tree:
                return load_from_index(api, repo_id, head, names, tree), head
            raise UpskillError(
                f"{repo_id} has no skills table ({layout.SKILLS_TABLE_DIR}/*.parquet) and no {MARKETPLACE_PATH}: "
                "not a skills repo"
            )
        rows = _read_table(api, repo_id, head, table_paths)
        available = sorted(rows)
        wanted = list(dict.fromkeys(names)) if names else available
        unknown = [n for n in wanted if n not in rows]
        if unknown:
            raise UpskillError(
                f"no skill named {unknown[0]!r} in {repo_id}; available: {', '.join(available) or '(none)'}"
            )
        checked = {name: _check_entries(repo_id, name, rows[name], tree) for name in wanted}
        skills = []
        for name in wanted:
            files: dict[str, bytes] = {}
            for rel, f in checked[name].items():
                local = api.hf_hub_download(
                    repo_id, f"{dr.skill_dir_path(name)}/{rel}", repo_type=REPO_TYPE, revision=head
                )
                data = Path(local).read_bytes()
                if len(data) != f.get("size") or sha256_hex(data) != f["sha256"]:
                    raise _refuse(repo_id, f"{dr.skill_dir_path(name) + '/' + rel!r} does not match its recorded sha256")
                files[rel] = data
            skills.append(_validated_skill(repo_id, name, files, rows[name]))
    return skills, head


def _validated_skill(repo_id: str, name: str, files: dict[str, bytes], row: dict[str, Any]) -> Skill:
    """Check the downloaded files form a valid skill with the recorded content hash."""
    with tempfile.TemporaryDirectory(prefix="upskill-pull-") as tmp:
        folder = Path(tmp) / name
        try:
            for rel, data in files.items():
                target = folder / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
        except OSError as exc:  # a name this file system cannot hold: refuse, do not crash
            if (full := storage_error(exc, Path(tmp))) is not None:
                raise full from None
            raise _refuse(repo_id, f"skill {name!r} cannot be written here ({exc.strerror})") from None
        res = load_skill(folder)
        if not res.ok or res.skill is None:
            raise _refuse(
                repo_id, f"skill {name!r} is not valid ({res.errors[0] if res.errors else 'unreadable'})"
            )
        skill = res.skill
    if row.get("content_hash") and skill.full_hash != row["content_hash"]:
        raise _refuse(repo_id, f"skill {name!r} does not match its recorded content hash")
    skill.path = None
    skill.modes = {}  # the temporary folder's modes say nothing about the Hub copy
    return skill


def _same_folder(folder: Path, files: dict[str, bytes]) -> bool:
    """True when ``folder`` already holds exactly ``files`` (a re-pull then writes nothing)."""
    if not folder.is_dir() or folder.is_symlink():
        return False
    res = load_skill(folder)
    return res.skill is not None and res.skill.files == files and not res.errors


def pull_run(
    repo_id: str, run_id: str, *, out_dir: str | Path, revision: str | None = None, token: str | None = None
) -> Path:
    """Write the pushed run ``run_id`` of ``repo_id`` back as a run folder ``out_dir/<run_id>/``.

    The ``results`` and ``runs`` shards become ``results.jsonl`` and ``summary.json`` through
    :mod:`upskill_hub.rundir`, so ``runs`` and the report read a
    pulled run exactly like one made here. The folder is replaced atomically.
    """
    import pyarrow.parquet as pq
    from huggingface_hub.errors import RemoteEntryNotFoundError

    from upskill_hub.hub.credentials import find_token

    check_repo_id(repo_id)
    dr.check_run_id(run_id)
    api = make_api(token or find_token())

    def fetch(path: str) -> Path | None:
        try:
            return Path(api.hf_hub_download(repo_id, path, repo_type=REPO_TYPE, revision=head))
        except RemoteEntryNotFoundError:  # not LocalEntryNotFoundError: a download the Hub failed
            return None  # is a Hub error for hub_errors, never "no run in the repo"

    with hub_errors(repo_id, action="read runs from"):
        head = api.dataset_info(repo_id, revision=revision).sha or revision
        # One file, or one per Job for a run sharded over Hugging Face Jobs.
        listed = api.list_repo_files(repo_id, repo_type=REPO_TYPE, revision=head)
        results = [f for f in (fetch(p) for p in dr.run_results_paths(listed, run_id)) if f is not None]
        summary = fetch(dr.runs_path(run_id))
    if not results and summary is None:
        raise UpskillError(f"no run {run_id!r} in {repo_id}")
    try:
        rows = [row for f in results for row in rundir.rows_from_table(pq.read_table(f))]
        summaries = [rundir.summary_from_record(r) for r in pq.read_table(summary).to_pylist()] if summary else []
    except (ValueError, TypeError, OSError) as exc:  # ArrowInvalid is a ValueError
        raise _refuse(repo_id, f"run {run_id!r} cannot be read ({exc})") from None
    if any(r.run_id != run_id for r in rows) or any(s.run_id != run_id for s in summaries):
        raise _refuse(repo_id, f"the shards of run {run_id!r} hold rows of another run")

    def fill(folder: Path) -> None:
        rundir.write_results(folder, rows)
        if summaries:
            rundir.write_summary(folder, summaries[0])

    target = Path(out_dir) / run_id
    atomic_replace_dir(target, fill)
    return target


def pull(
    repo_id: str,
    names: list[str] | None = None,
    *,
    revision: str | None = None,
    out_dir: str | Path = "skills",
    force: bool = False,
    token: str | None = None,
    max_severity: str | None = None,
) -> PullResult:
    """Write skills from ``repo_id`` to ``out_dir/<name>/``, byte-identical and atomically.

    A local folder that differs from the Hub copy is only replaced with ``force``; every
    check happens before the first write, so a refusal writes nothing. With
    ``max_severity`` each skill is scanned from memory first and a skill with an
    unacknowledged finding above it is refused (:class:`upskill_hub.trust.SeverityAboveLimit`).
    """
    from upskill_hub.trust import check_severity, enforce_max_severity, scan_skills

    level = check_severity(max_severity) if max_severity is not None else None
    skills, head = _load(repo_id, names, revision, token)
    scans = scan_skills(skills) if level is not None else []
    enforce_max_severity(scans, level, action="nothing was written")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise UpskillError(f"{out} exists and is not a folder")
    result = PullResult(repo_id=repo_id, commit=head, out_dir=out, skills=skills, scans=scans)
    todo = []
    for skill in skills:
        target = out / skill.name
        if target.is_symlink():
            raise UpskillError(f"{target} is a symlink; refusing to write through it")
        if _same_folder(target, skill.files):
            result.status[skill.name] = "unchanged"
            continue
        if target.exists() and not force:
            raise UpskillError(f"{target} exists and differs from the Hub copy (use --force to replace it)")
        todo.append(skill)
    for skill in todo:

        # Files with a shebang become executable and folders 0755 (the Hub keeps no modes).
        atomic_replace_dir(out / skill.name, skill.write_files)
        result.status[skill.name] = "written"
    return result
