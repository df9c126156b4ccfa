"""How long the graders' view of an agent's files takes: each kind rendered, hostile files refused.

Run: ``.venv/bin/python benchmarks/artifact_render.py [--repeats N]``. Builds real files with the
same libraries the tests use (openpyxl, python-docx, a hand-made PDF), a zip bomb renamed
``.xlsx``, a PDF declaring 100,000 pages, a 2 GB sparse file and a symlink out of the folder,
renders each with :func:`upskill_hub.artifacts.render.render_one` (the isolated reader process
included) and prints min and median times side by side, with the ratio to a plain text file.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "artifacts"))

from _artifact_files import make_docx, make_pdf, make_xlsx, many_pages_pdf, zip_bomb  # noqa: E402

from upskill_hub.artifacts.render import render_one  # noqa: E402


def build(root: Path) -> list[str]:
    (root / "notes.txt").write_text("Total row: =SUM(B2:B9)\n" * 50)
    make_xlsx(root / "report.xlsx")
    make_docx(root / "report.docx")
    make_pdf(root / "report.pdf", ["Sales by region", "Total row: =SUM(B2:B9)"])
    zip_bomb(root / "bomb.xlsx")
    (root / "pages.pdf").write_bytes(many_pages_pdf(100_000))
    with open(root / "sparse.bin", "wb") as f:
        f.truncate(2 * 1024**3)
    os.symlink("/etc/passwd", root / "outside.txt")
    return ["notes.txt", "report.xlsx", "report.docx", "report.pdf", "bomb.xlsx", "pages.pdf", "sparse.bin", "outside.txt"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        names = build(root)
        rows = []
        for rel in names:
            times, shown = [], None
            for _ in range(args.repeats):
                t = time.perf_counter()
                shown = render_one(root, rel)
                times.append(time.perf_counter() - t)
            rows.append((rel, min(times), statistics.median(times), shown))
    base = rows[0][1] or 1e-9
    print(f"{'file':<12} {'min ms':>8} {'median ms':>10} {'x text':>8}  rendered / note")
    for rel, lo, med, shown in rows:
        what = shown.note if shown.note else f"{len(shown.text):,} chars"
        print(f"{rel:<12} {lo * 1000:8.0f} {med * 1000:10.0f} {lo / base:8.0f}  {what[:80]}")


if __name__ == "__main__":
    main()
