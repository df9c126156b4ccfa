"""The rmsnorm README's measured tables are the raw benchmark files, not retyped figures.

Each table names its card; its rows must equal the second run's JSON (kernel, eager,
F.rms_norm and compile times, % of copy, max ulp) and its ratio column both runs'
kernel ÷ compile, as `benchmarks/rmsnorm.py --json` wrote them on that card.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "kernels_examples" / "rmsnorm" / "README.md"
RESULTS = ROOT / "benchmarks" / "results"
TABLES = {
    "NVIDIA H100 80GB HBM3": ("rmsnorm-h100-2026-11-26-l2hints-run1.json", "rmsnorm-h100-2026-11-26-l2hints-run2.json"),
    "NVIDIA H200": ("rmsnorm-h200-2026-11-26-run1.json", "rmsnorm-h200-2026-11-26-run2.json"),
}
ROW = re.compile(r"^\| (bf16|fp32) \| (\d+)×(\d+) \| (.+) \|$")


def table_rows(card: str) -> list[list[str]]:
    """The data rows of the table under the heading that names `card`."""
    text = README.read_text(encoding="utf-8")
    start = text.index(f"### {card} (")
    rows = []
    for line in text[start:].splitlines()[1:]:
        if line.startswith("### ") or line.startswith("How to read"):
            break
        if ROW.match(line):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows


def num(cell: str) -> float:
    return float(cell.replace(",", "").rstrip("×% ").strip())


@pytest.mark.parametrize("card", sorted(TABLES))
def test_table_equals_the_raw_runs(card):
    run1, run2 = (json.loads((RESULTS / name).read_text()) for name in TABLES[card])
    assert run2["device"] == card
    first = {(r["dtype"], r["rows"], r["hidden"]): r for r in run1["rows"]}
    rows = table_rows(card)
    assert len(rows) == len(run2["rows"]) == 18
    for cells, raw in zip(rows, run2["rows"], strict=True):
        dtype = {"bf16": "bfloat16", "fp32": "float32"}[cells[0]]
        rows_n, hidden = (int(v) for v in cells[1].split("×"))
        assert (dtype, rows_n, hidden) == (raw["dtype"], raw["rows"], raw["hidden"])
        for col, key in ((2, "kernel_us"), (3, "eager_us"), (4, "f_rms_norm_us"), (5, "compile_us")):
            assert num(cells[col]) == pytest.approx(raw[key], abs=0.051), (cells, key)
        r1, r2 = (num(v) for v in cells[6].split("/"))
        assert r1 == pytest.approx(first[(dtype, rows_n, hidden)]["kernel_vs_compile"], abs=0.0051)
        assert r2 == pytest.approx(raw["kernel_vs_compile"], abs=0.0051)
        assert num(cells[8]) == pytest.approx(raw["pct_of_copy"], abs=0.51)
        assert num(cells[9]) == pytest.approx(raw["kernel_max_ulp"], abs=0.0051)
