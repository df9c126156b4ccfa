"""Things written once: lift text comes from ``percent.points``, the dataset repo's layout
from ``hub/layout.py``. A hand-written copy elsewhere fails here, naming the file."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from upskill_hub._util.percent import points

SRC = Path(__file__).resolve().parents[2] / "src" / "upskill_hub"


def _code_strings(path: Path) -> list[str]:
    """The string constants of a module that are not docstrings (comments are not in the AST)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    return [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings
    ]


def test_lifts_are_formatted_by_percent_points_only():
    hand_made = re.compile(r"\* ?100\)?:\+|round\([\w.]*lift \* 100\)")
    offenders = [
        str(p.relative_to(SRC))
        for p in SRC.rglob("*.py")
        if p.name != "percent.py" and hand_made.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_dataset_repo_layout_is_written_in_hub_layout_only():
    table_path = re.compile(r"data/(skills|results|runs)\b")
    offenders = [
        str(p.relative_to(SRC))
        for p in SRC.rglob("*.py")
        if p != SRC / "hub" / "layout.py" and any(table_path.search(s) for s in _code_strings(p))
    ]
    assert offenders == []


def test_points_variants():
    assert points(0.25, 0.05, 0.45) == "+25 pts [+5, +45]"
    assert points(0.25, 0.05, 0.45, unit="", compact=True) == "+25 [+5,+45]"
    assert points(0.25, 0.05, 0.45, sep="\n", compact=True) == "+25 pts\n[+5,+45]"
    assert points(-0.35, unit="%") == "-35%"
    assert points(0.0, unit="points") == "+0 points"
    assert points(None) == points(float("nan")) == "–"
