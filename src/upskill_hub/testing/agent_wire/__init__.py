"""The agent CLIs' wire protocols for :mod:`upskill_hub.testing.agent_server`, one module each.

Each module exposes ``PROTOCOL``, a :class:`~upskill_hub.testing.agent_server.WireProtocol`:
which requests are its (method and path), how a request reads as an
:class:`~upskill_hub.testing.agent_server.AgentTurn`, and how a step is written back as that
API's (streamed) reply.

* :mod:`.anthropic`: Anthropic Messages, SSE (Claude Code; OpenCode's ``anthropic/`` models);
* :mod:`.responses`: OpenAI Responses, SSE (Codex; OpenCode's ``openai/`` models);
* :mod:`.gemini`: Gemini ``streamGenerateContent?alt=sse`` and ``generateContent`` (Gemini CLI);
* :mod:`.chat`: OpenAI Chat Completions, SSE (OpenCode's ``openai-compatible/`` models).
"""

from __future__ import annotations

from upskill_hub.testing.agent_server import WireProtocol
from upskill_hub.testing.agent_wire import anthropic, chat, gemini, responses

#: Every protocol, so one server answers all four CLIs (their paths do not overlap).
PROTOCOLS: list[WireProtocol] = [anthropic.PROTOCOL, responses.PROTOCOL, gemini.PROTOCOL, chat.PROTOCOL]
