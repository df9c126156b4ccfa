"""``marketplace.json``: the skills index that ``hf skills`` and Claude Code marketplaces read.

Both read a JSON object with a top-level ``plugins`` list, each entry naming a skill
(``name``), the folder that holds it (``source``, relative to the repo root) and a
``description``. ``push`` writes one at the root of the dataset repo, listing every skill
in the repo, so other tools can install from it; :func:`load_from_index` installs from a
repo that has only this index and the skill folders (no ``skills`` table), as a plain
marketplace repo made by another tool has.

A repo is untrusted input: every name is checked like a skill name, every source must be a
safe relative path, and files are only taken from inside their source folder.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from upskill_hub import __version__
from upskill_hub._util import safejson
from upskill_hub._util.fsutil import check_relpath
from upskill_hub.errors import UpskillError
from upskill_hub.skill import Skill, load_skill, name_problem

MARKETPLACE_PATH = "marketplace.json"

#: Most entries an index may list, and most files one skill may have, before it is refused.
MAX_ENTRIES = 10_000
MAX_FILES_PER_SKILL = 2_000


def marketplace_document(repo_id: str, skill_rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The index of ``skill_rows`` (``skills`` table rows), sorted so a re-push is byte-identical."""
    owner, _, name = repo_id.partition("/")
    plugins = []
    for row in sorted(skill_rows, key=lambda r: str(r.get("name"))):
        entry = {
            "name": row["name"],
            "source": f"./skills/{row['name']}",
            "description": row.get("description") or "",
        }
        if row.get("version"):
            entry["version"] = row["version"]
        plugins.append(entry)
    return {
        "name": name,
        "owner": {"name": owner},
        "metadata": {"description": f"Agent skills from the Hugging Face dataset {repo_id}", "generator": f"upskill-hub {__version__}"},
        "plugins": plugins,
    }


def marketplace_bytes(repo_id: str, skill_rows: list[dict[str, Any]]) -> bytes:
    """:func:`marketplace_document` as the file ``push`` uploads."""
    doc = marketplace_document(repo_id, skill_rows)
    return (json.dumps(doc, indent=2, ensure_ascii=False, sort_keys=False) + "\n").encode("utf-8")


def parse_marketplace(data: bytes, repo_id: str) -> dict[str, str]:
    """Skill name -> source folder (normalised, no ``./``) from an index, checked."""

    def refuse(why: str) -> UpskillError:
        return UpskillError(f"refusing {MARKETPLACE_PATH} of {repo_id}: {why}; nothing was written")

    try:
        doc = safejson.loads(data.decode("utf-8"))  # a repo's file: bounded nesting
    except (UnicodeDecodeError, ValueError) as exc:  # JSONDecodeError or JSONTooDeep
        raise refuse(f"not JSON ({type(exc).__name__})") from None
    plugins = doc.get("plugins") if isinstance(doc, dict) else None
    if not isinstance(plugins, list):
        raise refuse("no top-level 'plugins' list")
    if len(plugins) > MAX_ENTRIES:
        raise refuse(f"more than {MAX_ENTRIES} entries")
    out: dict[str, str] = {}
    for p in plugins:
        if not isinstance(p, dict) or not isinstance(p.get("name"), str) or not isinstance(p.get("source"), str):
            continue  # entries of other kinds (plugins with object sources) are not skills we can fetch
        name, source = p["name"], p["source"].strip()
        why = name_problem(name)
        if why:
            raise refuse(f"an entry's name {why}")
        while source.startswith("./"):
            source = source[2:]
        source = source.strip("/")
        if not source:
            raise refuse(f"skill {name!r} has an empty source")
        try:
            check_relpath(source)
        except UpskillError as exc:
            raise refuse(f"skill {name!r} has an {exc}") from None
        if name in out:
            raise refuse(f"skill {name!r} is listed twice")
        out[name] = source
    return out


def load_from_index(
    api: Any, repo_id: str, head: str | None, names: list[str] | None, tree: dict[str, Any]
) -> list[Skill]:
    """Skills named in the repo's ``marketplace.json`` (all when ``names`` is None).

    ``tree`` maps every path of the repo at ``head`` to its ``RepoFile`` (``None`` for
    entries that are neither files nor folders, which are refused).
    """
    from upskill_hub.hub.client import REPO_TYPE

    local = api.hf_hub_download(repo_id, MARKETPLACE_PATH, repo_type=REPO_TYPE, revision=head)
    index = parse_marketplace(Path(local).read_bytes(), repo_id)
    available = sorted(index)
    wanted = list(dict.fromkeys(names)) if names else available
    unknown = [n for n in wanted if n not in index]
    if unknown:
        raise UpskillError(f"no skill named {unknown[0]!r} in {repo_id}; available: {', '.join(available) or '(none)'}")
    skills = []
    for name in wanted:
        prefix = index[name] + "/"
        entries = {p[len(prefix) :]: e for p, e in tree.items() if p.startswith(prefix)}
        if any(e is None for e in entries.values()):
            raise UpskillError(f"refusing skill {name!r} from {repo_id}: {prefix} holds something that is not a file")
        if "SKILL.md" not in entries:
            raise UpskillError(f"refusing skill {name!r} from {repo_id}: no {prefix}SKILL.md")
        if len(entries) > MAX_FILES_PER_SKILL:
            raise UpskillError(f"refusing skill {name!r} from {repo_id}: more than {MAX_FILES_PER_SKILL} files")
        with tempfile.TemporaryDirectory(prefix="upskill-index-") as tmp:
            folder = Path(tmp) / name
            for rel in sorted(entries):
                check_relpath(rel)
                data = Path(api.hf_hub_download(repo_id, prefix + rel, repo_type=REPO_TYPE, revision=head)).read_bytes()
                if len(data) != entries[rel].size:
                    raise UpskillError(f"refusing skill {name!r} from {repo_id}: {prefix + rel} does not have its listed size")
                target = folder / rel
                try:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
                except OSError as exc:  # a name this file system cannot hold: refuse, do not crash
                    raise UpskillError(f"refusing skill {name!r} from {repo_id}: {exc.strerror}") from None
            res = load_skill(folder)
            if res.skill is None or not res.ok:
                first = res.problems[0] if res.problems else "unreadable"
                raise UpskillError(f"refusing skill {name!r} from {repo_id}: {first}")
            if res.skill.name != name:
                raise UpskillError(f"refusing skill {name!r} from {repo_id}: its SKILL.md names {res.skill.name!r}")
            res.skill.path = None
            res.skill.modes = {}  # the temporary folder's modes say nothing about the Hub copy
            skills.append(res.skill)
    return skills
