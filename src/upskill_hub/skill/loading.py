"""Read a skill folder within bounds, and find the skill folders in a tree.

A folder is untrusted input: only regular files inside it (or a SKILL.md shared through a
symlink within its repository) are read, within ``UPSKILL_MAX_FILE_MB``; each refusal is a
:class:`Problem`. The walk behind ``skills list``, ``push`` and ``install`` keeps these rules.
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Callable
from pathlib import Path

from upskill_hub._util import fsutil, limits, suggest
from upskill_hub._util.problems import Problem
from upskill_hub._util.sizes import size_and_limit
from upskill_hub.cases import CasesError, SkillMeta, load_meta_text
from upskill_hub.errors import UpskillError
from upskill_hub.skill.frontmatter import (
    FrontmatterError,
    check_body,
    check_frontmatter,
    coerce_scalars,
    parse_frontmatter,
)
from upskill_hub.skill.model import (
    EVALS_FILE,
    IGNORED_NAMES,
    META_FILE,
    SKILL_FILE,
    SKILL_FILE_LOWER,
    LoadResult,
    Skill,
    parent_dirs,
)

#: A UTF-8 byte-order mark before the first ``---``: read here, refused by loaders that look
#: for ``---`` at byte 0. Agents named from their bug trackers (2026): crewAI #7538,
#: AgentScope #2732, DeerFlow #5587 open; Mistral Vibe, Cline, fastmcp and Hermes fixed it
#: in 2026 releases, so older versions of those skip the skill too.
BOM_WARNING = (
    "starts with a UTF-8 byte-order mark (BOM): read here, but crewAI, AgentScope and DeerFlow "
    "(and Mistral Vibe, Cline, fastmcp, Hermes before their 2026 fixes) fail to parse or silently skip "
    "such a skill; save the file as UTF-8 without BOM"
)


def scan_skill(root: Path) -> tuple[list[fsutil.Entry], list[fsutil.Refusal]]:
    """The files of a skill folder and the entries refused (see :func:`fsutil.scan_tree`).

    Only regular files and folders are read: a FIFO, a device, a socket, a symlink loop or
    leaving the skill, a name that is not UTF-8 or carries controls or bidi overrides, and a
    file over ``UPSKILL_MAX_FILE_MB`` are each refused with one line naming the path.
    """
    files, refused = fsutil.scan_tree(root, ignore=IGNORED_NAMES)
    return [e for e in files if not e.rel.endswith(".pyc")], refused


def load_skill(path: str | Path, *, strict: bool = False) -> LoadResult:
    """Read and validate the skill folder at ``path``; never raises for bad content."""
    root = Path(path)
    shown = str(path)
    if not root.exists():
        return LoadResult(None, [Problem(shown, "path", suggest.missing(root))])
    if root.is_file() and root.name in (SKILL_FILE, SKILL_FILE_LOWER):
        root = root.parent
        shown = str(root)
    if not root.is_dir():
        return LoadResult(None, [Problem(shown, "path", "is not a skill folder (expected a directory)")])
    md_name = skill_md_name(root)
    if md_name is None:
        return LoadResult(None, [Problem(shown, SKILL_FILE, "missing (a skill folder needs SKILL.md)")])

    problems: list[Problem] = []
    if md_name == SKILL_FILE_LOWER:
        problems.append(
            Problem(
                shown,
                SKILL_FILE_LOWER,
                "lowercase file name: read as SKILL.md (as the reference validator does), but some agents "
                "only look for SKILL.md; rename it",
                "warning",
            )
        )
    entries = _entries(root, shown, md_name, problems)
    if entries is None:
        return LoadResult(None, problems)
    files, modes = _read_entries(root, shown, entries, problems)
    text = _skill_md_text(files.get(md_name, b""), shown, md_name, problems)
    if text is None:
        return LoadResult(None, problems)
    try:
        fm, body, written = parse_frontmatter(text)
    except FrontmatterError as exc:
        problems.append(Problem(shown, exc.field, exc.message))
        return LoadResult(None, problems)

    if not strict:
        problems += coerce_scalars(fm, written, shown)
    problems += check_frontmatter(fm, root.resolve().name, shown, strict, written)
    problems += check_body(body, shown, strict)
    skill = Skill(
        name=fm.get("name") if isinstance(fm.get("name"), str) else root.name,
        description=fm.get("description") if isinstance(fm.get("description"), str) else "",
        body=body,
        frontmatter=fm,
        files=files,
        meta=_read_tests(files, root, shown, problems),
        path=root,
        modes=modes,
    )
    return LoadResult(skill, problems)


def _entries(root: Path, shown: str, md_name: str, problems: list[Problem]) -> list[fsutil.Entry] | None:
    """The files to read: the folder's own, plus a SKILL.md shared through a symlink within its
    repository; refused entries are added to ``problems`` (``None``: the SKILL.md itself is)."""
    entries, refused = scan_skill(root)
    real_root = root.resolve()
    md_path = root / md_name
    shared_md = next((r for r in refused if r.rel == md_name), None)
    if (
        shared_md is not None
        and md_path.is_symlink()
        and md_path.is_file()
        and not md_path.resolve().is_relative_to(real_root)
    ):
        # Plugin repositories share one SKILL.md between agents through a symlink: it is
        # followed when it stays inside the repository, refused (as before) otherwise.
        target = (root / md_name).resolve()
        repo = repository_root(root)
        if not target.is_relative_to(repo):
            problems.append(Problem(shown, md_name, _outside_boundary(repo, real_root)))
            return None
        refused = [r for r in refused if r is not shared_md]
        st = os.stat(target)
        entries.append(fsutil.Entry(md_name, target, st.st_size, st.st_mode & 0o777, True))
    problems += [Problem(shown, fsutil.shown_path(r.rel), r.reason) for r in refused]
    return entries


def _read_entries(
    root: Path, shown: str, entries: list[fsutil.Entry], problems: list[Problem]
) -> tuple[dict[str, bytes], dict[str, int]]:
    """The bytes of each file (within ``UPSKILL_MAX_FILE_MB``) and the modes of files and folders."""
    files: dict[str, bytes] = {}
    modes: dict[str, int] = {"": root.stat().st_mode & 0o777}
    for entry in entries:
        rel = entry.rel
        for rel_dir in parent_dirs(rel):
            modes.setdefault(f"{rel_dir}/", (root / rel_dir).stat().st_mode & 0o777)
        try:
            files[rel] = fsutil.read_capped(entry.path)
            modes[rel] = entry.mode
        except fsutil.FileRefused as exc:
            problems.append(Problem(shown, rel, exc.problem))
    return files, modes


def _skill_md_text(raw: bytes, shown: str, md_name: str, problems: list[Problem]) -> str | None:
    """SKILL.md as text (a byte-order mark is a warning); ``None`` when it is not UTF-8."""
    if raw.startswith(codecs.BOM_UTF8):
        problems.append(Problem(shown, md_name, BOM_WARNING, "warning"))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(
            Problem(shown, md_name, f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})")
        )
        return None


def _read_tests(files: dict[str, bytes], root: Path, shown: str, problems: list[Problem]) -> SkillMeta:
    """The skill's tests: ``skill_meta.json``, else the agentskills.io ``evals/evals.json``."""
    name = META_FILE if META_FILE in files else EVALS_FILE if EVALS_FILE in files else None
    if name is None:
        return SkillMeta()
    try:
        # The agentskills.io convention: evals/evals.json, input files relative to the skill.
        return load_meta_text(files[name], source=name, base_dir=root if name == EVALS_FILE else None)
    except CasesError as exc:
        # A whole-file problem (not JSON, not UTF-8) is already about ``name``; a field's is in it.
        fld = exc.field if exc.field.startswith(name) else f"{name}: {exc.field}"
        problems.append(Problem(shown, fld, exc.message))
    return SkillMeta()


def require_skill(path: str | Path, *, strict: bool = False) -> Skill:
    """Load a skill that must be valid; raise :class:`UpskillError` naming the first problem."""
    res = load_skill(path, strict=strict)
    if not res.ok:
        first = res.errors[0]
        more = (
            f" (and {len(res.errors) - 1} more; run 'upskill-hub skills validate')"
            if len(res.errors) > 1
            else ""
        )
        raise UpskillError(f"{first}{more}")
    assert res.skill is not None
    return res.skill


def skill_md_name(folder: Path) -> str | None:
    """``SKILL.md``, else ``skill.md``, as actually spelled in ``folder`` (regular files only)."""
    try:
        names = set(os.listdir(folder))
    except OSError:
        return None
    for name in (SKILL_FILE, SKILL_FILE_LOWER):
        path = folder / name
        # A symlink counts when it leads to a regular file (load_skill checks where it leads).
        if name in names and path.is_file():
            return name
    return None


def _outside_boundary(repo: Path, skill_root: Path) -> str:
    """Why a symlinked SKILL.md is refused, naming the boundary it crossed as it really is.

    Inside a git repository a shared SKILL.md may live anywhere in it. A skill folder in
    no repository is its own boundary: saying "outside the repository (<the skill folder>)"
    there named a repository that does not exist.
    """
    if repo == skill_root and not (repo / ".git").exists():
        return (
            f"symlink points outside the skill folder ({skill_root}), which is in no git repository: "
            "a SKILL.md shared through a symlink is followed only within one repository"
        )
    return f"symlink points outside the repository ({repo})"


def repository_root(folder: Path) -> Path:
    """The repository a skill folder belongs to: the nearest folder holding ``.git``.

    Without one, the skill folder itself (a lone skill shares nothing with anyone).
    """
    start = folder.resolve()
    for candidate in (start, *start.parents):
        if (candidate / ".git").exists():
            return candidate
    return start


#: Folders a repository walk never enters (tooling, caches, virtual environments).
WALK_SKIP_DIRS = IGNORED_NAMES | {"node_modules", ".venv", "venv", ".tox", ".mypy_cache", ".ruff_cache"}
#: How deep a repository walk looks: plugin marketplaces keep skills at
#: ``plugins/<plugin>/skills/<skill>/``, openai/skills at ``skills/.curated/<skill>/``.
WALK_MAX_DEPTH = 8


def walk_tree(
    root: str | Path, max_depth: int = WALK_MAX_DEPTH, classify: Callable[[Path], str | None] | None = None
) -> list[tuple[str, Path]]:
    """``(kind, folder)`` for every skill (kind ``"skill"``) under ``root``, sorted by path.

    The one walker behind ``skills list``, ``check``, ``push`` and ``install``: plugin
    and marketplace layouts, hidden collections (``.curated/``, ``.claude/skills/``) and
    nested folders are found alike. ``classify`` may name other kinds (``check`` finds
    kernel projects with it); a found item's own subfolders are not searched. Symlinked
    folders are not entered, so a link loop cannot hold the walk.
    """
    root = Path(root)
    found: list[tuple[str, Path]] = []
    base_depth = len(root.parts)
    for dirpath, dirnames, _ in os.walk(root, followlinks=False):
        here = Path(dirpath)
        kind = classify(here) if classify is not None else None
        if kind is None and skill_md_name(here) is not None:
            kind = "skill"
        if kind is not None:
            found.append((kind, here))
            dirnames[:] = []
            continue
        if len(here.parts) - base_depth >= max_depth:
            dirnames[:] = []
            continue
        dirnames[:] = sorted(d for d in dirnames if d not in WALK_SKIP_DIRS and not (here / d).is_symlink())
    return sorted(found, key=lambda item: item[1].as_posix())


def find_skills(root: str | Path, depth: int = WALK_MAX_DEPTH) -> list[Path]:
    """Skill folders at or under ``root`` (folders holding a SKILL.md or skill.md).

    A folder without a SKILL.md is searched as a collection, ``depth`` levels down, hidden
    ones included: published collections keep skills in ``.curated/`` or ``.system/``,
    plugin repositories in ``plugins/<plugin>/skills/``. A skill folder's own subfolders
    are not searched. Same-named skills in different folders are all returned.
    """
    return [folder for kind, folder in walk_tree(root, depth) if kind == "skill"]


def skills_in(source: str | Path, names: list[str] | None = None) -> list[Skill]:
    """The skills a local SOURCE stands for: itself when it holds a SKILL.md, else every
    skill the repository walk finds under it (``names`` picks some, by name or by path).

    ``install`` and ``push`` use this, so they find what ``skills list`` lists. Their
    targets are keyed by name, so two skills of the same name in different folders are
    an error that names both folders (pick one by its path).
    """
    root = Path(source)
    if not root.is_dir() or skill_md_name(root) is not None:
        skill = require_skill(root)
        if names and skill.name not in names:
            raise UpskillError(f"{root} holds the skill {skill.name!r}, not {', '.join(names)}")
        return [skill]
    folders = find_skills(root)
    if not folders:
        raise UpskillError(f"{root}: no skills found (no SKILL.md in it or its subfolders)")
    rel = {f: f.relative_to(root).as_posix() for f in folders}
    if names:
        picked = []
        for want in names:
            hits = [f for f in folders if rel[f] == want.strip("/")] or [
                f for f in folders if f.name == want or _frontmatter_name(f) == want
            ]
            if not hits:
                raise UpskillError(f"{root}: no skill named {want!r} (see `upskill-hub skills list {root}`)")
            picked += [h for h in hits if h not in picked]
        folders = picked
    skills = [require_skill(f) for f in folders]
    seen: dict[str, Path] = {}
    for f, s in zip(folders, skills, strict=True):
        if s.name in seen:
            raise UpskillError(
                f"two skills named {s.name!r}: {rel[seen[s.name]]} and {rel[f]}; pick one by its path (--skill PATH)"
            )
        seen[s.name] = f
    return skills


def _frontmatter_name(folder: Path) -> str | None:
    res = load_skill(folder)
    return res.skill.name if res.skill is not None else None


def catalog_read_warnings(skill: Skill, shown: str) -> list[Problem]:
    """A warning per text file a model could not read in catalog mode, being too big.

    Such a file passes every other check (``UPSKILL_MAX_FILE_MB`` is 50 MB) but
    ``read_skill_file`` refuses it to the model, which answers without it: say so before a run.
    Binary files are left out (the model is never served them, whatever their size).
    """
    cap = limits.SKILL_FILE_MAX_BYTES
    out = []
    for rel, data in sorted(skill.without_tests().files.items()):
        if rel == SKILL_FILE or len(data) <= cap or b"\0" in data:
            continue
        size, limit = size_and_limit(len(data), cap)
        out.append(
            Problem(
                shown, rel,
                f"is {size}; in catalog mode the model is refused files over {limit} "
                "(raise UPSKILL_SKILL_FILE_MAX_BYTES to allow more)",
                "warning",
            )
        )  # fmt: skip
    return out
