"""Faults from a real (scripted) server through the real SDKs: retried, timed, redacted.

Every failure ends as a one-line :class:`ModelCallError` without the API key in it, or as
a success after the retries the policy allows; the number of requests the server saw
proves which.
"""

from __future__ import annotations

import asyncio
import email.utils
import time

import pytest

from upskill_hub.models import GenerationParams, Message, ModelCallError, create_client
from upskill_hub.models.transport import TRANSPORT_ENV
from upskill_hub.testing.llm_server import Fault, running_llm_server

KEY = "sk-" + "test-secret-0123456789abcdefghij"
PROVIDERS = ["openai", "anthropic"]


@pytest.fixture(autouse=True, params=["aiohttp", "httpx"])
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every fault through both transports: the default (aiohttp) and the SDKs' own httpx."""
    monkeypatch.setenv(TRANSPORT_ENV, request.param)
    return request.param


def _call(provider: str, srv, *, timeout: float = 5.0, max_retries: int = 2, api_key: str = KEY):
    """Run one call; return (completion or the ModelCallError, seconds taken)."""
    if provider == "anthropic":
        client = create_client(
            "haiku", base_url=srv.url, api_key=api_key, timeout=timeout, max_retries=max_retries
        )
    else:
        client = create_client(
            "openai:gpt-4.1-mini",
            base_url=srv.openai_base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
        )

    async def go():
        start = time.perf_counter()
        try:
            return await client.complete("sys", [Message("user", "ping")], GenerationParams()), (
                time.perf_counter() - start
            )
        except ModelCallError as exc:
            return exc, time.perf_counter() - start
        finally:
            await client.aclose()

    return asyncio.run(go())


def _assert_clean(err: ModelCallError) -> None:
    message = str(err)
    assert KEY not in message and KEY[-12:] not in message
    assert "\n" not in message


@pytest.mark.parametrize("provider", PROVIDERS)
def test_429_retry_after_seconds_is_honoured(provider: str) -> None:
    with running_llm_server(faults=[Fault.rate_limit(retry_after=0.8)]) as srv:
        out, elapsed = _call(provider, srv)
        assert srv.calls == 2
    assert out.text == "You said: ping"
    assert 0.75 <= elapsed < 10  # waited what the server asked, not the (shorter) backoff; 10 s: load slack


@pytest.mark.parametrize("provider", PROVIDERS)
def test_429_retry_after_http_date_is_honoured(provider: str) -> None:
    # HTTP dates have 1 s resolution: ask for "now + 2 s" -> a wait between 1 and 2 s. The date
    # is made when the 429 is sent, so a slow server start cannot eat into the wait.
    def when() -> str:
        return email.utils.formatdate(time.time() + 2, usegmt=True)

    with running_llm_server(faults=[Fault.rate_limit(retry_after=when)]) as srv:
        out, elapsed = _call(provider, srv)
        assert srv.calls == 2
    assert out.text == "You said: ping"
    assert 0.9 <= elapsed < 10  # 10 s: slack for a loaded machine


@pytest.mark.parametrize("provider", PROVIDERS)
def test_500_then_success(provider: str) -> None:
    with running_llm_server(faults=[Fault.server_error(500)]) as srv:
        out, _ = _call(provider, srv)
        assert srv.calls == 2
        assert [r.fault for r in srv.completion_requests] == ["error", None]
    assert out.text == "You said: ping"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_persistent_503_gives_up_after_max_retries(provider: str) -> None:
    with running_llm_server(faults=[Fault.server_error(503, times=10)]) as srv:
        err, _ = _call(provider, srv, max_retries=2)
        assert srv.calls == 3
    assert isinstance(err, ModelCallError)
    assert err.status == 503 and err.retryable
    assert "HTTP 503" in str(err) and "after 3 attempts" in str(err)
    _assert_clean(err)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_auth_error_is_not_retried_and_key_not_leaked(provider: str) -> None:
    with running_llm_server(api_key="the-right-key-abcdefghij") as srv:
        err, _ = _call(provider, srv, max_retries=3)
        assert srv.calls == 1
    assert isinstance(err, ModelCallError) and err.status == 401 and not err.retryable
    _assert_clean(err)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_malformed_json(provider: str) -> None:
    with running_llm_server(faults=[Fault.malformed_json()]) as srv:
        out, _ = _call(provider, srv)
        assert srv.calls == 2
    assert out.text == "You said: ping"  # a garbled reply is retried like a proxy hiccup
    with running_llm_server(faults=[Fault.malformed_json(times=5)]) as srv:
        err, _ = _call(provider, srv, max_retries=1)
        assert srv.calls == 2
    assert isinstance(err, ModelCallError)
    assert "malformed response" in str(err)
    _assert_clean(err)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_hang_past_timeout_fails_in_about_the_timeout(provider: str) -> None:
    with running_llm_server(faults=[Fault.hang(30)]) as srv:
        err, elapsed = _call(provider, srv, timeout=1.0, max_retries=0)
        assert srv.calls == 1
    assert isinstance(err, ModelCallError)
    assert "timed out" in str(err)
    assert 0.9 <= elapsed < 10  # the 1 s timeout, not the 30 s hang
    _assert_clean(err)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_hang_then_success(provider: str) -> None:
    with running_llm_server(faults=[Fault.hang(30)]) as srv:
        out, elapsed = _call(provider, srv, timeout=0.5, max_retries=1)
        assert srv.calls == 2
    assert out.text == "You said: ping"
    assert elapsed < 10  # the 0.5 s timeout and one retry, not the 30 s hang


@pytest.mark.parametrize("provider", PROVIDERS)
def test_dropped_connection(provider: str) -> None:
    with running_llm_server(faults=[Fault.drop()]) as srv:
        out, _ = _call(provider, srv)
        assert srv.calls == 2
    assert out.text == "You said: ping"
    with running_llm_server(faults=[Fault.drop(times=5)]) as srv:
        err, _ = _call(provider, srv, max_retries=1)
    assert isinstance(err, ModelCallError) and "connection error" in str(err)
    _assert_clean(err)


def test_unreachable_server_is_a_call_error_not_a_crash() -> None:
    with running_llm_server() as srv:
        url_srv = srv
    # the server is stopped now: connections are refused
    err, _ = _call("openai", url_srv, max_retries=1)
    assert isinstance(err, ModelCallError) and "connection error" in str(err)
    _assert_clean(err)


def test_key_echoed_by_server_is_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Even a server that puts the key in its error body can't get it into our message."""
    from upskill_hub.testing import llm_server as mod

    def leaky(api, status, kind, message):
        return mod._json(status, {"error": {"message": f"bad key {KEY}", "type": kind}})

    monkeypatch.setattr(mod, "_error", leaky)
    with running_llm_server(faults=[Fault.server_error(500, times=5)]) as srv:
        err, _ = _call("openai", srv, max_retries=0)
    assert isinstance(err, ModelCallError) and "HTTP 500" in str(err)
    _assert_clean(err)
