"""Helpers for eval tests: a small skill on disk, an in-process ModelClient, shared fixtures.

The in-process client stands in for a provider only in unit tests of the runner's own
logic (planning, concurrency, resume, cache). Everything that must go through the real
SDKs (tests/lift/test_scripted_servers.py) uses the scripted HTTP server instead. The
fixtures at the end are made available by the conftest of each eval test folder.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from upskill_hub.cases import parse_meta
from upskill_hub.models.base import Completion, GenerationParams, Message, ModelCallError, Usage
from upskill_hub.skill import Skill

SKILL_BODY = "# Greeting skill\n\nAlways greet with the word BANANA and answer in JSON when asked.\n"

CASES = [
    {"id": "greet", "input": "Say hello.", "assert": [{"type": "contains", "value": "BANANA"}]},
    {"id": "json", "input": "Give JSON.", "assert": [{"type": "is-json"}, {"type": "icontains", "value": "banana"}]},
    {"id": "plain", "input": "Just talk.", "assert": [{"type": "not-contains", "value": "ERROR"}]},
]


def make_skill(root: Path, cases: list | None = None, name: str = "greeting") -> Path:
    meta = parse_meta({"schema_version": 1, "cases": CASES if cases is None else cases})
    skill = Skill.create(name, "Greets with BANANA. Use when greeting.", SKILL_BODY, meta=meta)
    return skill.write(root / name)


#: The widget skill of the new-vs-old tests: the new body adds the one instruction the
#: scripted model answers to (WX-42), so the new version lifts the pass rate.
WIDGET_OLD_BODY = "# Widget answers\n\nAnswer in one short sentence.\n"
WIDGET_NEW_BODY = WIDGET_OLD_BODY + "End every answer with the code WX-42.\n"


def widget_cases(n: int) -> list[dict]:
    return [{"id": f"q{i}", "input": f"Question {i} about widgets.", "assert": [{"type": "contains", "value": "WX-42"}]}
            for i in range(n)]  # fmt: skip


def widget_script(system: str, messages: list[dict[str, str]], params: dict) -> str:
    """The scripted model: it says WX-42 only when its system prompt asks for it."""
    return "A widget answer. WX-42" if "WX-42" in system else "A widget answer."


def write_widget_skill(folder: Path, body: str, n_cases: int) -> Path:
    meta = parse_meta({"schema_version": 1, "cases": widget_cases(n_cases)})
    return Skill.create("widget-answers", "Answers widget questions. Use for widgets.", body, meta=meta).write(folder)


class InProcessClient:
    """A ModelClient whose answers come from ``answer(system, user_text, n)``."""

    provider = "test"
    endpoint = "in-process://test"

    def __init__(
        self,
        model: str = "toy",
        answer: Callable[[str, str, int], str] | None = None,
        latency: float = 0.0,
        default_concurrency: int = 4,
    ) -> None:
        self.model = model
        self.answer = answer or (lambda system, user, n: "BANANA {}" if "BANANA" in system else "hi")
        self.latency = latency
        self.default_concurrency = default_concurrency
        self.calls: list[tuple[str, list[Message], GenerationParams]] = []
        self.active = 0
        self.max_active = 0

    async def complete(self, system: str, messages: list[Message], params: GenerationParams) -> Completion:
        self.calls.append((system, messages, params))
        n = len(self.calls)
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        try:
            await asyncio.sleep(self.latency)
            text = self.answer(system, messages[-1].content, n)
        finally:
            self.active -= 1
        if text.startswith("!error"):
            raise ModelCallError(f"HTTP 500 from {self.endpoint}", retryable=True, status=500)
        return Completion(text=text, usage=Usage(len(system) // 4 + 5, len(text) // 4 + 1, 0), latency_s=self.latency,
                          finish_reason="stop", model=self.model)

    async def aclose(self) -> None:
        pass


@pytest.fixture
def skill_dir(tmp_path: Path) -> Path:
    return make_skill(tmp_path / "skills")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Never touch the user's real response cache from tests."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(cache))
    return cache
