"""How much of a dataset repo the Space agrees to download and read.

A visitor can type any repo id, so its files are hostile until measured: a 28 KB parquet
can decompress to 400 MB, a repo can hold thousands of shards. Before anything is
downloaded the repo's listing (names and sizes, one request) is checked; before any
parquet is read its footer (row counts, uncompressed size of the columns we read) is
checked. Only the files the layout defines are ever fetched. The limits are per library;
the cache in :mod:`upskill_hub.space.data` bounds how many libraries stay in memory.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from upskill_hub._util.limits import env_int
from upskill_hub.errors import UpskillError
from upskill_hub.hub import layout

MB = 1024 * 1024


#: Bytes a library's files may take on the Hub (compressed, as listed).
MAX_DOWNLOAD_BYTES = env_int("UPSKILL_SPACE_MAX_DOWNLOAD_MB", 256) * MB
#: Parquet shards a library may have (all tables together).
MAX_FILES = env_int("UPSKILL_SPACE_MAX_FILES", 5000)
#: Bytes the columns we read may take once decompressed (all tables together).
MAX_READ_BYTES = env_int("UPSKILL_SPACE_MAX_READ_MB", 256) * MB
#: Rows all tables together may have.
MAX_ROWS = env_int("UPSKILL_SPACE_MAX_ROWS", 1_000_000)
#: Bytes one skill's files may take (fetched when a visitor opens or evaluates the skill).
MAX_SKILL_DOWNLOAD_BYTES = env_int("UPSKILL_SPACE_MAX_SKILL_MB", 20) * MB
#: Files one skill may have.
MAX_SKILL_FILES = env_int("UPSKILL_SPACE_MAX_SKILL_FILES", 500)
#: README.md is fetched too (the card); it stays small.
MAX_README_BYTES = 1 * MB

#: What ``snapshot_download`` may fetch: the tables and the card, nothing else.
#: (``fnmatch``'s ``*`` crosses ``/``: ``data/results/*.parquet`` also selects the per-Job files
#: ``data/results/<run_id>/shard-<i>.parquet`` of a sharded run, and they count against the bounds.)
ALLOW_PATTERNS = [
    layout.SKILLS_GLOB, layout.RESULTS_GLOB, layout.RUNS_GLOB, layout.ROUTING_GLOB, layout.SECURITY_GLOB,
    layout.CARD_PATH,
]  # fmt: skip


def plan_download(repo: str, listing: Iterable[tuple[str, int | None]]) -> list[str]:
    """The ``allow_patterns`` for ``repo`` once its ``(path, size)`` listing fits; one-line error if not.

    The selection is computed with the same matcher ``snapshot_download`` uses, so what is
    measured here is exactly what would be fetched.
    """
    from huggingface_hub.utils import filter_repo_objects

    sizes = dict(listing)
    selected = list(filter_repo_objects(list(sizes), allow_patterns=ALLOW_PATTERNS))
    unknown = [p for p in selected if sizes[p] is None]
    if unknown:
        raise UpskillError(
            f"dataset repo {repo!r} does not list the size of {unknown[0]!r}; refusing to download it"
        )
    if sizes.get("README.md", 0) > MAX_README_BYTES:
        raise UpskillError(f"dataset repo {repo!r} has a README.md over {MAX_README_BYTES // MB} MB")
    n_tables = sum(1 for p in selected if p != "README.md")
    if n_tables > MAX_FILES:
        raise UpskillError(
            f"dataset repo {repo!r} has {n_tables} parquet files; this Space reads at most {MAX_FILES}"
        )
    total = sum(int(sizes[p]) for p in selected)
    if total > MAX_DOWNLOAD_BYTES:
        raise UpskillError(
            f"dataset repo {repo!r} holds {total / MB:.0f} MB of tables; this Space downloads at most "
            f"{MAX_DOWNLOAD_BYTES / MB:.0f} MB"
        )
    return list(ALLOW_PATTERNS)


def check_skill_download(repo: str, name: str, sizes: dict[str, int | None]) -> None:
    """Refuse to fetch ``skills/<name>/`` when the listing shows it too big (or unmeasured)."""
    prefix = f"skills/{name}/"
    mine = [(p, s) for p, s in sizes.items() if p.startswith(prefix)]
    if any(s is None for _, s in mine):
        raise UpskillError(f"dataset repo {repo!r} does not list the sizes of skill {name!r}'s files")
    total = sum(int(s or 0) for _, s in mine)
    if len(mine) > MAX_SKILL_FILES or total > MAX_SKILL_DOWNLOAD_BYTES:
        raise UpskillError(
            f"skill {name!r} in {repo!r} has {len(mine)} files, {total / MB:.1f} MB; this Space opens skills "
            f"of at most {MAX_SKILL_FILES} files and {MAX_SKILL_DOWNLOAD_BYTES / MB:.0f} MB"
        )


def measure_parquet(files: list[Path], columns: tuple[str, ...] | None) -> tuple[int, int]:
    """``(rows, uncompressed bytes of the columns read)`` from the files' footers, without reading data."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = size = 0
    for f in files:
        try:
            meta = pq.read_metadata(f)
        except (OSError, pa.ArrowInvalid) as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise UpskillError(f"{f.name}: not a readable parquet file ({first})") from None
        rows += meta.num_rows
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            for c in range(group.num_columns):
                chunk = group.column(c)
                if columns is None or chunk.path_in_schema.split(".")[0] in columns:
                    size += chunk.total_uncompressed_size
    return rows, size


class ReadBudget:
    """Rows and bytes left for one library; :meth:`take` refuses what would exceed them."""

    def __init__(self, source: str, max_rows: int | None = None, max_bytes: int | None = None) -> None:
        self.source = source
        self.rows_left = MAX_ROWS if max_rows is None else max_rows
        self.max_bytes = MAX_READ_BYTES if max_bytes is None else max_bytes
        self.bytes_left = self.max_bytes
        self.used_bytes = 0  # what the data really took once read

    def take(self, files: list[Path], columns: tuple[str, ...] | None, table: str) -> None:
        rows, size = measure_parquet(files, columns)
        if rows > self.rows_left:
            raise UpskillError(
                f"{self.source}: the {table} table has {rows} rows; this Space reads at most {self.rows_left} more"
            )
        if size > self.bytes_left:
            raise UpskillError(
                f"{self.source}: the {table} table decompresses to {size / MB:.0f} MB; this Space reads at "
                f"most {self.max_bytes / MB:.0f} MB per library"
            )
        self.rows_left -= rows
        self.bytes_left -= size

    def spend(self, nbytes: int, table: str) -> None:
        """Count ``nbytes`` really decompressed; refuse once the library passes its limit."""
        self.used_bytes += nbytes
        if self.used_bytes > self.max_bytes:
            raise UpskillError(
                f"{self.source}: the {table} table decompresses to more than {self.max_bytes / MB:.0f} MB; "
                "this Space reads no more"
            )
