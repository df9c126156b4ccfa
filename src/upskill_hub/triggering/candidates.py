"""A candidate description: ``--description TEXT|@FILE`` read and checked, and the skill as it
would be with it, in memory only (``triggers`` scores it, ``tune`` seeds its loop with it;
SKILL.md is never touched)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from upskill_hub._util.fsutil import BIDI_CONTROLS, FileRefused, read_text_capped
from upskill_hub._util.sizes import exact_size
from upskill_hub.descriptions import check_description, replace_description
from upskill_hub.errors import OptionError, PathError, UpskillError
from upskill_hub.skill import SKILL_FILE, Skill, render_skill_md
from upskill_hub.skill.model import SKILL_FILE_LOWER

#: Largest ``--description @FILE`` read (bytes): a description is at most 1,024 characters.
MAX_DESCRIPTION_FILE_BYTES = 64_000


def check_candidate_description(text: str, where: str = "--description") -> str:
    """``text`` as a description the spec allows (1 to 1,024 characters, no control or direction
    characters), else one :class:`UpskillError` line naming ``where`` it came from."""
    for c in text:  # first, so that the error names the character
        o = ord(c)
        if c not in "\n\t" and (o < 0x20 or 0x7F <= o <= 0x9F or c in BIDI_CONTROLS):
            raise UpskillError(f"{where}: the description holds the control character U+{o:04X}")
    try:
        check_description(text)
    except UpskillError as exc:
        raise UpskillError(f"{where}: {exc}") from None
    return text


def read_description_arg(value: str) -> tuple[str, str]:
    """``--description TEXT|@FILE`` as ``(description, source)``: the text itself (source
    ``"--description"``; ``@@text`` is the literal ``@text``), or the text of FILE read with
    the bounded reader (no FIFO, device or file over :data:`MAX_DESCRIPTION_FILE_BYTES`;
    UTF-8), its surrounding blank space stripped (source: the path). Either is checked as a
    description. ``triggers`` and ``tune`` both read their option here."""
    if value.startswith("@@"):
        return check_candidate_description(value[1:].strip()), "--description"
    if not value.startswith("@"):
        return check_candidate_description(value.strip()), "--description"
    path = Path(value[1:])
    if not value[1:].strip():
        raise OptionError("description", value, "names no file after '@' (use @FILE)")
    try:
        text = read_text_capped(path, MAX_DESCRIPTION_FILE_BYTES)
    except FileRefused as exc:
        problem = exc.problem
        if "files over" in problem:
            problem = f"{problem.split(';')[0]}; description files over {exact_size(MAX_DESCRIPTION_FILE_BYTES)} are not read"
        raise PathError(path, problem, kind="description file") from None
    return check_candidate_description(text.removeprefix("\ufeff").strip(), f"description file {path}"), str(path)


def candidate_skill(skill: Skill, description: str) -> Skill:
    """``skill`` as it would be with ``description`` (in memory only; nothing is written).

    Its SKILL.md bytes are those :func:`replace_description` would write, so its version is
    the version the skill would have with that description; the folder on disk is untouched.
    """
    check_candidate_description(description)
    key = SKILL_FILE if SKILL_FILE in skill.files else SKILL_FILE_LOWER if SKILL_FILE_LOWER in skill.files else None
    fm = {**skill.frontmatter, "description": description}
    try:
        text = skill.files[key].decode("utf-8") if key else render_skill_md(skill.frontmatter, skill.body)
        new = replace_description(text, description)
    except (UnicodeDecodeError, UpskillError, ValueError):
        new = render_skill_md(fm, skill.body)
    files = {**skill.files, key or SKILL_FILE: new.encode("utf-8")}
    return dataclasses.replace(skill, description=description, frontmatter=fm, files=files)
