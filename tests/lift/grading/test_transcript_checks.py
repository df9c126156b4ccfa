"""``tool-called``, ``skill-loaded`` and ``file-read``: parsed from a tests file, refused where
no tool calls exist, graded on a transcript, and the judge's bounded summary of it."""

from __future__ import annotations

import json
import time
import tracemalloc

import pytest

from upskill_hub.cases import CasesError, parse_meta
from upskill_hub.cases.schema import Assertion, Case, parse_assertion
from upskill_hub.errors import UpskillError
from upskill_hub.lift.grading.transcript_checks import Activity, check_transcript, checker, judge_summary
from upskill_hub.lift.harness import HarnessOptions
from upskill_hub.lift.prepare import _check_workspace_cases
from upskill_hub.session.transcript import CUT_MARK, Transcript, TranscriptBuilder, bounded_json


def _transcript(*calls: tuple[str, object, object]) -> Transcript:
    b = TranscriptBuilder()
    for i, (name, args, result) in enumerate(calls):
        b.call(name, args, f"c{i}")
        if result is not None:
            b.result(f"c{i}", result)
    return b.build()


FILL = _transcript(
    ("Skill", {"skill": "xlsx"}, "Launching skill: xlsx"),
    ("Bash", {"command": "python .claude/skills/xlsx/scripts/fill.py --out 'report.xlsx'"}, "ok"),
    ("Read", {"file_path": "/w/project/data.csv"}, "a,b"),
    ("mcp__docs__search", {"q": 'say "hi"'}, "found"),
)
ACTIVITY = Activity(
    FILL, "xlsx", loaded=["xlsx"], reads=["/w/project/data.csv", "xlsx/SKILL.md"],
    commands=["python .claude/skills/xlsx/scripts/fill.py --out 'report.xlsx'"],
)  # fmt: skip


def _check(raw: dict, activity: Activity = ACTIVITY):
    return check_transcript(parse_assertion(raw, "t"), activity)


# --------------------------------------------------------------------------- tool-called
@pytest.mark.parametrize(
    "raw",
    [
        {"type": "tool-called", "value": "Bash"},
        {"type": "tool-called", "value": "bash"},  # names match whatever their case
        {"type": "tool-called", "value": "shell"},  # or by kind, across CLIs
        {"type": "tool-called", "value": "Bash", "args": "scripts/fill.py"},
        {"type": "tool-called", "value": "Bash", "args": "'report.xlsx'"},
        {"type": "tool-called", "value": "search"},  # an MCP tool by its own name
        {"type": "tool-called", "value": "mcp"},
        {"type": "tool-called", "value": "mcp__docs__search", "args": 'say "hi"'},  # the value, unescaped
        {"type": "tool-called", "value": "mcp__docs__search", "args": 'say \\"hi\\"'},  # or the JSON text
    ],
)
def test_tool_called_passes(raw):
    result = _check(raw)
    assert result.passed is True, result.evidence
    assert result.evidence.startswith("call ")


@pytest.mark.parametrize(
    "raw,evidence",
    [
        ({"type": "tool-called", "value": "Write"},
         "no call of 'Write' among 4 call(s) (called: Skill, Bash, Read, mcp__docs__search)"),
        ({"type": "tool-called", "value": "Bash", "args": "scripts/other.py"},
         "1 call(s) of 'Bash', none with 'scripts/other.py' in its arguments: call 2: "),
        ({"type": "tool-called", "value": "Bash", "args": "SCRIPTS/FILL.PY"}, "none with"),  # arguments match exactly
        ({"type": "tool-called", "value": "Bas"}, "no call of 'Bas'"),  # whole names only
    ],
)  # fmt: skip
def test_tool_called_fails_with_what_was_called(raw, evidence):
    result = _check(raw)
    assert result.passed is False and evidence in result.evidence


def test_tool_called_on_calls_the_row_did_not_keep():
    b = TranscriptBuilder(max_calls=2)
    for name in ["Read", "Read", "Bash", "Bash", "Write"]:
        b.call(name, {"command": "x"})
    t = b.build()
    assert (t.total, len(t.events), dict(t.dropped)) == (5, 2, {"Bash": 2, "Write": 1})
    ok = check_transcript(Assertion("tool-called", "Bash"), Activity(t, "s"))
    assert ok.passed and "among the 3 calls not kept" in ok.evidence
    unknown = check_transcript(Assertion("tool-called", "Bash", args="x"), Activity(t, "s"))
    assert not unknown.passed and "2 call(s) of it were not kept" in unknown.evidence
    assert "3 of 5 tool calls not kept" in unknown.evidence


# --------------------------------------------------------------------------- skill-loaded / file-read
def test_skill_loaded_defaults_to_the_skill_under_test():
    assert _check({"type": "skill-loaded"}).passed
    assert _check({"type": "skill-loaded", "value": "xlsx"}).evidence == "loaded 'xlsx' (1 of 1 loaded: xlsx)"
    other = _check({"type": "skill-loaded", "value": "pdf"})
    assert not other.passed and other.evidence == "did not load 'pdf' (loaded: xlsx)"
    none = check_transcript(Assertion("skill-loaded"), Activity(Transcript(), "xlsx"))
    assert not none.passed and none.evidence == "did not load 'xlsx' (loaded: none)"


@pytest.mark.parametrize(
    "value,passed",
    [
        ("data.csv", True),  # a suffix at a path boundary
        ("project/data.csv", True),
        ("/w/project/data.csv", True),
        ("./data.csv", True),
        ("xlsx/SKILL.md", True),  # a skill file, as the skill tool reads it
        ("scripts/fill.py", True),  # named by a command
        ("fill.py", True),
        ("ata.csv", False),  # not at a boundary
        ("fill.p", False),
        ("report.csv", False),
    ],
)
def test_file_read(value, passed):
    result = _check({"type": "file-read", "value": value})
    assert result.passed is passed, result.evidence
    if not passed:
        assert result.evidence.startswith(f"no read of {value!r} among 2 read(s) and 1 command(s)")


def test_no_transcript_fails_every_kind_with_the_reason():
    act = Activity(Transcript.unavailable("gemini --output-format json shows tool counts only"), "x", ["x"])
    for raw in ({"type": "tool-called", "value": "Bash"}, {"type": "skill-loaded"}, {"type": "file-read", "value": "a"}):
        r = _check(raw, act)
        assert not r.passed and r.evidence == "not graded: gemini --output-format json shows tool counts only"


def test_checker_is_the_check_bound_to_one_answer():
    check = checker(ACTIVITY)
    assert check(Assertion("tool-called", "Read")).passed
    assert check(Assertion("tool-called", "Bash", args="nope")).to_dict()["args"] == "nope"
    with pytest.raises(ValueError):
        check(Assertion("contains", "x"))


# --------------------------------------------------------------------------- parsing and refusal
def test_tests_files_declare_the_new_kinds():
    meta = parse_meta({"cases": [{"id": "c", "input": "go", "assert": [
        {"type": "tool-called", "value": "Bash", "args": "scripts/fill.py"},
        {"type": "skill-loaded"}, {"type": "skill-loaded", "value": "pdf"}, {"type": "file-read", "value": "a.md"}]}]})  # fmt: skip
    a = meta.cases[0].asserts
    assert [(x.type, x.value, x.args) for x in a] == [
        ("tool-called", "Bash", "scripts/fill.py"), ("skill-loaded", None, None), ("skill-loaded", "pdf", None),
        ("file-read", "a.md", None)]  # fmt: skip
    assert a[0].to_dict() == {"type": "tool-called", "value": "Bash", "args": "scripts/fill.py"}


@pytest.mark.parametrize(
    "raw,message",
    [
        ({"type": "tool-called"}, "'tool-called' needs a tool name"),
        ({"type": "tool-called", "value": "x" * 101}, "'tool-called' needs a tool name"),
        ({"type": "tool-called", "value": "Bash", "args": ""}, "'args' must be a non-empty string"),
        ({"type": "tool-called", "value": "Bash", "args": ["a"]}, "'args' must be a non-empty string"),
        ({"type": "contains", "value": "x", "args": "a"}, "'args' is only for tool-called"),
        ({"type": "skill-loaded", "value": 3}, "'skill-loaded' takes a skill name"),
        ({"type": "skill-loaded", "value": " "}, "'skill-loaded' takes a skill name"),
        ({"type": "file-read"}, "'file-read' needs a non-empty string value"),
    ],
)
def test_bad_declarations_are_one_line(raw, message):
    with pytest.raises(CasesError) as exc:
        parse_assertion(raw, "cases[0].assert[0]")
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_inject_calls_refuse_them_agents_and_catalog_take_them():
    case = Case("c", "go", (Assertion("tool-called", "Bash"),))
    with pytest.raises(UpskillError) as exc:
        _check_workspace_cases([case], True, False, HarnessOptions())
    assert str(exc.value) == (
        "case 'c': 'tool-called' grades the tool calls an answer made, and a --model call in inject mode "
        "makes none; evaluate it with --agent or --mode catalog"
    )
    with pytest.raises(UpskillError):
        _check_workspace_cases([case], True, True, HarnessOptions(), ("inject", "catalog"))
    _check_workspace_cases([case], False, True, HarnessOptions())  # --agent only
    _check_workspace_cases([case], True, False, HarnessOptions(), ("catalog",))  # --mode catalog


# --------------------------------------------------------------------------- the judge's summary
def test_judge_summary_one_line_per_call():
    t = _transcript(("Bash", {"command": "python fill.py\nsecond line"}, "done\n"), ("Read", {"file_path": "a"}, None))
    assert judge_summary(t) == (
        '1. Bash {"command": "python fill.py\\nsecond line"} -> done\\n\n'
        '2. Read {"file_path": "a"}'
    )
    b = TranscriptBuilder()
    b.call("Bash", {"command": "false"}, "x")
    b.result("x", "exit 1", error=True)
    assert judge_summary(b.build()) == '1. Bash {"command": "false"} -> error: exit 1'
    assert judge_summary(Transcript()) == "(no tool calls)"
    assert judge_summary(Transcript.unavailable("no transcript for cmd: agents")) == (
        "(no transcript: no transcript for cmd: agents)"
    )


@pytest.mark.parametrize("budget", [200, 1_000, 8_000])
def test_judge_summary_stays_in_its_budget_and_says_what_it_left_out(budget):
    calls = [("Bash", {"command": "x" * 5_000}, "y" * 5_000)] * 100
    summary = judge_summary(_transcript(*calls), max_chars=budget)
    assert len(summary) <= budget
    last = summary.splitlines()[-1]
    assert last.startswith("… truncated: ") and last.endswith("more call(s) of 100")
    shown = len(summary.splitlines()) - 1
    assert last == f"… truncated: {100 - shown} more call(s) of 100"
    assert all(len(line) < 620 for line in summary.splitlines())


def test_hostile_transcripts_are_bounded_in_time_and_memory():
    huge = "A" * (50 * 1024 * 1024)
    tracemalloc.start()
    t0 = time.perf_counter()
    b = TranscriptBuilder()
    b.call("Bash", {"command": huge, "list": list(range(100_000)), "nested": {"k": [huge, huge]}}, "big")
    b.result("big", huge)
    b.result("big", [{"type": "text", "text": huge}] * 1000)
    for i in range(100_000):
        b.call(f"tool{i % 500}", {"i": i})
    t = b.build()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 20_000_000  # the 50 MB is never copied; 100,000 calls keep 100
    assert (t.total, len(t.events)) == (100_001, 100)
    assert len(t.dropped) == 51 and dict(t.dropped)["(other)"] > 0  # 50 names, the rest summed
    row = t.to_json()
    summary = judge_summary(t)
    r = check_transcript(Assertion("tool-called", "tool499", args="x"), Activity(t, "s"))
    assert time.perf_counter() - t0 < 30
    assert len(row) < 200_000 and len(summary) <= 8_000 and not r.passed
    assert json.loads(row)["calls"][0]["arguments_cut"] is True


def test_bounded_json_walks_only_what_fits():
    text, cut = bounded_json({"a": "x" * 10, "b": list(range(1_000_000))}, 100)
    assert cut and len(text) <= 100 and CUT_MARK in text
    assert bounded_json({"a": [1, None, True]}, 100) == ('{"a": [1, null, true]}', False)
    deep: object = "leaf"
    for _ in range(60):
        deep = [deep]
    text, cut = bounded_json(deep, 10_000)
    assert cut and text.startswith("[" * 32 + '"' + CUT_MARK)


def test_a_transcript_read_back_from_its_row():
    row = FILL.to_json()
    back = Transcript.from_json(row)
    assert [e.name for e in back.events] == [e.name for e in FILL.events] and back.total == 4
    assert check_transcript(Assertion("tool-called", "Bash", args="fill.py"), Activity(back, "x")).passed
    for bad in ("", "not json", "[1]", '{"calls": "x"}', '{"calls": [1, {"name": 3}], "total": true}'):
        t = Transcript.from_json(bad)
        assert isinstance(t, Transcript)


def test_workspace_folders_are_shown_relative():
    b = TranscriptBuilder()
    b.call("Bash", {"command": "cd /w/ws/project && cat /w/ws/project/a.txt /w/ws/project2/b /w/ws/home/.rc"}, "c")
    b.result("c", "/w/ws/project/a.txt: ok")
    row = json.loads(b.build().to_json(folders={"/w/ws/project": ".", "/w/ws": "<workspace>"}))
    assert json.loads(row["calls"][0]["arguments"]) == {
        "command": "cd . && cat a.txt <workspace>/project2/b <workspace>/home/.rc"
    }
    assert row["calls"][0]["result"] == "a.txt: ok"


def test_a_failed_call_is_not_a_call():
    """Issue 46: a baseline whose skill load failed ("Unknown skill") must not pass tool-called."""
    b = TranscriptBuilder()
    b.call("Skill", {"skill": "hello-skill"}, "c0")
    b.result("c0", "<tool_use_error>Unknown skill: hello-skill</tool_use_error>", error=True)
    b.call("Bash", {"command": "ls"}, "c1")  # never answered: no result shown
    t = b.build()
    act = Activity(t, "hello-skill")
    skill = check_transcript(parse_assertion({"type": "tool-called", "value": "Skill"}, "t"), act)
    assert not skill.passed
    assert "failed" in skill.evidence and "Unknown skill" in skill.evidence
    bash = check_transcript(parse_assertion({"type": "tool-called", "value": "Bash"}, "t"), act)
    assert not bash.passed and "no result shown" in bash.evidence
    # The same call, answered without an error, counts.
    ok = TranscriptBuilder()
    ok.call("Skill", {"skill": "hello-skill"}, "c0")
    ok.result("c0", "Launching skill: hello-skill")
    called = parse_assertion({"type": "tool-called", "value": "Skill"}, "t")
    assert check_transcript(called, Activity(ok.build(), "x")).passed
    # tool-not-called still sees the attempt.
    assert not check_transcript(parse_assertion({"type": "tool-not-called", "value": "Skill"}, "t"), act).passed
