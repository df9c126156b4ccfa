"""Test helpers that ship with the package: scripted servers that speak real wire formats.

They are used by our own tests and benchmarks, and by anyone who wants to exercise
upskill-hub (or any OpenAI/Anthropic client) without network access or spending tokens.
"""

from upskill_hub.testing.llm_server import (
    Fault,
    RecordedRequest,
    Reply,
    ScriptedLLMServer,
    running_llm_server,
)

__all__ = ["Fault", "RecordedRequest", "Reply", "ScriptedLLMServer", "running_llm_server"]
