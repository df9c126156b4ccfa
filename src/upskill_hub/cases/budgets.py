"""What a tests file may make us read and hold: its budgets, and the input files it attaches.

Every dialect's parser shares this one set of limits (see SECURITY.md), each checked before
anything is parsed or read.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from upskill_hub._util import limits
from upskill_hub._util.fsutil import FileRefused, read_capped
from upskill_hub.cases.schema import CasesError, checked_relpath, file_block

# Budgets for what a tests file may make us read and hold (see SECURITY.md). Each is an
# environment variable; a typo or a non-positive value keeps the default.
#: Largest input file an evals.json entry may attach to its prompt (``UPSKILL_EVAL_FILE_MAX_KB``).
EVAL_FILE_MAX_BYTES = int(limits.env_number("UPSKILL_EVAL_FILE_MAX_KB", 256) * 1024)
#: Bytes of input files one case may attach in all, each distinct file counted once
#: (``UPSKILL_CASE_ATTACH_MAX_KB``).
CASE_ATTACH_MAX_BYTES = int(limits.env_number("UPSKILL_CASE_ATTACH_MAX_KB", 1024) * 1024)
#: Bytes of input files all cases of one tests file may attach together; every case holds
#: its own prompt, so a file shared by many cases counts once per case
#: (``UPSKILL_CASES_ATTACH_MAX_MB``).
CASES_ATTACH_MAX_BYTES = int(limits.env_number("UPSKILL_CASES_ATTACH_MAX_MB", 16) * 1024 * 1024)
#: Files one case may list (evals.json ``files``, a workspace's ``files``, upskill's
#: ``context.files``; ``UPSKILL_CASE_MAX_FILES``).
CASE_MAX_FILES = limits.env_int("UPSKILL_CASE_MAX_FILES", 64)
#: Cases (or evals.json entries) one tests file may hold (``UPSKILL_MAX_CASES``).
MAX_CASES = limits.env_int("UPSKILL_MAX_CASES", 10_000)


def check_case_count(n: int, where: str) -> None:
    """Refuse a tests file with more than :data:`MAX_CASES` cases, before any is parsed."""
    if n > MAX_CASES:
        raise CasesError(
            where, f"holds {n:,} cases; a tests file may hold at most {MAX_CASES:,} (raise UPSKILL_MAX_CASES to allow more)"
        )


def check_file_count(n: int, where: str) -> None:
    """Refuse a case listing more than :data:`CASE_MAX_FILES` files."""
    if n > CASE_MAX_FILES:
        raise CasesError(
            where, f"lists {n:,} files; a case may list at most {CASE_MAX_FILES:,} (raise UPSKILL_CASE_MAX_FILES to allow more)"
        )


def _budget(cap: int, var: str, unit: int) -> str:
    """The limit in bytes, the variable that sets it (in its own unit) and that raising it lifts it."""
    return f"{cap:,} bytes ({var}={cap / unit:g}; raise it to allow more)"


def _file_too_big(rel: str, size: int) -> str:
    return (
        f"input file {rel!r} is {size:,} bytes; an attached file may be at most "
        f"{_budget(EVAL_FILE_MAX_BYTES, 'UPSKILL_EVAL_FILE_MAX_KB', 1024)}"
    )


class Attachments:
    """The input files one tests file attaches to its prompts, read once and counted.

    An ``evals.json`` of 170 kB listing one 256 kB file 12,000 times asked for 3 GB of
    prompt, and ``skills validate``, ``pull``, ``triggers --library`` and the Space's
    library loader died with ``MemoryError`` while merely parsing it. Each attachment is
    therefore sized (``stat``, before a byte is read) against three budgets: one file
    (:data:`EVAL_FILE_MAX_BYTES`), one case (:data:`CASE_ATTACH_MAX_BYTES`) and the whole
    tests file (:data:`CASES_ATTACH_MAX_BYTES`); a file one case lists twice is attached
    once, and a file several cases share is read from disk once.
    """

    def __init__(self, base_dir: Path | None, evals_dir: Path | None = None, flat: bool = False) -> None:
        self.base_dir = base_dir
        self._root = base_dir.resolve() if base_dir is not None else None
        #: Where a listed path is looked up, in order, each with the folder it must stay in:
        #: the folder of the evals file (agent-skill-eval: ``files/x.py``, agent-skills-eval),
        #: then the skill folder (skill-creator: ``evals/files/x.pdf``).
        #: (A tests file given from elsewhere may still name ``files/x`` of the skill's ``evals/``.)
        self._bases: list[tuple[Path, str]] = []
        if evals_dir is not None:
            self._bases.append((evals_dir.resolve(), "the evals file's folder"))
        if self._root is not None:
            for base in (self._root / "evals", self._root) if evals_dir is None else (self._root, self._root / "evals"):
                if all(b != base for b, _ in self._bases):
                    self._bases.append((base, "the skill folder"))
        #: agent-skill-eval copies each input file into the workspace by its name alone
        #: (``files/calculator.py`` -> ``calculator.py``), where its prompts look for it.
        self.flat = flat
        self.total = 0
        self._texts: dict[Path, str | bytes] = {}
        self._sizes: dict[Path, int] = {}

    def case_parts(self, files: Any, where: str) -> tuple[list[str], list[tuple[str, str | bytes]]]:
        """The ``File `rel`:`` blocks of one case, in listed order, each distinct file once, and
        the files themselves, to stage into an agent's workspace.

        A text file is shown in the prompt in full; any other file (a PDF, a spreadsheet) is
        only named there: an agent opens it in its workspace, a text-only call is refused.
        """
        if not isinstance(files, list):
            raise CasesError(where, "must be a list of paths relative to the evals file or the skill folder")
        check_file_count(len(files), where)
        parts: list[str] = []
        staged: list[tuple[str, str | bytes]] = []
        seen: set[Path] = set()
        case_bytes = 0
        for j, rel in enumerate(files):
            loc = f"{where}[{j}]"
            target = self._locate(rel, loc)
            if target in seen:  # the same file twice (or through another spelling): once is enough
                continue
            seen.add(target)
            size = self._size(target, rel, loc)
            case_bytes += size
            if case_bytes > CASE_ATTACH_MAX_BYTES:
                raise CasesError(
                    where,
                    f"attaches {case_bytes:,} bytes of input files (so far); a case may attach at most "
                    f"{_budget(CASE_ATTACH_MAX_BYTES, 'UPSKILL_CASE_ATTACH_MAX_KB', 1024)}",
                )
            if self.total + size > CASES_ATTACH_MAX_BYTES:
                raise CasesError(
                    where,
                    f"brings the input files attached by all cases to {self.total + size:,} bytes; a tests "
                    f"file may attach at most {_budget(CASES_ATTACH_MAX_BYTES, 'UPSKILL_CASES_ATTACH_MAX_MB', 1024**2)}",
                )
            content = self._read(target, rel, loc)
            self.total += self._sizes[target]
            name = rel.replace("\\", "/").rsplit("/", 1)[-1] if self.flat else rel
            if any(name == other for other, _ in staged):
                raise CasesError(loc, f"input file {rel!r} would be staged as {name!r}, like another file of this case")
            parts.append(file_block(name, content))
            staged.append((name, content))
        return parts, staged

    def _locate(self, rel: Any, where: str) -> Path:
        """The real path of one listed file: relative to the evals file's folder first, then to
        the skill folder, and inside the folder it was found against (a symlink out is refused)."""
        if not isinstance(rel, str):
            raise CasesError(where, "must be a path relative to the evals file or the skill folder")
        checked_relpath(rel, where)
        if not self._bases:
            raise CasesError(
                where, f"input file {rel!r} needs the skill folder: evaluate the skill that holds evals.json"
            )
        for base, named in self._bases:
            target = (base / rel).resolve()
            if not target.is_relative_to(base):
                raise CasesError(where, f"input file {rel!r} points outside {named}")
            if os.path.lexists(target):
                return target
        where_looked = " or ".join(str(b) for b, _ in self._bases)
        raise CasesError(where, f"input file {rel!r} not found in {where_looked}")

    def _size(self, target: Path, rel: str, where: str) -> int:
        """Bytes ``target`` will add to the prompt (``stat``: nothing is read yet)."""
        if target in self._sizes:
            return self._sizes[target]
        try:
            size = os.stat(target).st_size  # a FIFO's stat does not block; read_capped refuses it
        except OSError as exc:
            raise CasesError(where, f"input file {rel!r} cannot be read ({exc.strerror or exc})") from None
        if size > EVAL_FILE_MAX_BYTES:
            raise CasesError(where, _file_too_big(rel, size))
        return size

    def _read(self, target: Path, rel: str, where: str) -> str | bytes:
        """The file's text, or its bytes when it is not UTF-8 text."""
        if target in self._texts:
            return self._texts[target]
        try:
            data = read_capped(target, EVAL_FILE_MAX_BYTES)  # a FIFO, a device or a giant is refused
        except FileRefused as exc:
            try:  # grown past the cap since it was sized: say so with the real limit
                size = os.stat(target).st_size
            except OSError:
                size = 0
            problem = _file_too_big(rel, size) if size > EVAL_FILE_MAX_BYTES else f"input file {rel!r} {exc.problem}"
            raise CasesError(where, problem) from None
        try:
            content: str | bytes = data.decode("utf-8")
        except UnicodeDecodeError:
            content = data
        self._texts[target] = content
        self._sizes[target] = len(data)
        return content
