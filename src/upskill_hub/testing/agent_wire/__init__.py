"""The agent CLIs' wire protocols for :mod:`upskill_hub.testing.agent_server`, one module each.

Each module exposes ``PROTOCOL``, a :class:`~upskill_hub.testing.agent_server.WireProtocol`:
which requests are its (method and path), how a request reads as an
:class:`~upskill_hub.testing.agent_server.AgentTurn`, and how a step is written back as that
API's (streamed) reply.
"""

from __future__ import annotations

from upskill_hub.testing.agent_server import WireProtocol

PROTOCOLS: list[WireProtocol] = []
