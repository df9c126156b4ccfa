"""The scripted agent's one script, whatever the CLI: load the skill, run the command, answer."""

from __future__ import annotations

from upskill_hub.testing.agent_server import AgentScript, AgentTurn, Answer, ToolCall, next_step

SCRIPT = AgentScript(skill="hello-skill", skill_file=".agents/skills/hello-skill/SKILL.md", command="touch out.txt")
OBJ = {"type": "object", "properties": {}}


def _schema(**props: dict) -> dict:
    return {"type": "object", "properties": props}


def test_the_skill_tool_comes_first_with_the_skills_name():
    tools = {"Bash": _schema(command={"type": "string"}), "Skill": _schema(skill={"type": "string"})}
    assert next_step(SCRIPT, AgentTurn(tools)) == ToolCall("Skill", {"skill": "hello-skill"})
    gemini = {"activate_skill": _schema(name={"type": "string"}), "run_shell_command": OBJ}
    assert next_step(SCRIPT, AgentTurn(gemini)) == ToolCall("activate_skill", {"name": "hello-skill"})


def test_without_a_skill_tool_the_skill_file_is_read_or_catted():
    read = {"read_file": _schema(absolute_path={"type": "string"}), "shell": OBJ}
    assert next_step(SCRIPT, AgentTurn(read)) == ToolCall("read_file", {"absolute_path": SCRIPT.skill_file})
    # Codex: only a shell tool, whose command is an argv array in some versions.
    argv = {"shell": _schema(command={"type": "array", "items": {"type": "string"}})}
    step = next_step(SCRIPT, AgentTurn(argv))
    assert step == ToolCall("shell", {"command": ["bash", "-lc", f"cat {SCRIPT.skill_file}"]})
    assert next_step(SCRIPT, AgentTurn({"exec_command": _schema(cmd={"type": "string"})})) == ToolCall(
        "exec_command", {"cmd": f"cat {SCRIPT.skill_file}"}
    )


def test_then_the_command_then_the_answer():
    tools = {"Skill": OBJ, "Bash": _schema(command={"type": "string"})}
    assert next_step(SCRIPT, AgentTurn(tools, results=1)) == ToolCall("Bash", {"command": "touch out.txt"})
    assert next_step(SCRIPT, AgentTurn(tools, results=2)) == Answer(SCRIPT.answer)


def test_a_request_without_tools_is_a_side_question():
    assert next_step(SCRIPT, AgentTurn({})) == Answer(SCRIPT.side_answer)
