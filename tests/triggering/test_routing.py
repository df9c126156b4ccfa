"""Library routing figures from trigger rows: confusion matrix, intervals, stealing pairs, heat map."""

from __future__ import annotations

import json
import re

import pytest

from upskill_hub.lift.figures.intervals import wilson_interval
from upskill_hub.rundir.routing_rows import NONE, routing_records
from upskill_hub.rundir.schema import TriggerRow
from upskill_hub.triggering.routing import plot_routing, routing_report

#: Five skills; sql-format and sql-lint describe nearly the same thing.
LIBRARY = {
    "csv-json": "Convert CSV spreadsheets into JSON records.",
    "sql-format": "Format SQL queries and statements.",
    "sql-lint": "Lint SQL queries and statements.",
    "git-commit": "Write git commit messages from a diff.",
    "pdf-text": "Extract text from PDF documents.",
}
QUERIES = {
    "csv-json": ["turn this CSV into JSON", "CSV spreadsheets to records", "convert my CSV file"],
    "sql-format": ["format these SQL statements", "indent my SQL queries", "tidy these statements"],
    "sql-lint": ["lint these SQL statements", "find mistakes in SQL statements", "check my SQL queries"],
    "git-commit": ["write a commit message for this diff", "git commit text please", "message for my diff"],
    "pdf-text": ["get the text out of this PDF", "extract PDF documents text", "read a scanned page"],
}


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 3}


def pick(query: str) -> list[str]:
    """The scripted model's choice: the skill whose description shares the most words (ties: listed first)."""
    scores = {name: len(_words(query) & _words(desc)) for name, desc in LIBRARY.items()}
    best = max(scores.values())
    return [] if best == 0 else [next(n for n, s in scores.items() if s == best)]


def rows(model: str = "m") -> list[TriggerRow]:
    out = []
    for skill, queries in QUERIES.items():
        for i, q in enumerate(queries):
            loaded = pick(q)
            out.append(
                TriggerRow("r", "t", "v", skill, "ver", model, "p", "{}", f"{skill}-{i}", q, True, 0,
                           skill in loaded, json.dumps(loaded))
            )  # fmt: skip
    return out


def test_matrix_names_the_overlapping_pair_with_its_queries(tmp_path):
    report = routing_report(rows(), list(LIBRARY), "m")
    assert report.columns[-1] == NONE and len(report.matrix) == 5
    i, j = report.skills.index("sql-lint"), report.skills.index("sql-format")
    assert report.matrix[i][j] == 2 and report.matrix[i][i] == 1  # two sql-lint queries went to sql-format
    (pair,) = report.stealing
    assert {pair.a, pair.b} == {"sql-format", "sql-lint"}
    stolen = pair.examples_b_to_a if pair.a == "sql-format" else pair.examples_a_to_b
    assert stolen == ["find mistakes in SQL statements", "check my SQL queries"]
    # "read a scanned page" shares no word with any description: the model loads nothing.
    assert report.matrix[report.skills.index("pdf-text")][-1] == 1
    per = {p.skill: p for p in report.per_skill}
    assert per["csv-json"].accuracy == 1.0 and per["pdf-text"].recall == 2 / 3
    assert (per["pdf-text"].recall_ci_low, per["pdf-text"].recall_ci_high) == wilson_interval(2, 3)
    assert report.n == 15 and (report.accuracy_ci_low, report.accuracy_ci_high) == wilson_interval(report.routed, 15)

    png = plot_routing(report, tmp_path / "routing.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    recs = routing_records(report, "r", "t")
    assert len(recs) == 5 * 6 and sum(r.count for r in recs) == 15


def test_errors_count_nowhere_and_other_models_are_apart():
    data = rows("m") + rows("other")
    data[0] = TriggerRow(**{**data[0].to_dict(), "triggered": None, "error": "timeout", "loaded": "[]"})
    report = routing_report(data, list(LIBRARY), "m")
    assert report.n == 14 and report.errors == 1
    assert routing_report(data, list(LIBRARY), "other").n == 15


def test_a_library_run_resumes_with_the_calls_it_has(tmp_path):
    from upskill_hub.cases import TriggerQuery
    from upskill_hub.rundir.routing_rows import ROUTING_FILE, read_routing
    from upskill_hub.triggering.routing import ROUTING_PNG, one_at_a_time, run_library_routing

    library = {s: [TriggerQuery(f"{s}-{i}", q, True) for i, q in enumerate(qs)] for s, qs in QUERIES.items()}
    asked = []

    def ask(model, skill, q, repeat):
        asked.append((model, q.id, repeat))
        if len(asked) == 7 and not getattr(ask, "resumed", False):
            raise KeyboardInterrupt  # killed mid-run
        loaded = pick(q.query)
        return TriggerRow("lib", "t", "v", skill, "x", model, "p", "{}", q.id, q.query, True, repeat,
                          skill in loaded, json.dumps(loaded))  # fmt: skip

    run = tmp_path / "lib"
    with pytest.raises(KeyboardInterrupt):
        run_library_routing(library, ["m"], one_at_a_time(ask), run, run_id="lib", timestamp="t")
    with (run / "triggers.jsonl").open("a") as fh:
        fh.write('{"run_id": "lib", "mod')  # the torn line a kill -9 leaves
    assert not (run / ROUTING_FILE).exists()
    ask.resumed = True  # type: ignore[attr-defined]
    before = len(asked)
    (report,) = run_library_routing(library, ["m"], one_at_a_time(ask), run, run_id="lib", timestamp="t")
    assert len(asked) - before == 15 - 6  # only the calls not answered before the kill
    assert report.n == 15 and read_routing(run)[2][0].matrix == report.matrix
    assert (run / ROUTING_PNG).is_file()
    again = len(asked)
    run_library_routing(library, ["m"], one_at_a_time(ask), run, run_id="lib", timestamp="t")
    assert len(asked) == again  # everything answered: nothing asked
