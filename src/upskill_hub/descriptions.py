"""A skill's description: rewrite it in place, and the checks a machine can make of it.

The description is the only text an agent reads before deciding to load a skill, so two
things are worth doing with it outside an eval:

* :func:`replace_description` swaps the frontmatter's ``description`` value and leaves
  every other byte of ``SKILL.md`` as it was (comments, key order, quoting, line endings,
  a byte-order mark): ``tune --write`` must not reformat a file the user wrote by hand.
  The value's span comes from the YAML parser's own marks, so any scalar style (plain,
  quoted, folded, literal, over several lines) is found exactly.
* :func:`description_warnings` and :func:`near_duplicates` flag what the anchors' guidance
  (Anthropic's skill-creator, the Agent Skills spec) warns about and a machine can check:
  a description that says what the skill does but not when to use it, and skills in one
  library whose descriptions say nearly the same thing (they steal each other's queries).
"""

from __future__ import annotations

import json
import re
from itertools import combinations
from pathlib import Path

import yaml

from upskill_hub._util import safeyaml
from upskill_hub._util.problems import Problem
from upskill_hub.errors import UpskillError
from upskill_hub.skill import DESCRIPTION_MAX, SKILL_FILE, parse_frontmatter

#: Phrases that tell an agent *when* to load a skill ("Use when ...", "... if the user asks").
WHEN_RE = re.compile(
    r"\b(when|whenever|if|before|after|while)\b|\buse (it |this |this skill )?(for|to|on|with)\b"
    r"|\b(triggers?|invoke|for tasks|for requests|for questions)\b",
    re.IGNORECASE,
)
#: Two descriptions sharing this share of their content words are near-duplicates.
NEAR_DUPLICATE_JACCARD = 0.6
_STOPWORDS = frozenset(
    ["a", "an", "and", "any", "are", "as", "at", "be", "by", "for", "from", "how", "in", "into", "is", "it", "its", "of", "on", "or", "that", "the", "this", "to", "use", "used", "uses", "using", "when", "whenever", "with", "you", "your", "skill", "skills"]
)
_WORD_RE = re.compile(r"[a-z0-9][a-z0-9+#.-]*")


# --------------------------------------------------------------------------- rewriting
def check_description(text: str) -> str:
    """``text`` when it is a spec-valid description, else :class:`UpskillError` saying why."""
    if not isinstance(text, str) or not text.strip():
        raise UpskillError("the description is empty")
    if len(text) > DESCRIPTION_MAX:
        raise UpskillError(f"the description is {len(text)} characters; the spec allows {DESCRIPTION_MAX}")
    if "\x00" in text or any(ord(c) < 32 and c not in "\n\t" for c in text):
        raise UpskillError("the description holds control characters")
    return text


def _frontmatter_span(text: str) -> tuple[int, int]:
    """Character offsets of the frontmatter YAML inside ``text`` (between the ``---`` lines)."""
    start = 1 if text.startswith("\ufeff") else 0
    lines = text[start:].splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n").rstrip() != "---":
        raise UpskillError("SKILL.md has no frontmatter (it must start with a '---' line)")
    pos = start + len(lines[0])
    begin = pos
    for line in lines[1:]:
        if line.rstrip("\r\n").rstrip() == "---":
            return begin, pos
        pos += len(line)
    raise UpskillError("SKILL.md's frontmatter has no closing '---' line")


def _description_node(raw: str) -> yaml.ScalarNode:
    """The ``description`` value's node in the frontmatter YAML ``raw`` (marks index ``raw``)."""
    if len(raw) > safeyaml.MAX_CHARS:
        raise UpskillError("SKILL.md's frontmatter is too long to rewrite")
    try:
        node = yaml.compose(raw, Loader=safeyaml.DepthLimitedLoader)
    except yaml.YAMLError as exc:
        raise UpskillError(f"SKILL.md's frontmatter is not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(node, yaml.MappingNode):
        raise UpskillError("SKILL.md's frontmatter is not a mapping of keys")
    found = [v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == "description"]
    if len(found) != 1 or not isinstance(found[0], yaml.ScalarNode):
        raise UpskillError("SKILL.md's frontmatter needs exactly one text 'description' to rewrite")
    return found[0]


def _quoted(text: str) -> str:
    """``text`` as a YAML double-quoted scalar on one line (JSON's escapes are YAML's too)."""
    return json.dumps(text, ensure_ascii=False)


def replace_description(skill_md: str, description: str) -> str:
    """``skill_md`` with only its frontmatter description replaced by ``description``.

    The old value's characters (from its first to its last, as the YAML parser marks them)
    become one double-quoted line; the line breaks that ended a block scalar are kept, so
    the next key stays where it was. Everything before and after is untouched, and the
    result is parsed back to check that the description, and nothing else, changed.
    """
    check_description(description)
    begin, end = _frontmatter_span(skill_md)
    raw = skill_md[begin:end]
    node = _description_node(raw)
    lo, hi = node.start_mark.index, node.end_mark.index
    old = raw[lo:hi]
    tail = old[len(old.rstrip("\r\n")) :] if node.style in ("|", ">") else ""
    new_raw = raw[:lo] + _quoted(description) + tail + raw[hi:]
    out = skill_md[:begin] + new_raw + skill_md[end:]
    before, body_before, _ = parse_frontmatter(skill_md)
    after, body_after, _ = parse_frontmatter(out)
    if after.get("description") != description or {k: v for k, v in after.items() if k != "description"} != {
        k: v for k, v in before.items() if k != "description"
    } or body_after != body_before:  # fmt: skip
        raise UpskillError("could not rewrite the description without changing anything else; edit SKILL.md by hand")
    return out


# --------------------------------------------------------------------------- checks
def description_warnings(description: str) -> list[str]:
    """What the guidance flags in one description (each a short sentence), or nothing."""
    out = []
    if description.strip() and not WHEN_RE.search(description):
        out.append(
            "says what the skill does but not when to use it: agents load a skill from its description "
            "alone, so add a clause such as 'Use when ...'"
        )
    return out


def content_words(text: str) -> frozenset[str]:
    """The lower-case words of ``text`` that carry meaning (no stop words)."""
    return frozenset(w.strip(".-") for w in _WORD_RE.findall(text.lower()) if w.strip(".-") not in _STOPWORDS)


def similarity(a: str, b: str) -> float:
    """Jaccard overlap of two descriptions' content words (0 = nothing shared, 1 = the same words)."""
    wa, wb = content_words(a), content_words(b)
    return len(wa & wb) / len(wa | wb) if wa | wb else 0.0


def near_duplicates(descriptions: dict[str, str], threshold: float = NEAR_DUPLICATE_JACCARD) -> list[tuple[str, str, float]]:
    """Pairs of skills (by name) whose descriptions overlap at least ``threshold``, most similar first."""
    pairs = [
        (a, b, similarity(descriptions[a], descriptions[b]))
        for a, b in combinations(sorted(descriptions), 2)
    ]
    return sorted((p for p in pairs if p[2] >= threshold), key=lambda p: (-p[2], p[0], p[1]))


def library_description_problems(skills: dict[str, tuple[str, str]]) -> dict[str, list[Problem]]:
    """Description warnings for skills validated together, keyed by their path.

    ``skills`` maps each path shown to ``(name, description)``. Each description is checked
    alone (:func:`description_warnings`) and against the others (:func:`near_duplicates`):
    skills given to one ``skills validate`` are one library, where an agent must tell them
    apart by their descriptions. Warnings only, like the other advice ``validate`` gives.
    """
    out: dict[str, list[Problem]] = {path: [] for path in skills}
    for path, (_, description) in skills.items():
        out[path] += [Problem(path, "description", msg, "warning") for msg in description_warnings(description)]
    by_name: dict[str, list[str]] = {}
    for path, (name, _) in skills.items():
        by_name.setdefault(name, []).append(path)
    described = {name: skills[paths[0]][1] for name, paths in by_name.items()}
    for a, b, score in near_duplicates(described):
        for me, other in ((a, b), (b, a)):
            for path in by_name[me]:
                out[path].append(
                    Problem(
                        path,
                        "description",
                        f"nearly the same as the description of {other!r} ({score:.0%} of the content words shared): "
                        "an agent cannot tell them apart, so one will take the other's queries",
                        "warning",
                    )
                )
    return out


def write_description(skill_dir: Path, description: str) -> bool:
    """Set the description in ``skill_dir/SKILL.md`` in place (see :func:`replace_description`).

    The file is rewritten atomically with its mode kept; ``False`` (nothing written) when
    it already holds exactly this description.
    """
    from upskill_hub._util.fsutil import write_bytes_atomic

    path = Path(skill_dir) / SKILL_FILE
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UpskillError(f"{path}: cannot be read as UTF-8 text ({exc})") from None
    new = replace_description(text, description)
    if new == text:
        return False
    write_bytes_atomic(path, new.encode("utf-8"), mode=path.stat().st_mode & 0o777)
    return True
