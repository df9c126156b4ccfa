"""The skill model: load, validate and write an Agent Skills folder.

A skill is a folder ``<name>/`` with ``SKILL.md`` (YAML frontmatter + Markdown body) and
optionally ``skill_meta.json`` (our metadata and test cases), ``references/``, ``scripts/``
and ``assets/``. The rules checked here are those of the Agent Skills spec as its reference
validator (``skills-ref``) reads them: names are NFKC-normalised Unicode letters, digits and
hyphens, a lowercase ``skill.md`` is accepted, and duplicate frontmatter keys are an error
(its strict YAML parser refuses them; PyYAML would silently keep the last). That validator
reads every value as a string; PyYAML types ``1.0`` as a float, so in lenient mode such
scalars are read back as the text that was written, with a warning to quote them. A skill's
*version* is a hash of its files' contents, so an eval result always names the exact bytes
it measured.

Validation never raises for a bad skill: it returns :class:`Problem` s, one per thing that
is wrong, each naming the file and the field, so the CLI can print one line per problem.
"""

from __future__ import annotations

import codecs
import datetime
import hashlib
import os
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from upskill_hub._util import fsutil, limits, safeyaml
from upskill_hub._util.printable import text_problem
from upskill_hub._util.problems import Problem
from upskill_hub.cases import CasesError, SkillMeta, load_meta_text

SKILL_FILE = "SKILL.md"
#: Also accepted (the reference validator looks for it after SKILL.md), with a warning.
SKILL_FILE_LOWER = "skill.md"
META_FILE = "skill_meta.json"
#: A UTF-8 byte-order mark before the first ``---``: read here, refused by loaders that look
#: for ``---`` at byte 0. Agents named from their bug trackers (2026): crewAI #7538,
#: AgentScope #2732, DeerFlow #5587 open; Mistral Vibe, Cline, fastmcp and Hermes fixed it
#: in 2026 releases, so older versions of those skip the skill too.
BOM_WARNING = (
    "starts with a UTF-8 byte-order mark (BOM): read here, but crewAI, AgentScope and DeerFlow "
    "(and Mistral Vibe, Cline, fastmcp, Hermes before their 2026 fixes) fail to parse or silently skip "
    "such a skill; save the file as UTF-8 without BOM"
)
#: Where the agentskills.io evaluation guide keeps a skill's evals (read when there is no META_FILE).
EVALS_DIR = "evals"
EVALS_FILE = f"{EVALS_DIR}/evals.json"
RESOURCE_DIRS = ("references", "scripts", "assets")

NAME_MAX = 64
DESCRIPTION_MAX = 1024
COMPATIBILITY_MAX = 500
#: Frontmatter values that must be strings (``metadata`` values are checked too).
STRING_KEYS = ("name", "description", "license", "compatibility")
#: YAML scalars PyYAML types but the spec (and strictyaml) reads as the written text.
_COERCIBLE = (bool, int, float, datetime.date)

#: Keys the Agent Skills spec defines.
SPEC_KEYS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
#: Keys real tools add (Claude Code, ...): accepted with a warning, rejected under ``strict``.
KNOWN_EXTENSION_KEYS = (
    "disable-model-invocation",
    "user-invocable",
    "argument-hint",
    "model",
    "context",
    "agent",
    "hooks",
    "version",
)
#: Names never part of a skill's content (editor/OS litter, caches, and the markers that
#: upskill-hub and ``hf skills`` leave in managed installs).
IGNORED_NAMES = {
    ".DS_Store",
    "__pycache__",
    ".git",
    ".ipynb_checkpoints",
    "Thumbs.db",
    ".upskill-hub-install.json",
    ".hf-skill-manifest.json",
}

#: Permission bits written when the source gives none (a Hub download, a generated skill).
DIR_MODE = 0o755
FILE_MODE = 0o644
EXEC_MODE = 0o755

#: Body length the spec recommends staying under.
BODY_LINES_SOFT_MAX = 500


def normalize_name(name: str) -> str:
    """The form names are compared in: NFKC, surrounding spaces removed (as skills-ref does)."""
    return unicodedata.normalize("NFKC", name.strip())


def name_problem(name: Any) -> str | None:
    """Why ``name`` is not a valid skill name, or ``None`` when it is.

    Letters of any script are allowed (``café``, ``数据-分析``), after NFKC normalisation,
    like the reference validator; so are digits and single inner hyphens.
    """
    if not isinstance(name, str):
        return "must be a string"
    name = normalize_name(name)
    if not name:
        return "must not be empty"
    if len(name) > NAME_MAX:
        return f"is {len(name)} characters; at most {NAME_MAX} allowed"
    if name != name.lower():
        return f"{name!r} has capitals; use lowercase letters, digits and '-'"
    if name.startswith("-") or name.endswith("-"):
        return f"{name!r} must not start or end with '-'"
    if "--" in name:
        return f"{name!r} must not contain '--'"
    if not all(c.isalnum() or c == "-" for c in name):
        return f"{name!r} may only contain lowercase letters, digits and '-'"
    return None


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate (about 4 characters per token for English prose and code)."""
    return (len(text) + 3) // 4


class FrontmatterError(ValueError):
    """SKILL.md whose frontmatter cannot be read."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class _UniqueKeyLoader(safeyaml.DepthLimitedLoader):
    """PyYAML's safe loader within :mod:`upskill_hub._util.safeyaml`'s depth limit, refusing a
    mapping that repeats a key."""


def _construct_unique_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in seen
            seen.add(key)
        except TypeError:  # unhashable key: construct_mapping reports it
            continue
        if duplicate:
            raise FrontmatterError(
                "frontmatter",
                f"duplicate key {key!r} at line {key_node.start_mark.line + 2}: YAML would keep only the "
                "last value; remove one",
            )
    return loader.construct_mapping(node, deep=True)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping)


def _load_yaml(raw: str) -> tuple[Any, yaml.Node | None]:
    """Parse frontmatter YAML; return the data and the node tree (for the written text)."""
    # Bounded like safeyaml.load: an alias bomb or deep nesting is an error, not gigabytes.
    # Frontmatter is a few keys; PyYAML reads ~60 KB/s on a busy core, so a pasted 600 KB
    # frontmatter held a Space worker for 10 s. It gets its own, smaller cap.
    if len(raw) > limits.MAX_FRONTMATTER_CHARS:
        raise safeyaml.YAMLLimitError(
            f"frontmatter is {len(raw):,} characters; at most {limits.MAX_FRONTMATTER_CHARS:,} are read "
            "(UPSKILL_MAX_FRONTMATTER_KB); move long text into the body or references/"
        )
    loader = _UniqueKeyLoader(raw)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, None
        safeyaml.expanded_size(node, safeyaml.MAX_NODES)
        return loader.construct_document(node), node
    except RecursionError:
        raise safeyaml.YAMLLimitError("YAML nests too deep") from None
    finally:
        loader.dispose()


def raw_scalars(node: yaml.Node | None) -> dict[str, Any]:
    """The text written for each top-level scalar (and each ``metadata`` entry) of a mapping."""
    out: dict[str, Any] = {}
    if not isinstance(node, yaml.MappingNode):
        return out
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.ScalarNode):
            continue
        if isinstance(value_node, yaml.ScalarNode):
            out[key_node.value] = value_node.value
        elif key_node.value == "metadata" and isinstance(value_node, yaml.MappingNode):
            # In document order, like the constructed dict; None where not a scalar.
            out["metadata"] = [
                (
                    k.value if isinstance(k, yaml.ScalarNode) else None,
                    v.value if isinstance(v, yaml.ScalarNode) else None,
                )
                for k, v in value_node.value
            ]
    return out


def split_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """Split SKILL.md text into (frontmatter mapping, body).

    A UTF-8 BOM and CRLF line endings are accepted. YAML is parsed in safe mode, so tags
    such as ``!!python/object`` are refused rather than executed, and within the limits of
    :mod:`upskill_hub._util.safeyaml` (size, depth, alias expansion).
    """
    data, body, _ = parse_frontmatter(text)
    return data, body


def parse_frontmatter(text: str) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """Like :func:`split_frontmatter`, plus the text written for each scalar (see :func:`raw_scalars`)."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        raise FrontmatterError("frontmatter", "missing: SKILL.md must start with a '---' line")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].rstrip() == "---")
    except StopIteration:
        raise FrontmatterError("frontmatter", "unterminated: no closing '---' line") from None
    raw = "\n".join(lines[1:end])
    node = None
    try:
        data, node = _load_yaml(raw) if raw.strip() else (None, None)
    except safeyaml.YAMLLimitError as exc:
        raise FrontmatterError("frontmatter", str(exc)) from None
    except yaml.constructor.ConstructorError as exc:
        tag = getattr(exc, "problem", "") or "unsupported tag"
        raise FrontmatterError("frontmatter", f"YAML tag not allowed ({tag.strip()})") from None
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow (NUL, other controls)
        ch = exc.character if isinstance(exc.character, str) else chr(exc.character)
        line = raw.count("\n", 0, exc.position) + 2  # +1 for 1-based, +1 for the opening '---'
        raise FrontmatterError(
            "frontmatter", f"invalid YAML at line {line}: character U+{ord(ch):04X} is not allowed in YAML"
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise FrontmatterError("frontmatter", f"invalid YAML{where}: {problem}") from None
    if not isinstance(data, dict):
        kind = "empty" if data is None else type(data).__name__
        raise FrontmatterError("frontmatter", f"must be a YAML mapping of keys, got {kind}")
    body = "\n".join(lines[end + 1 :])
    return data, body, raw_scalars(node)


def render_skill_md(frontmatter: dict[str, Any], body: str) -> str:
    """SKILL.md text for a frontmatter mapping and body (deterministic: spec keys first)."""
    ordered = {k: frontmatter[k] for k in SPEC_KEYS if k in frontmatter}
    ordered.update({k: v for k, v in frontmatter.items() if k not in ordered})
    dumped = yaml.safe_dump(ordered, sort_keys=False, allow_unicode=True, width=100, default_flow_style=False)
    body = body if body.startswith("\n") else "\n" + body
    if not body.endswith("\n"):
        body += "\n"
    return f"---\n{dumped}---{body}"


def scan_skill(root: Path) -> tuple[list[fsutil.Entry], list[fsutil.Refusal]]:
    """The files of a skill folder and the entries refused (see :func:`fsutil.scan_tree`).

    Only regular files and folders are read: a FIFO, a device, a socket, a symlink loop or
    leaving the skill, a name that is not UTF-8 or carries controls or bidi overrides, and a
    file over ``UPSKILL_MAX_FILE_MB`` are each refused with one line naming the path.
    """
    files, refused = fsutil.scan_tree(root, ignore=IGNORED_NAMES)
    return [e for e in files if not e.rel.endswith(".pyc")], refused


def is_test_material(rel: str) -> bool:
    """Whether the skill file ``rel`` holds tests (cases, expected answers), not instructions."""
    return rel in (META_FILE, EVALS_DIR) or rel.startswith(EVALS_DIR + "/")


def content_hash(files: dict[str, bytes]) -> str:
    """The version of a skill: sha256 over its sorted (relative path, bytes) pairs."""
    h = hashlib.sha256()
    for rel in sorted(files):
        data = files[rel]
        h.update(rel.encode("utf-8") + b"\0" + str(len(data)).encode() + b"\0" + data)
    return h.hexdigest()


@dataclass
class Skill:
    """An Agent Skill in memory: what it says, the files it carries and its tests."""

    name: str
    description: str
    body: str
    frontmatter: dict[str, Any]
    #: Every file of the skill, by relative POSIX path, including SKILL.md itself.
    files: dict[str, bytes] = field(default_factory=dict)
    meta: SkillMeta = field(default_factory=SkillMeta)
    path: Path | None = None
    #: Permission bits found on disk, by relative path; folders under "dir/" keys ("" is the root).
    #: Empty for skills that did not come from a local folder.
    modes: dict[str, int] = field(default_factory=dict)

    # ----------------------------------------------------------------- derived facts
    @property
    def version(self) -> str:
        """Short content hash: what eval results are tied to."""
        return self.full_hash[:12]

    @property
    def full_hash(self) -> str:
        return content_hash(self.files)

    @property
    def token_estimate(self) -> int:
        """Tokens the skill adds to a prompt (the whole SKILL.md)."""
        return estimate_tokens(self.skill_md_text)

    @property
    def skill_md_text(self) -> str:
        data = self.files.get(SKILL_FILE, self.files.get(SKILL_FILE_LOWER))
        if data is None:
            return render_skill_md(self.frontmatter, self.body)
        return data.decode("utf-8-sig").replace("\r\n", "\n")

    @property
    def license(self) -> str | None:
        value = self.frontmatter.get("license")
        return value if isinstance(value, str) else None

    @property
    def metadata(self) -> dict[str, str]:
        value = self.frontmatter.get("metadata")
        return dict(value) if isinstance(value, dict) else {}

    def without_tests(self) -> Skill:
        """The skill as an agent under evaluation may see it: its test material left out.

        ``skill_meta.json`` and ``evals/`` hold the cases, their expected answers and trigger
        queries. An agent that could read them would be graded on answers it was handed, and
        only in the with-skill condition: catalog tools and harness installs serve this copy.
        """
        kept = {rel: data for rel, data in self.files.items() if not is_test_material(rel)}
        modes = {rel: m for rel, m in self.modes.items() if not is_test_material(rel.rstrip("/"))}
        return replace(self, files=kept, modes=modes)

    def resources(self) -> dict[str, list[str]]:
        """Files under references/, scripts/ and assets/ (relative paths)."""
        inv: dict[str, list[str]] = {d: [] for d in RESOURCE_DIRS}
        for rel in sorted(self.files):
            top = rel.split("/", 1)[0]
            if top in inv and "/" in rel:
                inv[top].append(rel)
        return inv

    def prompt_text(self) -> str:
        """The text injected into the system prompt for the with-skill condition."""
        return self.skill_md_text.strip() + "\n"

    def summary(self) -> dict[str, Any]:
        """A JSON-friendly description (for ``--json``, tables and the Hub ``skills`` config)."""
        return {
            "name": self.name,
            "description": self.description,
            "version": self.version,
            "license": self.license,
            "token_estimate": self.token_estimate,
            "body_lines": self.body.count("\n") + 1,
            "n_cases": len(self.meta.cases),
            "resources": self.resources(),
            "files": sorted(self.files),
        }

    # ----------------------------------------------------------------- construction
    @classmethod
    def create(
        cls,
        name: str,
        description: str,
        body: str,
        *,
        extra_frontmatter: dict[str, Any] | None = None,
        meta: SkillMeta | None = None,
        files: dict[str, bytes] | None = None,
    ) -> Skill:
        """Build a skill in memory (e.g. from a teacher model) with its SKILL.md rendered."""
        fm: dict[str, Any] = {"name": name, "description": description}
        fm.update(extra_frontmatter or {})
        text = render_skill_md(fm, body)
        _, parsed_body = split_frontmatter(text)
        all_files = dict(files or {})
        all_files[SKILL_FILE] = text.encode("utf-8")
        meta = meta or SkillMeta()
        if meta.cases or meta.triggers or META_FILE in all_files:
            all_files[META_FILE] = meta.to_json().encode("utf-8")
        return cls(
            name=name, description=description, body=parsed_body, frontmatter=fm, files=all_files, meta=meta
        )

    def file_mode(self, rel: str) -> int:
        """Mode to write ``rel`` with: the source's, else executable when it starts with ``#!``.

        Always owner-readable and -writable (so a later ``--force`` can replace it), never
        setuid/setgid/sticky.
        """
        mode = self.modes.get(rel)
        if mode is None:
            mode = EXEC_MODE if self.files.get(rel, b"").startswith(b"#!") else FILE_MODE
        return (mode & 0o777) | 0o600

    def dir_mode(self, rel_dir: str) -> int:
        """Mode for folder ``rel_dir`` ("" for the skill folder): the source's, else 0755."""
        mode = self.modes.get(f"{rel_dir}/" if rel_dir else "")
        return ((DIR_MODE if mode is None else mode) & 0o777) | 0o700

    def write_files(self, into: Path) -> None:
        """Write every file under ``into`` (an empty folder) with its mode, then fix folder modes.

        Executables stay executable and folders get 0755 unless the source said otherwise;
        without this, files follow the umask and the top folder the 0700 of ``mkdtemp``.
        """
        from upskill_hub._util.fsutil import check_relpath

        folders = {""}
        for rel, data in sorted(self.files.items()):
            check_relpath(rel)
            target = into / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            target.chmod(self.file_mode(rel))
            folders.update(_parent_dirs(rel))
        for rel_dir in sorted(folders, key=len, reverse=True):
            (into / rel_dir if rel_dir else into).chmod(self.dir_mode(rel_dir))

    def write(self, dest: str | Path, *, overwrite: bool = False) -> Path:
        """Write the skill to ``dest`` (the skill folder itself) atomically.

        Files go to a temporary sibling folder first, which is renamed into place, so a
        failure never leaves a half-written skill.
        """
        from upskill_hub._util.fsutil import atomic_replace_dir, check_relpath

        for rel in self.files:
            check_relpath(rel)
        dest = Path(dest)
        if dest.exists() and not overwrite:
            raise FileExistsError(f"{dest} already exists")

        atomic_replace_dir(dest, self.write_files)
        self.path = dest
        return dest


def _parent_dirs(rel: str) -> list[str]:
    """``a/b/c.txt`` -> ``["a", "a/b"]``."""
    parts = rel.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


@dataclass
class LoadResult:
    """A skill (when it could be read) and the problems found on the way."""

    skill: Skill | None
    problems: list[Problem]

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]

    @property
    def ok(self) -> bool:
        return self.skill is not None and not self.errors


def _list_advice(key: str, value: list[Any]) -> str:
    """How a list where the spec wants a string was read, and how to write it as a string."""
    joined = ", ".join(str(x) for x in value)
    return (
        f"YAML reads this as the list {value!r}; the spec wants a string here: "
        f'write {key}: "{joined}" (kept as a list when read leniently)'
    )


def _quote_hint(key: str, value: Any, text: str | None) -> str:
    """``YAML reads 1.0 as a float; quote it: version: "1.0"`` (empty when not a plain scalar)."""
    if text is None or not isinstance(value, _COERCIBLE):
        return ""
    kind = {bool: "a boolean", int: "a number", float: "a number"}.get(type(value), "a date")
    return f'YAML reads {text} as {kind}; quote it: {key}: "{text}"'


def coerce_scalars(fm: dict[str, Any], raw: dict[str, Any], where: str) -> list[Problem]:
    """Lenient mode: read numbers, booleans and dates where strings belong as the text written.

    ``metadata: {version: 1.0}`` then means the string ``"1.0"``, as the spec's own
    validator reads it. Each coercion is a warning with the quoting that makes it exact.
    """
    probs: list[Problem] = []
    for key in STRING_KEYS:
        value, text = fm.get(key), raw.get(key)
        if isinstance(value, _COERCIBLE) and isinstance(text, str):
            fm[key] = text
            probs.append(
                Problem(
                    where, key, f"read as the string {text!r}: {_quote_hint(key, value, text)}", "warning"
                )
            )
    md, raw_md = fm.get("metadata"), raw.get("metadata")
    if isinstance(md, dict) and isinstance(raw_md, list) and len(raw_md) == len(md):
        fixed: dict[Any, Any] = {}
        for (k, v), (k_text, v_text) in zip(md.items(), raw_md, strict=True):
            if isinstance(k, _COERCIBLE) and k_text is not None:
                probs.append(Problem(where, f"metadata.{k_text}", "key read as a string", "warning"))
                k = k_text
            if isinstance(v, _COERCIBLE) and v_text is not None:
                hint = _quote_hint(str(k), v, v_text)
                probs.append(
                    Problem(where, f"metadata.{k}", f"read as the string {v_text!r}: {hint}", "warning")
                )
                v = v_text
            fixed[k] = v
        fm["metadata"] = fixed
    return probs


def _check_frontmatter(
    fm: dict[str, Any], folder_name: str | None, where: str, strict: bool, raw: dict[str, Any] | None = None
) -> list[Problem]:
    probs: list[Problem] = []
    raw = raw or {}

    def err(fld: str, msg: str) -> None:
        probs.append(Problem(where, fld, msg))

    def not_string(key: str) -> str:
        hint = _quote_hint(key, fm.get(key), raw.get(key) if isinstance(raw.get(key), str) else None)
        return f"must be a string ({hint})" if hint else "must be a string"

    name = fm.get("name")
    if "name" not in fm:
        err("name", "missing (required)")
    elif not isinstance(name, str):
        err("name", not_string("name"))
    else:
        why = name_problem(name)
        if why:
            err("name", why)
        elif folder_name is not None and normalize_name(name) != unicodedata.normalize("NFKC", folder_name):
            err("name", f"{name!r} does not match its folder name {folder_name!r}")

    desc = fm.get("description")
    if "description" not in fm:
        err("description", "missing (required)")
    elif not isinstance(desc, str):
        err("description", not_string("description"))
    elif not desc.strip():
        err("description", "must not be empty")
    elif len(desc) > DESCRIPTION_MAX:
        err("description", f"is {len(desc)} characters; at most {DESCRIPTION_MAX} allowed")
    # Free text is printed by `skills list/show` and pasted into prompts: no terminal controls.
    for key in ("description", "license", "compatibility", "allowed-tools"):
        value = fm.get(key)
        texts = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        why = next((w for w in (text_problem(t) for t in texts if isinstance(t, str)) if w), None)
        if why:
            err(key, why)

    if "license" in fm and not (isinstance(fm["license"], str) and fm["license"].strip()):
        err(
            "license",
            not_string("license") if not isinstance(fm["license"], str) else "must be a non-empty string",
        )
    if "compatibility" in fm:
        comp = fm["compatibility"]
        if not isinstance(comp, str):
            err("compatibility", not_string("compatibility"))
        elif not comp.strip():
            err("compatibility", "must be a non-empty string")
        elif len(comp) > COMPATIBILITY_MAX:
            err("compatibility", f"is {len(comp)} characters; at most {COMPATIBILITY_MAX} allowed")
    if "metadata" in fm:
        md = fm["metadata"]
        if not isinstance(md, dict):
            err("metadata", "must be a mapping of string keys to string values")
        else:
            raw_md = dict(p for p in raw.get("metadata", []) if p[0] is not None)
            for k, v in md.items():
                if (
                    isinstance(k, str)
                    and isinstance(v, list)
                    and all(isinstance(x, (str, int, float)) for x in v)
                ):
                    # Real skills write `tags: [a, b]`; the spec wants a string. Lenient: a warning.
                    probs.append(
                        Problem(where, f"metadata.{k}", _list_advice(k, v), "error" if strict else "warning")
                    )
                    continue
                if not isinstance(k, str) or not isinstance(v, str):
                    hint = _quote_hint(str(k), v, raw_md.get(str(k)))
                    err(
                        "metadata",
                        f"entry {k!r}: {v!r} is not string -> string ({hint or 'quote the value'})",
                    )
                    break
                why = text_problem(k) or text_problem(v)
                if why:
                    err(f"metadata.{fsutil.shown_path(k)}", why)
    if "allowed-tools" in fm:
        at = fm["allowed-tools"]
        if not (
            (isinstance(at, str) and at.strip())
            or (isinstance(at, list) and at and all(isinstance(t, str) and t for t in at))
        ):
            err("allowed-tools", "must be a space-separated string (or a list) of tool names")

    for key in fm:
        if key in SPEC_KEYS:
            continue
        sev = "error" if strict else "warning"
        note = "not in the Agent Skills spec"
        if key in KNOWN_EXTENSION_KEYS:
            note += " (a client extension)"
        value = fm[key]
        if isinstance(value, list):
            # `argument-hint: [file]` is a YAML list; most authors meant the text.
            shown = "[" + ", ".join(str(x) for x in value) + "]"
            note += (
                f'; YAML reads it as the list {value!r}: if you meant the text, quote it: {key}: "{shown}"'
            )
        probs.append(Problem(where, str(key), note, sev))
    return probs


def load_skill(path: str | Path, *, strict: bool = False) -> LoadResult:
    """Read and validate the skill folder at ``path``; never raises for bad content."""
    root = Path(path)
    shown = str(path)
    if not root.exists():
        return LoadResult(None, [Problem(shown, "path", "does not exist")])
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
    files: dict[str, bytes] = {}
    modes: dict[str, int] = {"": root.stat().st_mode & 0o777}
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
            return LoadResult(None, problems)
        refused = [r for r in refused if r is not shared_md]
        st = os.stat(target)
        entries.append(fsutil.Entry(md_name, target, st.st_size, st.st_mode & 0o777, True))
    problems += [Problem(shown, fsutil.shown_path(r.rel), r.reason) for r in refused]
    for entry in entries:
        rel = entry.rel
        for rel_dir in _parent_dirs(rel):
            modes.setdefault(f"{rel_dir}/", (root / rel_dir).stat().st_mode & 0o777)
        try:
            files[rel] = fsutil.read_capped(entry.path)
            modes[rel] = entry.mode
        except fsutil.FileRefused as exc:
            problems.append(Problem(shown, rel, exc.problem))

    raw = files.get(md_name, b"")
    if raw.startswith(codecs.BOM_UTF8):
        problems.append(Problem(shown, md_name, BOM_WARNING, "warning"))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(
            Problem(shown, md_name, f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})")
        )
        return LoadResult(None, problems)
    try:
        fm, body, written = parse_frontmatter(text)
    except FrontmatterError as exc:
        problems.append(Problem(shown, exc.field, exc.message))
        return LoadResult(None, problems)

    if not strict:
        problems += coerce_scalars(fm, written, shown)
    problems += _check_frontmatter(fm, root.resolve().name, shown, strict, written)
    if not body.strip():
        problems.append(
            Problem(shown, "body", "SKILL.md has no instructions after the frontmatter", "warning")
        )
    elif body.count("\n") + 1 > BODY_LINES_SOFT_MAX:
        problems.append(
            Problem(
                shown, "body", f"over {BODY_LINES_SOFT_MAX} lines; move detail into references/", "warning"
            )
        )
    if why := text_problem(body):
        problems.append(Problem(shown, "body", why, "error" if strict else "warning"))

    meta = SkillMeta()
    if META_FILE in files:
        try:
            meta = load_meta_text(files[META_FILE], source=META_FILE)
        except CasesError as exc:
            fld = exc.field if exc.field.startswith(META_FILE) else f"{META_FILE}: {exc.field}"
            problems.append(Problem(shown, fld, exc.message))
    elif EVALS_FILE in files:
        # The agentskills.io convention: evals/evals.json, input files relative to the skill.
        try:
            meta = load_meta_text(files[EVALS_FILE], source=EVALS_FILE, base_dir=root)
        except CasesError as exc:
            problems.append(Problem(shown, f"{EVALS_FILE}: {exc.field}", exc.message))

    skill = Skill(
        name=fm.get("name") if isinstance(fm.get("name"), str) else root.name,
        description=fm.get("description") if isinstance(fm.get("description"), str) else "",
        body=body,
        frontmatter=fm,
        files=files,
        meta=meta,
        path=root,
        modes=modes,
    )
    return LoadResult(skill, problems)


def require_skill(path: str | Path, *, strict: bool = False) -> Skill:
    """Load a skill that must be valid; raise :class:`UpskillError` naming the first problem."""
    from upskill_hub.errors import UpskillError

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
    from upskill_hub.errors import UpskillError

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
