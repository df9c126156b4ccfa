"""Test helpers that ship with the package: scripted servers that speak real wire formats.

They are used by our own tests and benchmarks, and by anyone who wants to exercise
upskill-hub (or any OpenAI/Anthropic client) without network access or spending tokens.
"""

__all__ = [
    "Fault",
    "LLMServerProcess",
    "RecordedRequest",
    "Reply",
    "ScriptedLLMServer",
    "llm_server_process",
    "running_llm_server",
]


def __getattr__(name: str) -> object:
    # Lazy, so `python -m upskill_hub.testing.llm_server` doesn't import the module twice.
    if name in __all__:
        from upskill_hub.testing import llm_server

        return getattr(llm_server, name)
    raise AttributeError(name)
