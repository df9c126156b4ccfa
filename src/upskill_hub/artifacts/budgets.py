"""How much of an agent's files the graders read: the artifact budgets, in one place.

The files are the agent's, so they are untrusted input: a zip bomb renamed ``.xlsx``, a
2 GB sparse file, a PDF claiming 100,000 pages. Each budget below bounds one way such a
file could cost time, memory or prompt space; an operator changes one with the environment
variable named beside it (docs/env.md lists them). What a budget cut is always said in the
rendered text.
"""

from __future__ import annotations

from upskill_hub._util.limits import env_int, env_number

#: Changed files listed per row (path, size, sha256, kind); the rest are counted.
MAX_LISTED = env_int("UPSKILL_ARTIFACT_MAX_FILES", 200)
#: Changed files rendered as text per row (the first ones, created before modified).
MAX_RENDERED = env_int("UPSKILL_ARTIFACT_MAX_RENDERED", 20)
#: Largest file rendered (MB, its size on disk as stat says: a sparse file counts whole).
MAX_FILE_BYTES = int(env_number("UPSKILL_ARTIFACT_FILE_MAX_MB", 20) * 1_000_000)
#: Characters of rendered text kept per file.
MAX_FILE_CHARS = env_int("UPSKILL_ARTIFACT_FILE_MAX_CHARS", 20_000)
#: Characters of rendered text written to the run folder per row, every file together.
MAX_ROW_CHARS = env_int("UPSKILL_ARTIFACT_ROW_MAX_CHARS", 100_000)
#: Characters of the judge prompt's ``<artifacts>`` section.
MAX_PROMPT_CHARS = env_int("UPSKILL_ARTIFACT_PROMPT_MAX_CHARS", 30_000)
#: Seconds one file may take to render; then its worker is stopped and the file is a note.
FILE_TIMEOUT_S = env_number("UPSKILL_ARTIFACT_TIMEOUT_S", 10.0)
#: Seconds all files of one row may take to render together.
ROW_TIMEOUT_S = env_number("UPSKILL_ARTIFACT_ROW_TIMEOUT_S", 60.0)
#: PDF pages whose text is read.
MAX_PAGES = env_int("UPSKILL_ARTIFACT_MAX_PAGES", 50)
#: Spreadsheet sheets read.
MAX_SHEETS = env_int("UPSKILL_ARTIFACT_MAX_SHEETS", 20)
#: Non-empty spreadsheet cells read per file (every sheet together).
MAX_CELLS = env_int("UPSKILL_ARTIFACT_MAX_CELLS", 5_000)
#: Slides read from a deck.
MAX_SLIDES = env_int("UPSKILL_ARTIFACT_MAX_SLIDES", 100)
#: Declared uncompressed size of all members of an xlsx/docx/pptx (MB), checked before opening.
MAX_ZIP_BYTES = int(env_number("UPSKILL_ARTIFACT_ZIP_MAX_MB", 100) * 1_000_000)
#: Largest compression ratio of a zip member over 1 MB (office XML is 5-30; a bomb is 1000).
MAX_ZIP_RATIO = env_number("UPSKILL_ARTIFACT_ZIP_MAX_RATIO", 200.0)
#: Members an xlsx/docx/pptx may have.
MAX_ZIP_MEMBERS = env_int("UPSKILL_ARTIFACT_ZIP_MAX_MEMBERS", 5_000)
#: Address space of the worker process that opens binary formats (MB).
WORKER_MEMORY_BYTES = int(env_number("UPSKILL_ARTIFACT_WORKER_MEMORY_MB", 2048) * 1_000_000)


def as_dict() -> dict[str, float | int]:
    """The budgets the worker process needs, read now (so a test's change reaches it)."""
    return {
        "max_file_bytes": MAX_FILE_BYTES,
        "max_file_chars": MAX_FILE_CHARS,
        "file_timeout_s": FILE_TIMEOUT_S,
        "max_pages": MAX_PAGES,
        "max_sheets": MAX_SHEETS,
        "max_cells": MAX_CELLS,
        "max_slides": MAX_SLIDES,
        "max_zip_bytes": MAX_ZIP_BYTES,
        "max_zip_ratio": MAX_ZIP_RATIO,
        "max_zip_members": MAX_ZIP_MEMBERS,
        "worker_memory_bytes": WORKER_MEMORY_BYTES,
    }
