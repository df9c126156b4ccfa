"""Issue 36, build item 4: the evals.json dialects of agent-skill-eval and agent-skills-eval.

The fixtures under ``tests/dialect_fixtures/`` are written in the exact shapes of the real
example files (tardigrde/skill-evals ``examples/*/evals/evals.json``; darkrishabh/agent-skills-eval
``examples/*/evals/evals.json`` and its ``params`` / ``tool_assertions`` docs), in our own words.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from upskill_hub.cases import Case, CasesError, load_cases_file, parse_meta
from upskill_hub.lift.grading.transcript_checks import Activity, check_transcript
from upskill_hub.session.transcript import ToolEvent, Transcript

FIX = Path(__file__).parent / "dialect_fixtures"
ASE = FIX / "agent_skill_eval"
NAMES = ["commit-push-pr", "fix-failing-tests", "review-diff", "validate-config", "write-release-notes"]


def _load(name: str):
    return load_cases_file(ASE / "examples" / name / "evals" / "evals.json", base_dir=ASE / "skills" / name)


@pytest.mark.parametrize("name", NAMES)
def test_agent_skill_eval_examples_load_without_unknown_key_errors(name: str):
    meta = _load(name)
    assert meta.warnings == []  # every key of these files is read
    raw = json.loads((ASE / "examples" / name / "evals" / "evals.json").read_text())["evals"]
    # every entry is a case (negatives keep their assertions), negatives are trigger queries too
    assert [c.id for c in meta.cases] == [e["id"] for e in raw]
    assert [t.id for t in meta.triggers] == [e["id"] for e in raw if e.get("should_trigger") is False]
    for case, entry in zip(meta.cases, raw, strict=True):
        assert case.should_trigger is entry.get("should_trigger", True)
        assert case.force_skill is entry.get("force_skill_invocation", False)
        assert case.stage_files is entry.get("stage_files", False)
        assert len(case.asserts) == len(entry["assertions"])
        # input files are found next to the evals file and staged by their name, as agent-skill-eval does
        assert [rel for rel, _ in case.files] == [f.rsplit("/", 1)[-1] for f in entry["files"]]


def test_stage_files_and_force_are_kept_and_change_the_fingerprint():
    meta = _load("commit-push-pr")
    first = meta.cases[0]
    assert first.stage_files and first.force_skill
    assert first.files[0][0] == "sample_change.py" and "def retry" in first.files[0][1]
    # agent-skill-eval sends the prompt verbatim (the file is in the workspace); a model call gets it appended
    assert (
        first.input
        == json.loads((ASE / "examples/commit-push-pr/evals/evals.json").read_text())["evals"][0]["prompt"]
    )
    assert "File `sample_change.py`:" in first.prompt_for("baseline", "commit-push-pr", "inject")
    assert first.prompt_for("baseline", "commit-push-pr", "harness") == first.input
    assert first.git_repo and first.to_dict()["git_repo"] is True
    d = first.to_dict()
    assert d["stage_files"] is True and d["force_skill_invocation"] is True
    assert "stage_files" not in meta.cases[1].to_dict()


def test_force_skill_invocation_tells_only_the_with_skill_agent_run():
    (case,) = [c for c in _load("write-release-notes").cases if c.force_skill]
    # a model call (no workspace) gets the input file appended; an agent the prompt as written
    sent = case.prompt_for("baseline", "write-release-notes", "inject")
    assert sent.startswith(case.input) and "File `commits.txt`:" in sent
    assert (
        case.prompt_for("with_skill", "write-release-notes", "inject") == sent
    )  # in the system prompt already
    assert case.prompt_for("baseline", "write-release-notes", "catalog") == sent
    told = case.prompt_for("with_skill", "write-release-notes", "catalog")
    assert told == f"Use the $write-release-notes skill. {sent}"  # its `$`, as agent-skill-eval sends it
    assert (
        case.prompt_for("with_skill", "write-release-notes", "harness")
        == f"Use the $write-release-notes skill. {case.input}"
    )


def test_force_with_should_trigger_false_is_a_contradiction():
    bad = {"evals": [{"id": "x", "prompt": "p", "expected_output": "e", "assertions": ["a"],
                      "should_trigger": False, "force_skill_invocation": True}]}  # fmt: skip
    with pytest.raises(CasesError, match="force_skill_invocation cannot be true") as exc:
        parse_meta(bad)
    assert "'x'" in str(exc.value)


def test_negative_controls_keep_their_assertions_and_git_actions_are_turned_around():
    meta = _load("commit-push-pr")
    neg = next(c for c in meta.cases if not c.should_trigger)
    assert neg.id == "negative-control" and len(neg.asserts) == 5
    # branch, commit and push are git checks that must not have happened; the pull request the judge's
    assert [(a.type, a.value) for a in neg.asserts[:3]] == [
        ("git-branch-created", False), ("git-commit-created", False), ("git-pushed", False)]  # fmt: skip
    texts = [a.value for a in neg.asserts[3:]]
    assert "must NOT have happened" in texts[0] and "pull request" in texts[0]
    assert texts[-1] == "The answer shows commit hashes from the log"
    assert neg.to_dict()["should_trigger"] is False
    # positive cases are never turned around
    assert not any(a.value is False or "must NOT" in str(a.value) for c in meta.cases if c.should_trigger
                   for a in c.asserts)  # fmt: skip
    # a negative with no assertions stays a trigger query only (skill-creator's shape)
    m = parse_meta({"evals": [{"id": 1, "prompt": "p", "expectations": ["ok"]},
                              {"id": 2, "prompt": "q", "should_trigger": False, "expectations": []}]})  # fmt: skip
    assert [c.id for c in m.cases] == ["eval-1"] and [t.id for t in m.triggers] == ["eval-2"]


def test_agent_skills_eval_params_and_tool_assertions_are_read():
    folder = FIX / "agent_skills_eval" / "best-month"
    meta = load_cases_file(folder / "evals" / "evals.json", base_dir=folder)
    top, loads = meta.cases
    assert [a.type for a in top.asserts] == ["llm-rubric", "llm-rubric"]
    assert top.files == (("evals/files/sales.csv", "month,revenue\nApril,7\nMay,11\nJune,9\n"),)
    assert dict(loads.params) == {"temperature": 0.0, "max_tokens": 256}
    assert [(a.type, a.value, a.args, a.path) for a in loads.asserts] == [
        ("tool-called", "load_skill", None, None),
        ("tool-called", "load_skill", "best-month", "name"),
        ("tool-not-called", "read_skill_file", None, None),
    ]
    assert [t.id for t in meta.triggers] == ["negative"]
    # unknown keys: one warning for the file, each key once
    (w,) = meta.warnings
    assert (
        w == "evals.json keys upskill-hub does not use, ignored: 'params.reasoning_effort', 'runtime_checks'"
    )


def test_unknown_keys_are_one_warning_each_key_once():
    evals = {"defaults": {}, "evals": [
        {"id": f"e{i}", "prompt": "p", "assertions": ["a"], "tools": [], "captured_files": ["x"]} for i in range(3)
    ]}  # fmt: skip
    meta = parse_meta(evals)
    assert len(meta.cases) == 3
    assert meta.warnings == [
        "evals.json keys upskill-hub does not use, ignored: 'defaults', 'tools', 'captured_files'"
    ]


def test_input_files_resolve_against_the_evals_file_first_then_the_skill(tmp_path: Path):
    skill = tmp_path / "skill"
    (skill / "data").mkdir(parents=True)
    (skill / "data" / "x.txt").write_text("from the skill")
    suite = tmp_path / "suite"
    (suite / "data").mkdir(parents=True)
    (suite / "data" / "x.txt").write_text("from the evals file")
    (suite / "only-skill.json").write_text("{}")
    ev = {"evals": [{"id": "a", "prompt": "p", "assertions": ["ok"], "files": ["data/x.txt"]}]}
    (suite / "evals.json").write_text(json.dumps(ev))
    (case,) = load_cases_file(suite / "evals.json", base_dir=skill).cases
    assert case.files == (("data/x.txt", "from the evals file"),)
    (suite / "data" / "x.txt").unlink()
    (case,) = load_cases_file(suite / "evals.json", base_dir=skill).cases
    assert case.files == (("data/x.txt", "from the skill"),)


def _one_line_refusal(tmp_path: Path, entry: dict, *, files: dict[str, str] | None = None) -> str:
    skill = tmp_path / "skill"
    (skill / "evals" / "files").mkdir(parents=True, exist_ok=True)
    for rel, text in (files or {}).items():
        (skill / "evals" / rel).write_text(text)
    (skill / "evals" / "evals.json").write_text(json.dumps({"evals": [entry]}))
    with pytest.raises(CasesError) as exc:
        load_cases_file(skill / "evals" / "evals.json", base_dir=skill)
    text = str(exc.value)
    assert "\n" not in text and "'bad-case'" in text  # one line, naming the case
    return text


def test_hostile_stage_files_path_escaping_is_refused(tmp_path: Path):
    (tmp_path / "secret.txt").write_text("SECRET")
    entry = {"id": "bad-case", "prompt": "p", "expected_output": "e", "assertions": ["a"],
             "stage_files": True, "files": ["../../secret.txt"]}  # fmt: skip
    assert "SECRET" not in _one_line_refusal(tmp_path, entry)


def test_hostile_symlink_out_is_refused(tmp_path: Path):
    (tmp_path / "secret.txt").write_text("SECRET")
    (tmp_path / "skill" / "evals" / "files").mkdir(parents=True)
    (tmp_path / "skill" / "evals" / "files" / "link.txt").symlink_to(tmp_path / "secret.txt")
    entry = {"id": "bad-case", "prompt": "p", "expected_output": "e", "assertions": ["a"],
             "stage_files": True, "files": ["files/link.txt"]}  # fmt: skip
    text = _one_line_refusal(tmp_path, entry)
    assert "points outside" in text and "SECRET" not in text


@pytest.mark.parametrize(
    "params",
    [
        {"stop": "x" * 100_000},
        {"max_tokens": 10**30},
        {"temperature": 1e308},
        {"seed": 2**80},
        "fast",
        {"k": list(range(5_000))},
    ],
)
def test_hostile_params_are_refused(tmp_path: Path, params):
    entry = {"id": "bad-case", "prompt": "p", "assertions": ["a"], "params": params}
    text = _one_line_refusal(tmp_path, entry)
    assert len(text) < 400


@pytest.mark.parametrize(
    "ta",
    [
        {"type": "tool-call-count", "name": "x", "min": 1},
        {"type": "tool-arg-matches", "name": "x", "path": "q", "pattern": "a"},
        {"type": "tool-called"},
        {"type": "tool-arg-contains", "name": "x", "path": "../..", "value": "v"},
        {"type": "tool-called", "name": "x", "extra": 1},
    ],
)
def test_tool_assertions_without_equivalent_are_refused_not_dropped(tmp_path: Path, ta: dict):
    _one_line_refusal(tmp_path, {"id": "bad-case", "prompt": "p", "tool_assertions": [ta]})


def _activity(*events: ToolEvent) -> Activity:
    return Activity(transcript=Transcript(events=tuple(events), total=len(events)), skill="best-month")


def test_tool_not_called_and_argument_paths_grade_the_transcript():
    meta = parse_meta({"evals": [{"id": "t", "prompt": "p", "tool_assertions": [
        {"type": "tool-not-called", "name": "search"},
        {"type": "tool-arg-contains", "name": "search", "path": "query.terms[1]", "value": "TODO"},
    ]}]})  # fmt: skip
    not_called, arg_at = meta.cases[0].asserts
    search = ToolEvent(name="search", kind="other", arguments=json.dumps({"query": {"terms": ["FIXME", "all TODO items"]}}),
                       result="3 hits")  # fmt: skip
    other = ToolEvent(name="search", kind="other", arguments=json.dumps({"query": {"terms": ["TODO", "FIXME"]}}),
                      result="3 hits")  # fmt: skip
    assert check_transcript(not_called, _activity()).passed is True
    r = check_transcript(not_called, _activity(search))
    assert r.passed is False and "called anyway" in r.evidence
    assert check_transcript(arg_at, _activity(search)).passed is True
    # A call whose result says it failed is no call (issue 46): the arguments do not count.
    failed = ToolEvent(name="search", kind="other", arguments=search.arguments, result="timeout", error=True)
    assert check_transcript(arg_at, _activity(failed)).passed is False
    r = check_transcript(arg_at, _activity(other))  # TODO is there, but not at that path
    assert r.passed is False and "at 'query.terms[1]'" in r.evidence
    missing = Activity(transcript=Transcript(missing="this agent's output lists no tool calls"), skill="s")
    assert check_transcript(not_called, missing).passed is False  # no transcript never passes


def test_workspace_stages_files_in_git_when_asked(tmp_path: Path):
    from upskill_hub.lift.harness.workspace import Workspace

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    import subprocess

    case: Case = _load("commit-push-pr").cases[0]
    ws = Workspace.create(tmp_path, "w-")
    ws.write_files(case.files, git_stage=case.stage_files)
    out = subprocess.run(["git", "diff", "--cached", "--name-only"], cwd=ws.project, capture_output=True, text=True,
                         env=ws.env({}), check=True)  # fmt: skip
    assert out.stdout.split() == ["sample_change.py"]
    plain = Workspace.create(tmp_path, "p-")
    plain.write_files(case.files)
    assert not (plain.project / ".git").exists()
