"""Every command line of the docs landing page (docs/index.md) runs as written (issue 48, Build).

The README's tour has the same guarantee (``tests/test_readme_tour.py``); this file reuses its
machinery: the lines are read from the page's ```bash blocks, so a line added there is
covered without anyone editing this file, and each runs through ``bash -c`` in the tour's
temporary folder (copies of ``skills/`` and the rmsnorm example, a local Hub, the scripted
model server, ``OWNER`` substituted). The landing page speaks to a clone, so that folder also
gets the clone's ``.venv`` (a link to this one): ``.venv/bin/upskill-hub`` runs as typed.

Three lines are CI's own and are not run here: ``bash .ci/setup`` builds a venv from the
network, ``.venv/bin/python -m pytest -n 2`` is this very suite, and ``.venv/bin/upskill-hub
demo`` follows them; ``.ci/run`` runs exactly those on every CI run, and the cheap test below
fails when a landing-page line is neither one of ``.ci/run``'s nor run here.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_readme_tour import (  # noqa: E402
    LOCAL_MODEL,
    VENV_BIN,
    Tour,
    _runs,
    bash_blocks,
    command_lines,
    run_line,
)
from test_readme_tour import tour as _readme_tour  # noqa: E402

tour = _readme_tour  # the README test's fixture, shared: same folder, Hub and model server

ROOT = Path(__file__).resolve().parents[2]
INDEX = ROOT / "docs" / "index.md"
CI_RUN = ROOT / ".ci" / "run"


def landing_lines() -> list[str]:
    """The command lines of every ```bash block of the landing page, in order."""
    lines = [
        line for block in bash_blocks(INDEX.read_text(encoding="utf-8")) for line in command_lines(block)
    ]
    assert lines, "docs/index.md has no ```bash block with a command line"
    return lines


def ci_commands() -> set[str]:
    """The commands ``.ci/run`` runs, as typed there without their ``NAME=value`` prefix."""
    found = set()
    for raw in CI_RUN.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        words = shlex.split(line)
        while words and "=" in words[0] and not words[0].startswith("-"):
            words.pop(0)
        found.add(shlex.join(words))
    return found


def run_by_ci(line: str) -> bool:
    """True when every ``&&`` part of ``line`` is a command ``.ci/run`` runs as written."""
    ci = ci_commands()
    return all(shlex.join(shlex.split(part)) in ci for part in line.split("#")[0].split("&&"))


def test_each_landing_page_line_is_run_by_ci_or_by_this_file():
    """Cheap, not slow: a line changed on the page but not in CI (or the reverse) fails here."""
    lines = landing_lines()
    by_ci = [line for line in lines if run_by_ci(line)]
    assert "bash .ci/setup && .venv/bin/upskill-hub demo" in by_ci, by_ci
    assert ".venv/bin/python -m pytest -n 2" in by_ci, by_ci
    here = [line for line in lines if not run_by_ci(line)]
    for line in here:
        words = shlex.split(line.split(" #")[0])
        assert words[0] in ("upskill-hub", ".venv/bin/upskill-hub"), (
            f"not run by CI, nor an upskill-hub line: {line!r}"
        )
        assert "..." not in words, f"a placeholder in: {line!r}"


def _clone(tour: Tour) -> Tour:
    """The tour's folder as a clone's: ``.venv`` there is this venv."""
    (tour.cwd / ".venv").symlink_to(VENV_BIN.parent, target_is_directory=True)
    return tour


def _check(tour: Tour, line: str) -> None:
    said = run_line(tour, line)
    words = shlex.split(tour.substitute(line).split(" #")[0])
    if words[1:2] == ["eval"]:
        skill = Path(words[2]).name
        assert _runs(tour.cwd / "upskill-runs", skill), f"no finished run of {skill}: {line}\n{said[-3000:]}"


@pytest.mark.slow
def test_landing_page_lines_run_as_written(tour: Tour):
    """Every line CI does not run, in the page's order; slow: the page's reproduce line is the
    real offline model (``--model local``, about a minute on 2 cores)."""
    lines = [line for line in landing_lines() if not run_by_ci(line)]
    assert any(LOCAL_MODEL.search(line) for line in lines), "no --model local line any more: unmark slow"
    _clone(tour)
    for line in lines:
        _check(tour, line)
