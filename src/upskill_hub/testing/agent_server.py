"""A scripted model server that real agent CLIs talk to: Claude Code, Codex, Gemini CLI, OpenCode.

Each CLI speaks its provider's wire protocol, streamed: Anthropic Messages with SSE (Claude
Code), OpenAI Responses with SSE (Codex), Gemini ``streamGenerateContent?alt=sse`` (Gemini
CLI), and OpenAI Chat Completions (OpenCode through an OpenAI-compatible provider). One
protocol module per wire format (:mod:`upskill_hub.testing.agent_wire`) reads a request
into an :class:`AgentTurn` (the tools offered, the tool results so far) and writes a step
as that API's reply; the step itself comes from one script for all four, :func:`next_step`:

1. load the skill: the CLI's skill tool with the skill's name when it offers one, else a
   read of ``skill_file`` (a read tool, or ``cat`` through the shell tool);
2. run ``command`` through the shell tool (the test's command writes a file);
3. answer ``answer``.

The model tries the load in both conditions, as a model that heard of the skill would: with
the skill installed the load succeeds; in the baseline it fails, and the CLI must report that
failure (the harness then counts no load). Requests that offer no tools at all (titles,
summaries, a CLI's own side questions) get ``side_answer``.

Everything else (plain ``/v1/chat/completions`` without tools, ``/v1/messages`` without
``stream``, faults, recording) is :class:`~upskill_hub.testing.llm_server.ScriptedLLMServer`'s.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from upskill_hub.testing.llm_server import RecordedRequest, ScriptedLLMServer, _mask_headers
from upskill_hub.testing.wire import _json

#: Tool names, per role, across the four CLIs (their own names for the same job).
SKILL_TOOLS = ("Skill", "activate_skill", "skill")
READ_TOOLS = ("Read", "read_file", "read")
SHELL_TOOLS = ("Bash", "run_shell_command", "bash", "shell", "exec_command", "shell_command", "local_shell")


@dataclass(frozen=True)
class AgentScript:
    """What the scripted model does in every conversation."""

    skill: str  # the skill it tries to load
    skill_file: str  # read instead when no skill tool is offered (".agents/skills/NAME/SKILL.md")
    command: str  # the shell command of step 2
    answer: str = "Done: the file is written."
    side_answer: str = "Scripted session"


@dataclass(frozen=True)
class ToolCall:
    """A step that calls one tool."""

    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Answer:
    """A step that ends the turn with text."""

    text: str


Step = ToolCall | Answer


@dataclass
class AgentTurn:
    """What a protocol module read from one request."""

    #: name -> JSON schema of the tool's parameters (``{}`` when the request gives none).
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Tool results in the conversation so far.
    results: int = 0
    #: The model named in the request (echoed in replies).
    model: str = "scripted-model"


class WireProtocol(Protocol):
    """One wire format: which requests are its, how to read them, how to answer."""

    name: str

    def matches(self, method: str, path: str) -> bool: ...

    def read(self, body: dict[str, Any], path: str) -> AgentTurn: ...

    def reply(self, step: Step, turn: AgentTurn, n: int) -> tuple[int, list[tuple[str, str]], bytes]: ...


def _param(schema: dict[str, Any], names: Sequence[str]) -> tuple[str, dict[str, Any]] | None:
    props = schema.get("properties") if isinstance(schema, dict) else None
    props = props if isinstance(props, dict) else {}
    for n in names:
        if n in props:
            return n, props[n] if isinstance(props[n], dict) else {}
    return None


def _args(schema: dict[str, Any], names: Sequence[str], value: str, *, shell: bool = False) -> dict[str, Any]:
    """Arguments for a tool whose parameter is one of ``names`` (the first that its schema has;
    ``names[0]`` when it lists none); a shell tool whose parameter is an array gets ``bash -lc``."""
    found = _param(schema, names)
    key, prop = found if found is not None else (names[0], {})
    if shell and prop.get("type") == "array":
        return {key: ["bash", "-lc", value]}
    return {key: value}


def next_step(script: AgentScript, turn: AgentTurn) -> Step:
    """The script's next step for a conversation that has seen ``turn.results`` tool results."""
    tools = turn.tools
    if not tools:
        return Answer(script.side_answer)
    shell = next((t for t in SHELL_TOOLS if t in tools), None)
    if turn.results == 0:
        skill_tool = next((t for t in SKILL_TOOLS if t in tools), None)
        if skill_tool is not None:
            return ToolCall(skill_tool, _args(tools[skill_tool], ("skill", "name", "command"), script.skill))
        read = next((t for t in READ_TOOLS if t in tools), None)
        if read is not None:
            keys = ("file_path", "absolute_path", "filePath", "path")
            return ToolCall(read, _args(tools[read], keys, script.skill_file))
        if shell is not None:
            return ToolCall(shell, _args(tools[shell], ("command", "cmd"), f"cat {script.skill_file}", shell=True))
        return Answer(script.answer)
    if turn.results == 1 and shell is not None:
        return ToolCall(shell, _args(tools[shell], ("command", "cmd"), script.command, shell=True))
    return Answer(script.answer)


def sse(events: Sequence[tuple[str | None, Any]]) -> bytes:
    """Server-sent events: ``event: NAME`` (when named) and ``data: JSON`` per event."""
    out = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        body = data if isinstance(data, str) else json.dumps(data)
        out.append(f"{head}data: {body}\n\n")
    return "".join(out).encode()


def sse_reply(events: Sequence[tuple[str | None, Any]]) -> tuple[int, list[tuple[str, str]], bytes]:
    return 200, [("content-type", "text/event-stream"), ("cache-control", "no-cache")], sse(events)


class ScriptedAgentServer(ScriptedLLMServer):
    """:class:`ScriptedLLMServer` plus the agent CLIs' streaming protocols, playing one :class:`AgentScript`."""

    def __init__(self, agent_script: AgentScript, protocols: Sequence[WireProtocol] | None = None,
                 **kw: Any) -> None:  # fmt: skip
        super().__init__(**kw)
        self.agent_script = agent_script
        if protocols is None:
            from upskill_hub.testing.agent_wire import PROTOCOLS

            protocols = PROTOCOLS
        self.protocols = list(protocols)
        #: Steps served, in order: ``(protocol, step)`` (tests check what each CLI was told).
        self.steps: list[tuple[str, Step]] = []

    async def _dispatch(self, method: str, target: str, raw_headers: list[tuple[bytes, bytes]],
                        raw_body: bytes) -> tuple[int, list[tuple[str, str]], bytes] | None:  # fmt: skip
        path = target.split("?", 1)[0].rstrip("/")
        proto = next((p for p in self.protocols if p.matches(method, path)), None)
        if proto is None:
            return await super()._dispatch(method, target, raw_headers, raw_body)
        try:
            body = json.loads(raw_body.decode("utf-8", "replace")) if raw_body else {}
        except json.JSONDecodeError:
            body = None
        record = RecordedRequest(method, target, _mask_headers(raw_headers), body, proto.name,
                                 started=time.monotonic())  # fmt: skip
        with self._lock:
            self._requests.append(record)
            n = len(self.steps) + 1
        try:
            if not isinstance(body, dict):
                return _json(400, {"error": {"message": "body must be a JSON object"}})
            turn = proto.read(body, target)
            step = next_step(self.agent_script, turn)
            with self._lock:
                self.steps.append((proto.name, step))
            if self.latency_s > 0:
                import asyncio

                await asyncio.sleep(self.latency_s)
            return proto.reply(step, turn, n)
        finally:
            record.finished = time.monotonic()


@contextlib.contextmanager
def running_agent_server(agent_script: AgentScript, **kw: Any) -> Iterator[ScriptedAgentServer]:
    """Start a :class:`ScriptedAgentServer` on 127.0.0.1 (a free port) and stop it afterwards."""
    server = ScriptedAgentServer(agent_script, **kw).start()
    try:
        yield server
    finally:
        server.stop()
