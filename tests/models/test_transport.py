"""The HTTP transport under the SDKs: aiohttp by default, httpx on request, same answers."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from cli_runner import run_cli

from upskill_hub.errors import UpskillError
from upskill_hub.models import GenerationParams, Message, create_client
from upskill_hub.models.transport import TRANSPORT_ENV, transport_name
from upskill_hub.testing.llm_server import Reply, running_llm_server

KEY = "sk-" + "test-secret-0123456789abcdefghij"


def _script(system: str, messages: list[dict], params: dict) -> Reply:
    return Reply(f"answer to {messages[-1]['content']}", cached_tokens=1)


def _complete_all(provider: str, srv, n: int) -> list:
    """``n`` concurrent calls through one client; the completions in call order."""
    if provider == "anthropic":
        client = create_client("haiku", base_url=srv.url, api_key=KEY, max_retries=0, connections=n)
    else:
        client = create_client(
            "openai:gpt-4.1-mini", base_url=srv.openai_base_url, api_key=KEY, max_retries=0, connections=n
        )

    async def go():
        try:
            return await asyncio.gather(
                *(
                    client.complete("sys", [Message("user", f"q{i}")], GenerationParams(max_tokens=32))
                    for i in range(n)
                )
            )
        finally:
            await client.aclose()

    return asyncio.run(go())


def test_aiohttp_is_the_default_and_the_variable_selects_httpx(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TRANSPORT_ENV, raising=False)
    assert transport_name() == "aiohttp"
    monkeypatch.setenv(TRANSPORT_ENV, " HTTPX ")
    assert transport_name() == "httpx"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_both_transports_return_the_same_completions(provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    got = {}
    for name in ("httpx", "aiohttp"):
        monkeypatch.setenv(TRANSPORT_ENV, name)
        with running_llm_server(_script, latency_s=0.02) as srv:
            got[name] = _complete_all(provider, srv, 12)
            assert srv.calls == 12
    for old, new in zip(got["httpx"], got["aiohttp"], strict=True):
        assert (new.text, new.usage, new.finish_reason, new.model) == (
            old.text,
            old.usage,
            old.finish_reason,
            old.model,
        )
    assert got["aiohttp"][3].text == "answer to q3" and got["aiohttp"][3].usage.cached_tokens == 1


def test_unknown_transport_is_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TRANSPORT_ENV, "curl")
    with pytest.raises(UpskillError) as info:
        create_client("openai:gpt-4.1-mini", base_url="http://127.0.0.1:9/v1", api_key=KEY)
    assert str(info.value) == f"{TRANSPORT_ENV} must be one of aiohttp, httpx, got 'curl'"


def test_eval_with_unknown_transport_fails_before_any_call(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    from upskill_hub.cases import parse_meta
    from upskill_hub.skill import Skill

    cases = parse_meta(
        {"cases": [{"id": "a", "input": "hi", "assert": [{"type": "contains", "value": "x"}]}]}
    )
    skill = Skill.create("tiny", "A tiny skill. Use in tests.", "# Tiny\n", meta=cases).write(
        tmp_path / "tiny"
    )
    monkeypatch.setenv(TRANSPORT_ENV, "curl")
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))
    out_dir = tmp_path / "runs"
    with running_llm_server() as srv:
        code, _out, err = run_cli(
            [
                "eval",
                str(skill),
                "--model",
                f"openai-compatible:toy@{srv.openai_base_url}",
                "--output",
                str(out_dir),
            ],
            capsys,
            monkeypatch,
        )
        assert srv.calls == 0
    assert code != 0
    assert err.strip().splitlines() == [f"Error: {TRANSPORT_ENV} must be one of aiohttp, httpx, got 'curl'"]
    assert not out_dir.exists() or not any(out_dir.iterdir())
