"""SKILL.md's frontmatter: parsed within bounds, rendered back, checked against the spec.

It works on text alone (the Space and the teacher prompts check a SKILL.md that is not on
disk), so it stands below the :class:`Skill` type and the folder loader that use it.
"""

from __future__ import annotations

import datetime
import unicodedata
from typing import Any

import yaml

from upskill_hub._util import fsutil, limits, safeyaml
from upskill_hub._util.printable import text_problem
from upskill_hub._util.problems import Problem
from upskill_hub.cases.schema import FieldError
from upskill_hub.errors import UpskillError

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


class FrontmatterError(FieldError, UpskillError):
    """SKILL.md whose frontmatter cannot be read.

    An :class:`UpskillError` too: one raised past the loader (``tune --write`` parsing the
    rewritten SKILL.md back) is printed as one ``Error:`` line, never a traceback.
    ``field`` and ``message`` keep :class:`FieldError`'s meaning (the message without the field).
    """

    def __init__(self, field: str, message: str) -> None:
        FieldError.__init__(self, field, message)

    def describe(self) -> str:
        return f"{self.field}: {self.message}"


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


def _yaml_problem(exc: yaml.YAMLError, raw: str) -> str:
    """What is wrong with frontmatter YAML that did not parse, at which line of SKILL.md."""
    if isinstance(exc, safeyaml.YAMLLimitError):
        return str(exc)
    if isinstance(exc, yaml.constructor.ConstructorError):
        tag = getattr(exc, "problem", "") or "unsupported tag"
        return f"YAML tag not allowed ({tag.strip()})"
    if isinstance(exc, yaml.reader.ReaderError):  # a character YAML does not allow (NUL, other controls)
        ch = exc.character if isinstance(exc.character, str) else chr(exc.character)
        line = raw.count("\n", 0, exc.position) + 2  # +1 for 1-based, +1 for the opening '---'
        return f"invalid YAML at line {line}: character U+{ord(ch):04X} is not allowed in YAML"
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 2}" if mark is not None else ""
    return f"invalid YAML{where}: {getattr(exc, 'problem', None) or type(exc).__name__}"


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
    try:
        data, node = _load_yaml(raw) if raw.strip() else (None, None)
    except yaml.YAMLError as exc:
        raise FrontmatterError("frontmatter", _yaml_problem(exc, raw)) from None
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


def check_frontmatter(
    fm: dict[str, Any], folder_name: str | None, where: str, strict: bool, raw: dict[str, Any] | None = None
) -> list[Problem]:
    """Every way ``fm`` breaks the spec: its required keys, its free text, then its optional keys."""
    check = _FrontmatterCheck(fm, where, strict, raw or {})
    check.name(folder_name)
    check.string("description", required=True, empty="must not be empty", most=DESCRIPTION_MAX)
    check.free_text()
    check.string("license")
    check.string("compatibility", most=COMPATIBILITY_MAX)
    check.metadata()
    check.allowed_tools()
    check.other_keys()
    return check.problems


class _FrontmatterCheck:
    """The problems of one frontmatter, found one key at a time (the steps of :func:`check_frontmatter`)."""

    def __init__(self, fm: dict[str, Any], where: str, strict: bool, raw: dict[str, Any]) -> None:
        self.fm, self.where, self.strict, self.raw = fm, where, strict, raw
        self.problems: list[Problem] = []

    def err(self, fld: str, msg: str, severity: str = "error") -> None:
        self.problems.append(Problem(self.where, fld, msg, severity))

    def not_string(self, key: str) -> str:
        text = self.raw.get(key)
        hint = _quote_hint(key, self.fm.get(key), text if isinstance(text, str) else None)
        return f"must be a string ({hint})" if hint else "must be a string"

    def string(
        self, key: str, *, required: bool = False, empty: str = "must be a non-empty string", most: int = 0
    ) -> None:
        """A key whose value is text: present when required, a string, not blank, at most ``most`` long."""
        value = self.fm.get(key)
        if key not in self.fm:
            if required:
                self.err(key, "missing (required)")
        elif not isinstance(value, str):
            self.err(key, self.not_string(key))
        elif not value.strip():
            self.err(key, empty)
        elif most and len(value) > most:
            self.err(key, f"is {len(value)} characters; at most {most} allowed")

    def name(self, folder_name: str | None) -> None:
        """Required, a valid name, and the name of the folder it is in."""
        name = self.fm.get("name")
        if "name" not in self.fm:
            self.err("name", "missing (required)")
        elif not isinstance(name, str):
            self.err("name", self.not_string("name"))
        elif why := name_problem(name):
            self.err("name", why)
        elif folder_name is not None and normalize_name(name) != unicodedata.normalize("NFKC", folder_name):
            self.err("name", f"{name!r} does not match its folder name {folder_name!r}")

    def free_text(self) -> None:
        """Free text is printed by `skills list/show` and pasted into prompts: no terminal controls."""
        for key in ("description", "license", "compatibility", "allowed-tools"):
            value = self.fm.get(key)
            texts = [value] if isinstance(value, str) else value if isinstance(value, list) else []
            why = next((w for w in (text_problem(t) for t in texts if isinstance(t, str)) if w), None)
            if why:
                self.err(key, why)

    def metadata(self) -> None:
        """A mapping of string keys to string values (a list value is only a warning when lenient)."""
        if "metadata" not in self.fm:
            return
        md = self.fm["metadata"]
        if not isinstance(md, dict):
            self.err("metadata", "must be a mapping of string keys to string values")
            return
        raw_md = dict(p for p in self.raw.get("metadata", []) if p[0] is not None)
        for k, v in md.items():
            if (
                isinstance(k, str)
                and isinstance(v, list)
                and all(isinstance(x, (str, int, float)) for x in v)
            ):
                # Real skills write `tags: [a, b]`; the spec wants a string. Lenient: a warning.
                self.err(f"metadata.{k}", _list_advice(k, v), "error" if self.strict else "warning")
                continue
            if not isinstance(k, str) or not isinstance(v, str):
                hint = _quote_hint(str(k), v, raw_md.get(str(k)))
                self.err(
                    "metadata", f"entry {k!r}: {v!r} is not string -> string ({hint or 'quote the value'})"
                )
                break
            why = text_problem(k) or text_problem(v)
            if why:
                self.err(f"metadata.{fsutil.shown_path(k)}", why)

    def allowed_tools(self) -> None:
        if "allowed-tools" in self.fm:
            at = self.fm["allowed-tools"]
            if not (
                (isinstance(at, str) and at.strip())
                or (isinstance(at, list) and at and all(isinstance(t, str) and t for t in at))
            ):
                self.err("allowed-tools", "must be a space-separated string (or a list) of tool names")

    def other_keys(self) -> None:
        """Keys the spec does not define: a warning when lenient, an error under ``strict``."""
        for key in self.fm:
            if key in SPEC_KEYS:
                continue
            note = "not in the Agent Skills spec"
            if key in KNOWN_EXTENSION_KEYS:
                note += " (a client extension)"
            value = self.fm[key]
            if isinstance(value, list):
                # `argument-hint: [file]` is a YAML list; most authors meant the text.
                shown = "[" + ", ".join(str(x) for x in value) + "]"
                note += f'; YAML reads it as the list {value!r}: if you meant the text, quote it: {key}: "{shown}"'
            self.err(str(key), note, "error" if self.strict else "warning")


def check_body(body: str, where: str, strict: bool) -> list[Problem]:
    """The instructions after the frontmatter: present, not overlong, without terminal controls."""
    problems: list[Problem] = []
    if not body.strip():
        problems.append(
            Problem(where, "body", "SKILL.md has no instructions after the frontmatter", "warning")
        )
    elif body.count("\n") + 1 > BODY_LINES_SOFT_MAX:
        problems.append(
            Problem(
                where, "body", f"over {BODY_LINES_SOFT_MAX} lines; move detail into references/", "warning"
            )
        )
    if why := text_problem(body):
        problems.append(Problem(where, "body", why, "error" if strict else "warning"))
    return problems
