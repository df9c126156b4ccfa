"""Skill generation end to end against the scripted OpenAI-compatible server (real SDK).

The teacher script writes a skill that lacks one fact, then tests, then a refined skill
with the fact. The "student" answers with the facts it finds in its system prompt, so the
with-skill pass rate depends on the skill's content exactly as in a real eval.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from upskill_hub.cases import Assertion, Case
from upskill_hub.errors import UpskillError
from upskill_hub.generate import GenerateOptions, generate_skill
from upskill_hub.generate.loop import assign_holdout
from upskill_hub.generate.teacher import (
    SKILL_SYSTEM_PROMPT,
    TESTS_SYSTEM_PROMPT,
    Failure,
    build_skill,
    extract_skill_files,
    parse_cases,
    refine_request,
)
from upskill_hub.skill import Skill, load_skill
from upskill_hub.testing.llm_server import running_llm_server

KEYWORDS = ("alpha", "beta", "gamma", "delta")
HOLDOUT_INPUT = "Which switch turns on the second widget mode?"
CASES = [
    {
        "id": "set-alpha",
        "input": "What goes first in widget.toml?",
        "assert": [{"type": "contains", "value": "alpha"}],
    },
    {"id": "set-beta", "input": HOLDOUT_INPUT, "assert": [{"type": "icontains", "value": "BETA"}]},
    {
        "id": "set-gamma",
        "input": "Which widget mode is safe?",
        "assert": [{"type": "regex", "value": "gam+a"}],
    },
    {
        "id": "set-delta",
        "input": "How do widgets log?",
        "assert": [{"type": "contains-any", "value": ["delta", "epsilon"]}],
    },
]


def skill_answer(facts: list[str], name: str = "widget-config") -> str:
    lines = "\n".join(f"- Use `{f}` when configuring widgets." for f in facts)
    return (
        "Here is the skill.\n"
        f'<file path="SKILL.md">\n---\nname: {name}\ndescription: Configure widgets with widget.toml. '
        "Use when asked to set up or debug widgets.\nlicense: Apache-2.0\n---\n"
        f"# Widget configuration\n\n{lines}\n\nDetails in `references/modes.md`.\n</file>\n"
        '<file path="references/modes.md">\n# Modes\n\n```toml\nmode = 1\n```\n</file>\n'
    )


SKILL_V1 = skill_answer(["beta", "gamma", "delta"])  # lacks alpha (a train case)
SKILL_V2 = skill_answer(["alpha", "beta", "gamma", "delta"])
TESTS_ANSWER = "```json\n" + json.dumps({"cases": CASES}) + "\n```"


def student(system: str) -> str:
    found = [k for k in KEYWORDS if f"`{k}`" in system]
    return "Use " + ", ".join(found) + "." if found else "I am not sure; check the documentation."


class Teacher:
    """Scripted teacher + student; ``skill_replies`` are served in order to skill requests."""

    def __init__(self, skill_replies=(SKILL_V1, SKILL_V2), tests_replies=(TESTS_ANSWER,)) -> None:
        self.skill_replies = list(skill_replies)
        self.tests_replies = list(tests_replies)

    def __call__(self, system: str, messages: list[dict[str, str]], params: dict) -> str:
        if system == SKILL_SYSTEM_PROMPT:
            return self.skill_replies.pop(0) if len(self.skill_replies) > 1 else self.skill_replies[0]
        if system == TESTS_SYSTEM_PROMPT:
            return self.tests_replies.pop(0) if len(self.tests_replies) > 1 else self.tests_replies[0]
        return student(system)


def spec(server) -> str:
    return f"openai-compatible:scripted-model@{server.openai_base_url}"


def options(server, tmp_path: Path, **kw) -> GenerateOptions:
    base = dict(
        teacher=spec(server),
        output_dir=tmp_path / "skills",
        runs_dir=tmp_path / "runs",
        use_cache=False,
        num_cases=4,
        attempts=3,
    )
    base.update(kw)
    return GenerateOptions(**base)


def teacher_requests(server) -> list:
    return [r for r in server.completion_requests if r.system in (SKILL_SYSTEM_PROMPT, TESTS_SYSTEM_PROMPT)]


def test_holdout_choice_is_deterministic_and_about_a_quarter() -> None:
    cases = [Case(c["id"], c["input"], (Assertion("contains", "x"),)) for c in CASES]
    split = assign_holdout(cases)
    assert [c.id for c in split if c.split == "holdout"] == ["set-beta"]
    many = [Case(f"c{i}", "q", (Assertion("contains", "x"),)) for i in range(20)]
    assert sum(c.split == "holdout" for c in assign_holdout(many)) == 5
    assert assign_holdout(many) == assign_holdout(many)
    assert all(c.split == "train" for c in assign_holdout(many[:2]))


def test_generate_refines_on_train_failures_and_reports_holdout(tmp_path: Path) -> None:
    lines: list[str] = []
    with running_llm_server(Teacher()) as server:
        result = generate_skill("configure widgets", options(server, tmp_path), progress=lines.append)
        requests = server.completion_requests

    # The written skill is the refined one, spec-valid, with all cases and the holdout split.
    assert result.path == tmp_path / "skills" / "widget-config"
    loaded = load_skill(result.path, strict=True)
    assert loaded.ok and not loaded.problems, [str(p) for p in loaded.problems]
    assert "`alpha`" in loaded.skill.body
    assert (result.path / "references" / "modes.md").is_file()
    splits = {c.id: c.split for c in loaded.skill.meta.cases}
    assert splits == {"set-alpha": "train", "set-beta": "holdout", "set-gamma": "train", "set-delta": "train"}
    assert loaded.skill.meta.extra["generated_by"]["task"] == "configure widgets"
    assert loaded.skill.version == result.skill.version  # what was evaluated is what was written

    # Attempt 1: 0% -> 67% on train; attempt 2 (refined): 100%; holdout 0% -> 100%.
    assert [a.number for a in result.attempts] == [1, 2]
    a1, a2 = (a.scores[0] for a in result.attempts)
    assert (a1.baseline, round(a1.with_skill, 3), a1.n_cases) == (0.0, 0.667, 3)
    assert (a2.baseline, a2.with_skill) == (0.0, 1.0)
    assert result.best_attempt == 2
    assert result.holdout is not None and (result.holdout[0].baseline, result.holdout[0].with_skill) == (
        0.0,
        1.0,
    )
    assert (result.n_train, result.n_holdout) == (3, 1)

    # The holdout input never reached the teacher, and was evaluated only once per condition at the end.
    refine = [
        r
        for r in requests
        if r.system == SKILL_SYSTEM_PROMPT and r.messages[0]["content"].startswith("Revise")
    ]
    assert len(refine) == 1
    assert "What goes first in widget.toml?" in refine[0].messages[0]["content"]  # the train failure is shown
    assert "skill_meta.json" not in refine[0].messages[0]["content"]
    for r in requests:
        if r.system == SKILL_SYSTEM_PROMPT:
            assert HOLDOUT_INPUT not in json.dumps(r.messages)
    student_holdout = [
        r
        for r in requests
        if r.system not in (SKILL_SYSTEM_PROMPT, TESTS_SYSTEM_PROMPT)
        and r.messages[-1]["content"] == HOLDOUT_INPUT
    ]
    assert len(student_holdout) == 2  # baseline + with skill, once, after refinement

    # Calls: 2 skill + 1 tests + attempt1 (3 baseline + 3 with) + attempt2 (3 with) + holdout (2).
    assert len(requests) == 3 + 6 + 3 + 2
    # upskill-like progress
    text = "\n".join(lines)
    for needle in (
        "Generating skill with",
        "Generating test cases with",
        "Evaluating on",
        "(attempt 1)",
        "0% -> 67% (+67%)",
        "Refining skill",
        "(attempt 2)",
        "0% -> 100% (+100%)",
        "held-out",
    ):
        assert needle in text, needle
    report = json.loads(result.report_path.read_text())
    assert report["holdout"][0]["with_skill"] == 1.0 and report["best_attempt"] == 2


@pytest.mark.slow  # importing the anthropic SDK alone takes seconds on a loaded machine
def test_anthropic_teacher_through_the_anthropic_sdk(tmp_path: Path, monkeypatch) -> None:
    """A hosted teacher behind --base-url is also the default eval model, at the same URL."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-" + "k" * 24)
    with running_llm_server(Teacher()) as server:
        opts = options(server, tmp_path, teacher="sonnet", base_url=server.url)
        result = generate_skill("configure widgets", opts)
        paths = {r.path for r in server.completion_requests}
    assert paths == {"/v1/messages"}
    assert result.holdout[0].with_skill == 1.0 and result.attempts[-1].scores[0].model == "claude-sonnet-4-5"


def test_stops_early_when_all_train_cases_pass(tmp_path: Path) -> None:
    with running_llm_server(Teacher(skill_replies=(SKILL_V2,))) as server:
        result = generate_skill("configure widgets", options(server, tmp_path, attempts=3))
        refine = [r for r in server.completion_requests if r.messages[0]["content"].startswith("Revise")]
    assert len(result.attempts) == 1 and not refine


def test_malformed_teacher_output_is_retried_with_the_problem(tmp_path: Path) -> None:
    bad_name = skill_answer(["alpha", "beta", "gamma", "delta"], name="Widget Config!")  # slugified, fine
    replies = ("Sure! I would write a great skill about widgets.", bad_name)
    tests = (
        '```json\n{"cases": [{"input": "x", "assert": [{"type": "smells-like", "value": "y"}]}]}\n```',
        TESTS_ANSWER,
    )
    lines: list[str] = []
    with running_llm_server(Teacher(skill_replies=replies, tests_replies=tests)) as server:
        result = generate_skill("configure widgets", options(server, tmp_path), progress=lines.append)
        reqs = teacher_requests(server)
    assert result.skill.name == "widget-config"
    # The second skill request carries the bad answer and what was wrong with it.
    retry = [r for r in reqs if r.system == SKILL_SYSTEM_PROMPT and len(r.messages) == 3]
    assert retry and "no SKILL.md found" in retry[0].messages[2]["content"]
    retry_tests = [r for r in reqs if r.system == TESTS_SYSTEM_PROMPT and len(r.messages) == 3]
    assert retry_tests and "unknown assertion type 'smells-like'" in retry_tests[0].messages[2]["content"]
    assert any("asking again" in line for line in lines)


def test_teacher_that_never_complies_is_a_one_line_error_and_writes_nothing(tmp_path: Path) -> None:
    with running_llm_server(Teacher(skill_replies=("no skill here",))) as server:
        with pytest.raises(UpskillError) as exc:
            generate_skill("configure widgets", options(server, tmp_path))
        assert server.calls == 3  # first try + 2 retries
    msg = str(exc.value)
    assert "did not return a skill in the required format after 3 tries" in msg and "\n" not in msg
    assert not (tmp_path / "skills").exists()


def test_teacher_call_failure_is_one_line_error(tmp_path: Path) -> None:
    from upskill_hub.testing.llm_server import Fault

    with (
        running_llm_server(
            Teacher(), faults=[Fault.server_error(400, match="You write test cases")]
        ) as server,
        pytest.raises(UpskillError) as exc,
    ):
        generate_skill("configure widgets", options(server, tmp_path))
    msg = str(exc.value)
    assert "failed while writing test cases" in msg and "\n" not in msg
    assert not (tmp_path / "skills").exists()


def test_default_teacher_without_key_names_the_variable(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(UpskillError, match="ANTHROPIC_API_KEY"):
        generate_skill("t", GenerateOptions(output_dir=tmp_path / "skills", runs_dir=tmp_path / "runs"))
    assert not (tmp_path / "skills").exists()


def test_from_trace_sends_condensed_redacted_trace(tmp_path: Path) -> None:
    secret = "hf_" + "Zz9Yy8Xx7Ww6Vv5Uu4Tt3"
    trace = [
        {"role": "user", "content": "Configure the widgets please"},
        {"role": "tool", "content": f"error: alpha missing (token {secret})"},
        {"role": "assistant", "content": "Fixed by adding alpha."},
    ]
    p = tmp_path / "trace.json"
    p.write_text(json.dumps(trace))
    with running_llm_server(Teacher(skill_replies=(SKILL_V2,))) as server:
        result = generate_skill("configure widgets", options(server, tmp_path, source=p))
        first = teacher_requests(server)[0].messages[0]["content"]
    assert "<trace>" in first and "Fixed by adding alpha." in first and "(ERROR)" in first
    assert secret not in first
    assert result.path.is_dir()


def test_improve_existing_skill_keeps_its_cases_and_hides_holdout(tmp_path: Path) -> None:
    cases = assign_holdout(
        [
            Case(c["id"], c["input"], tuple(Assertion(a["type"], a["value"]) for a in c["assert"]))
            for c in CASES
        ]
    )
    from upskill_hub.cases import SkillMeta

    png = b"\x89PNG\r\n\x1a\n\x00\xff binary"
    existing = Skill.create(
        "widget-config",
        "Configure widgets. Use when asked about widgets.",
        "# Widgets\n\n- Use `beta`.\n",
        meta=SkillMeta(cases=cases),
        files={"assets/logo.png": png},
    )
    src = tmp_path / "skills" / "widget-config"
    existing.write(src)
    with running_llm_server(Teacher(skill_replies=(SKILL_V1, SKILL_V2))) as server:
        # Same destination without --force: refused before any call.
        with pytest.raises(UpskillError, match="already exists; pass --force"):
            generate_skill("add gamma and delta", options(server, tmp_path, source=src))
        assert server.calls == 0
        result = generate_skill("add gamma and delta", options(server, tmp_path, source=src, force=True))
        reqs = teacher_requests(server)
    assert all(r.system == SKILL_SYSTEM_PROMPT for r in reqs)  # no test generation: the skill had cases
    assert reqs[0].messages[0]["content"].startswith("Improve the existing skill")
    assert "- Use `beta`." in reqs[0].messages[0]["content"]
    for r in reqs:
        assert HOLDOUT_INPUT not in json.dumps(r.messages)
    assert load_skill(src, strict=True).ok and "`alpha`" in src.joinpath("SKILL.md").read_text()
    assert (src / "assets" / "logo.png").read_bytes() == png  # binary asset carried over, never sent
    assert result.n_holdout == 1


@pytest.mark.parametrize(
    ("kw", "task", "needle"),
    [
        ({"attempts": 0}, "t", "attempts must be at least 1"),  # OptionError: the CLI says --attempts
        ({}, "   ", "give a task"),
        ({"teacher": "nonsense-model"}, "t", "unknown model spec"),
        ({"eval_models": ["openai-compatible:m@http://127.0.0.1:9"]}, "t", "cannot reach model endpoint"),
        ({"source": "missing-trace.json"}, "t", "not found"),
        ({"name": "Bad--Name"}, "t", "name 'Bad--Name'"),
    ],
)
def test_bad_input_fails_before_any_call(tmp_path: Path, kw: dict, task: str, needle: str) -> None:
    with running_llm_server(Teacher()) as server:
        opts = options(server, tmp_path, **kw)
        if "source" in kw:
            opts.source = tmp_path / kw["source"]
        with pytest.raises(UpskillError) as exc:
            generate_skill(task, opts)
        assert server.calls == 0
    assert needle in str(exc.value) and "\n" not in str(exc.value)
    assert not (tmp_path / "skills").exists()


def test_cli_generate_prints_progress_and_json(tmp_path: Path) -> None:
    from upskill_hub.cli.app import app

    with running_llm_server(Teacher()) as server:
        result = CliRunner().invoke(
            app,
            [
                "generate",
                "configure widgets",
                "--model",
                spec(server),
                "--num-cases",
                "4",
                "-o",
                str(tmp_path / "out"),
                "--runs-dir",
                str(tmp_path / "runs"),
                "--no-cache",
                "--json",
            ],
        )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["name"] == "widget-config" and data["holdout"][0]["with_skill"] == 1.0
    assert "Generating skill with" in result.stderr and "Saved to" in result.stderr
    assert "with skill" in result.stderr and "held-out (1 case(s)" in result.stderr
    assert (tmp_path / "out" / "widget-config" / "SKILL.md").is_file()


def test_cli_error_is_one_line_without_traceback(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "upskill_hub.cli.app",
            "generate",
            "t",
            "--model",
            "nonsense-model",
            "-o",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error: unknown model spec") and "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------------- parsing units
def test_extract_skill_files_accepts_blocks_fences_and_bare_frontmatter() -> None:
    assert set(extract_skill_files(SKILL_V1)) == {"SKILL.md", "references/modes.md"}
    fenced = "Here:\n````markdown\n---\nname: x\ndescription: d\n---\n# T\n```bash\nls\n```\nend\n````\nBye"
    got = extract_skill_files(fenced)["SKILL.md"]
    assert got.startswith("---\nname: x") and "```bash\nls\n```\nend" in got and "Bye" not in got
    fenced3 = "```md\n---\nname: x\ndescription: d\n---\nbody\n```"
    assert extract_skill_files(fenced3)["SKILL.md"].rstrip().endswith("body")
    bare = "Sure.\n---\nname: x\ndescription: d\n---\nbody text\n"
    assert extract_skill_files(bare)["SKILL.md"].startswith("---\nname: x")
    assert extract_skill_files("no skill at all") == {}


def test_build_skill_normalises_and_validates() -> None:
    files = {"SKILL.md": "---\nname: My Skill\ndescription: does things\nuser-invocable: true\n---\nbody\n"}
    skill, problems = build_skill(files)
    assert problems == [] and skill.name == "my-skill" and "user-invocable" not in skill.frontmatter
    skill, problems = build_skill(files, name="forced-name")
    assert skill.name == "forced-name"
    _, problems = build_skill({"SKILL.md": "---\nname: x\n---\nbody\n"})
    assert problems and "description" in problems[0]
    _, problems = build_skill({**files, "../evil.md": "x"})
    assert problems and "only SKILL.md and files under references/" in problems[0]
    _, problems = build_skill({"SKILL.md": "---\nname: x\ndescription: " + "d" * 1100 + "\n---\nbody\n"})
    assert problems and "description" in problems[0]
    _, problems = build_skill({"SKILL.md": "no frontmatter"})
    assert problems and "frontmatter" in problems[0]


def test_parse_cases_shapes_and_errors() -> None:
    cases, _ = parse_cases(TESTS_ANSWER, min_cases=4)
    assert [c.id for c in cases] == [c["id"] for c in CASES]
    upskill = 'Cases: {"cases": [{"input": "build.toml for H100", "expected": {"contains": "9.0"}}]}'
    cases, _ = parse_cases(upskill)
    assert cases[0].asserts[0].value == "9.0"
    _, problems = parse_cases("nothing")
    assert "no JSON found" in problems[0]
    _, problems = parse_cases('[{"input": "a", "assert": [{"type": "regex", "value": "("}]}]')
    assert "does not compile" in problems[0]
    _, problems = parse_cases(TESTS_ANSWER, min_cases=5)
    assert "only 4 test case(s)" in problems[0]


def test_parse_cases_survives_a_teacher_answer_nested_without_bound() -> None:
    """Chatter around ``{[[[...]]]}`` 100,000 deep: a one-line problem, not a RecursionError."""
    answer = "Here you go: {" + '"cases": ' + "[" * 100_000 + "]" * 100_000 + "} hope it helps"
    cases, problems = parse_cases(answer)
    assert cases is None
    assert problems[0].startswith("no JSON found")


def test_refine_request_contains_failures_but_not_skill_meta() -> None:
    from upskill_hub.cases import SkillMeta

    cases = assign_holdout([Case(c["id"], c["input"], (Assertion("contains", "x"),)) for c in CASES])
    skill = Skill.create("w", "d", "# body\n", meta=SkillMeta(cases=cases))
    text = refine_request(
        "t", skill, [Failure("set-alpha", "What goes first?", ['contains "alpha": missing'], "a" * 5000)]
    )
    assert "What goes first?" in text and "[...]" in text and HOLDOUT_INPUT not in text
    assert "skill_meta.json" not in text


def test_a_dangling_symlink_at_the_destination_is_refused_without_force(tmp_path: Path) -> None:
    """``exists()`` follows links: a link to nothing was replaced without --force."""
    link = tmp_path / "skills" / "widget-config"
    link.parent.mkdir()
    link.symlink_to(tmp_path / "gone")
    with running_llm_server(Teacher()) as server:
        with pytest.raises(UpskillError, match="already exists; pass --force") as exc:
            generate_skill("configure widgets", options(server, tmp_path, name="widget-config"))
        assert server.calls == 0
    assert "\n" not in str(exc.value)
    assert link.is_symlink() and os.readlink(link) == str(tmp_path / "gone")
