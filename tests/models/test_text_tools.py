"""The local model's tool use through the documented text protocol (models/text_tools.py)."""

from __future__ import annotations

import json
from pathlib import Path

from upskill_hub.cases import parse_meta
from upskill_hub.lift.api import run_eval
from upskill_hub.lift.prepare import EvalOptions
from upskill_hub.models.base import Message, ToolCall, ToolSpec
from upskill_hub.models.text_tools import parse_calls, protocol_system, render_messages
from upskill_hub.rundir import read_results
from upskill_hub.skill import Skill

TOOLS = [ToolSpec("load_skill", "Load a skill.", {"type": "object", "properties": {"name": {"type": "string"}}})]


def test_protocol_round_trip() -> None:
    system = protocol_system("Base.", TOOLS)
    assert system.startswith("Base.\n") and '- CALL load_skill {"name": "..."}: Load a skill.' in system
    assert parse_calls('Sure.\nCALL load_skill {"name": "pdf"}\n', TOOLS) == (
        ToolCall("text_call_1", "load_skill", {"name": "pdf"}),
    )
    assert parse_calls("CALL rm_rf {}", TOOLS) == ()  # only offered tools
    assert parse_calls("CALL load_skill {not json", TOOLS) == ()  # not a well-formed call line
    assert parse_calls("I would call load_skill here", TOOLS) == ()
    call = ToolCall("c1", "load_skill", {"name": "pdf"})
    text = render_messages([Message("user", "q"), Message("assistant", "", tool_calls=(call,)),
                            Message("tool", "BODY", tool_call_id="c1")])  # fmt: skip
    assert [(m.role, m.content) for m in text] == [
        ("user", "q"), ("assistant", 'CALL load_skill {"name": "pdf"}'), ("user", "RESULT of load_skill:\nBODY"),
    ]  # fmt: skip


def test_local_model_catalog_eval_through_the_text_protocol(scripted_gguf: Path, tmp_path: Path) -> None:
    cases = [{"id": "a", "input": "LOADME:greeter hello", "assert": [{"type": "contains", "value": "BANANA"}]},
             {"id": "b", "input": "hello", "assert": [{"type": "contains", "value": "BANANA"}]}]  # fmt: skip
    skill = Skill.create("greeter", "Greets.", "Always say BANANA.", meta=parse_meta({"schema_version": 1, "cases": cases}))
    path = skill.write(tmp_path / "greeter")
    res = run_eval(path, [f"local:{scripted_gguf}"],
                   EvalOptions(output_dir=tmp_path / "out", plots=False, modes=("catalog",), distractors="none"))  # fmt: skip
    rows = {(r.condition, r.case_id): r for r in read_results(res.run_dir)}
    hit = rows[("with_skill", "a")]
    assert hit.error is None and hit.triggered is True and json.loads(hit.loaded) == ["greeter"] and hit.passed
    assert hit.turns == 2
    assert rows[("with_skill", "b")].triggered is False and not rows[("with_skill", "b")].passed
    # The baseline's catalog lacks the skill: load_skill answers with an error and the answer goes on.
    base = rows[("baseline", "a")]
    assert base.error is None and base.triggered is False and base.turns == 2 and not base.passed
