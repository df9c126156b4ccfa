"""Issue 47 item 5: agent-skill-eval's other structured assertions graded from the workspace's state.

``file_contains`` / ``file_not_contains`` (in a file, or in the answer), ``file_unchanged``,
``git_clean``, ``json_path`` and ``json_path_not_exists`` are read as our state checks and
graded on the workspace (or the answer), never by the judge. Each verdict is compared with
the real agent-skill-eval 0.7.0 ``DeterministicGrader`` on the same workspace and answer.
"""

from __future__ import annotations

import json
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from upskill_hub.cases import CasesError, parse_meta
from upskill_hub.lift.grading.assertions import check_sync
from upskill_hub.lift.harness.workspace import STATE_CHECKS, Workspace, state_check

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

STRUCTURED: list[dict] = [
    {"type": "file_contains", "path": "a.txt", "contains": "HELLO"},
    {"type": "file_contains", "path": "a.txt", "contains": "goodbye"},
    {"type": "file_not_contains", "path": "a.txt", "contains": "goodbye"},
    {"type": "file_contains", "path": "missing.txt", "contains": "x"},
    {"type": "file_not_contains", "path": "missing.txt", "contains": "x"},
    {"type": "file_contains", "contains": "Done"},  # no path: the answer
    {"type": "file_not_contains", "contains": "error"},
    {"type": "file_unchanged", "path": "a.txt"},
    {"type": "file_unchanged", "path": "src"},
    {"type": "file_unchanged", "path": "never.txt"},
    {"type": "git_clean", "text": "nothing left to commit"},
    {"type": "json_path", "path": "data.json", "json_path": "a.2.b", "equals": "x"},
    {"type": "json_path", "path": "data.json", "json_path": "a.0", "equals": 2},
    {"type": "json_path", "path": "data.json", "json_path": "a.-1.b"},
    {"type": "json_path", "path": "data.json", "json_path": "a.5"},
    {"type": "json_path_not_exists", "path": "data.json", "json_path": "a.2.c"},
    {"type": "json_path_not_exists", "path": "data.json", "json_path": "n"},
]
FILES = [
    ("a.txt", "Hello World\n"),
    ("data.json", json.dumps({"a": [1, 2, {"b": "x"}], "n": None})),
    ("src/b.py", "x = 1\n"),
]


def _git(ws: Workspace, *args: str) -> None:
    code, _, err = ws.git(list(args))
    assert code == 0, err


def _write(ws: Workspace, rel: str, text: str) -> None:
    (ws.project / rel).write_text(text)


def _commit_all(ws: Workspace, msg: str = "agent") -> None:
    _git(ws, "add", "-A")
    _git(ws, "commit", "-q", "--allow-empty", "-m", msg)


#: What the agent did, and its answer.
SCENARIOS: dict[str, Callable[[Workspace], str]] = {
    "nothing": lambda ws: "Done.",
    "commit all": lambda ws: (_commit_all(ws), "done, no error")[1],
    "edit a.txt": lambda ws: (_write(ws, "a.txt", "Goodbye\n"), _write(ws, "missing.txt", "abc"), "An ERROR")[
        2
    ],
    "edit a.txt and commit": lambda ws: (_write(ws, "a.txt", "goodbye hello\n"), _commit_all(ws), "done")[2],
    "delete a.txt": lambda ws: ((ws.project / "a.txt").unlink(), "done")[1],
    "new files": lambda ws: (_write(ws, "src/c.py", "y = 2\n"), _write(ws, "never.txt", ""), "done")[2],
    "edit src and stage": lambda ws: (_write(ws, "src/b.py", "x = 3\n"), _git(ws, "add", "src"), "done")[2],
    "make a.txt executable": lambda ws: ((ws.project / "a.txt").chmod(0o755), "done")[1],
    "json rewritten": lambda ws: (
        _write(ws, "data.json", '{"a": [2, {"b": "y"}, 3, 4, 5, 6]}'),
        _write(ws, "missing.txt", "X"),
        "done",
    )[2],
    "json broken": lambda ws: (_write(ws, "data.json", "{oops"), "done")[1],
}


def _ours(ws: Workspace, answer: str, stype: dict) -> bool:
    (case,) = parse_meta({"evals": [{"id": "c", "prompt": "p", "assertions": [stype]}]}).cases
    (a,) = case.asserts
    assert a.type != "llm-rubric" and not a.judge_required  # never the judge
    return (state_check(ws, a) if a.type in STATE_CHECKS else check_sync(a, answer)).passed


@pytest.mark.parametrize("committed", [False, True], ids=["as-its-runner-makes-it", "input-committed"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_same_verdicts_as_agent_skill_eval_on_the_same_workspace(
    tmp_path: Path, scenario: str, committed: bool
):
    ase_git = pytest.importorskip("agent_skill_eval.git_state")
    from agent_skill_eval.graders import DeterministicGrader

    ws = Workspace.create(tmp_path, "ws-")
    ws.write_files(FILES, git_stage=True, git_repo=True)
    if committed:  # a repository whose input files are history, not staged changes
        _commit_all(ws, "input")
    ws.freeze()
    pre = ase_git.capture_git_state(ws.project)
    answer = SCENARIOS[scenario](ws)
    post = ase_git.capture_git_state(ws.project)
    out = tmp_path / "outputs"
    out.mkdir()
    theirs = [
        r.passed
        for r in DeterministicGrader(pre_state=pre, post_state=post).grade(
            STRUCTURED, out, answer, workspace=ws.project
        )
    ]
    ours = [_ours(ws, answer, s) for s in STRUCTURED]
    assert list(zip(STRUCTURED, ours, strict=True)) == list(zip(STRUCTURED, theirs, strict=True))


def test_each_structured_check_both_passes_and_fails_across_the_scenarios(tmp_path: Path):
    """The comparison above is not trivially all-pass or all-fail for any assertion."""
    seen: dict[int, set[bool]] = {i: set() for i in range(len(STRUCTURED))}
    for n, act in enumerate(SCENARIOS.values()):
        ws = Workspace.create(tmp_path, f"ws{n}-")
        ws.write_files(FILES, git_stage=True, git_repo=True)
        _commit_all(ws, "input")
        ws.freeze()
        answer = act(ws)
        for i, s in enumerate(STRUCTURED):
            seen[i].add(_ours(ws, answer, s))
    assert {i: v for i, v in seen.items() if v != {True, False}} == {}


def test_git_clean_and_file_unchanged_run_no_filter_the_agent_planted(tmp_path: Path):
    """``git status`` would run a ``filter.X.clean`` the agent wrote into ``.git/config``."""
    ws = Workspace.create(tmp_path, "ws-")
    ws.write_files(FILES, git_stage=True, git_repo=True)
    ws.freeze()
    marker = tmp_path / "FILTER-RAN"
    _write(ws, ".gitattributes", "* filter=evil\n")
    _git(ws, "config", "filter.evil.clean", f"touch {marker}; cat")
    (ws.project / "a.txt").chmod(stat.S_IMODE((ws.project / "a.txt").stat().st_mode))  # stat-dirty
    for stype in ({"type": "git_clean"}, {"type": "file_unchanged", "path": "a.txt"}):
        assert _ours(ws, "", stype) is False  # the agent's .gitattributes is untracked; a.txt staged
    marker.unlink(missing_ok=True)  # the commit above may run it; grading must not
    _commit_all(ws)
    marker.unlink(missing_ok=True)
    (ws.project / "a.txt").write_text("Hello World, edited\n")
    (case,) = parse_meta({"evals": [{"id": "c", "prompt": "p", "assertions": [{"type": "git_clean"}]}]}).cases
    result = state_check(ws, case.asserts[0])
    assert (result.passed, result.evidence) == (False, "git: dirty:  M a.txt")
    assert not marker.exists()


def test_structured_checks_agent_skill_eval_grades_from_its_logs_are_still_refused_in_one_line():
    for stype in ("command_ran", "command_not_ran", "tests_pass"):
        with pytest.raises(CasesError, match=f"{stype!r} has no upskill-hub equivalent yet"):
            parse_meta(
                {"evals": [{"id": "c", "prompt": "p", "assertions": [{"type": stype, "command": "pytest"}]}]}
            )
    with pytest.raises(CasesError, match="'json_path' without 'path'"):
        parse_meta(
            {"evals": [{"id": "c", "prompt": "p", "assertions": [{"type": "json_path", "json_path": "a"}]}]}
        )


PROSE = [
    'The summary contains "Exponential Backoff"',
    "The answer includes `retry()` or `RETRY_MAX`",
    'The reply contains "jitter" and "cap"',  # any of them, as agent-skill-eval matches
]


@pytest.mark.parametrize("should_trigger", [True, False])
@pytest.mark.parametrize(
    "answer", ["Use exponential backoff with JITTER.", "Call retry() twice.", "Nothing relevant here."]
)
def test_a_sentence_that_contains_a_quoted_text_is_graded_on_the_answer_as_agent_skill_eval_does(
    tmp_path: Path, answer: str, should_trigger: bool
):
    from agent_skill_eval.graders import DeterministicGrader, classify_assertion

    assert {classify_assertion(s) for s in PROSE} == {"content-contains"}
    out = tmp_path / "outputs"
    out.mkdir()
    theirs = [
        r.passed
        for r in DeterministicGrader().grade(
            PROSE, out, answer, workspace=tmp_path, should_trigger=should_trigger
        )
    ]
    ev = {
        "id": "c",
        "prompt": "p",
        "stage_files": True,
        "should_trigger": should_trigger,
        "assertions": PROSE,
    }
    (case,) = parse_meta({"evals": [ev]}).cases
    assert {a.type for a in case.asserts} == {"contains-any"}  # not the judge
    assert [check_sync(a, answer).passed for a in case.asserts] == theirs
    # its earlier routes still win: a sentence about a file goes where it sends it, not here
    ev["assertions"] = ['The file contains "x" and exists']
    (case,) = parse_meta({"evals": [ev]}).cases
    assert case.asserts[0].type == "llm-rubric" and classify_assertion(ev["assertions"][0]) == "file-exists"
