"""The scripted LLM server itself: wire formats, recording, fault targeting, concurrency, CLI."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time

import openai
import pytest

from upskill_hub.testing.llm_server import Fault, Reply, running_llm_server

KEY = "sk-" "test-secret-0123456789abcdefghij"


def _openai(srv) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key=KEY, base_url=srv.openai_base_url, max_retries=0, timeout=5)


async def _ask(client: openai.AsyncOpenAI, text: str, system: str = "") -> str:
    messages = ([{"role": "system", "content": system}] if system else []) + [
        {"role": "user", "content": text}
    ]
    resp = await client.chat.completions.create(model="m", messages=messages)
    return resp.choices[0].message.content


def test_models_endpoint_and_unknown_route() -> None:
    with running_llm_server(models=("a", "b")) as srv:

        async def go():
            client = _openai(srv)
            try:
                ids = [m.id async for m in client.models.list()]
                with pytest.raises(openai.NotFoundError):
                    await client.embeddings.create(model="a", input="x")
                return ids
            finally:
                await client.close()

        assert asyncio.run(go()) == ["a", "b"]
        assert srv.calls == 0  # neither is a completion


def test_records_bodies_and_masks_secrets() -> None:
    with running_llm_server() as srv:

        async def go():
            client = _openai(srv)
            await _ask(client, "hello", system="SYS")
            await client.close()

        asyncio.run(go())
        (req,) = srv.completion_requests
    assert req.api == "openai" and req.path == "/v1/chat/completions"
    assert req.body["messages"][0] == {"role": "system", "content": "SYS"}
    assert req.system == "SYS" and req.messages == [{"role": "user", "content": "hello"}]
    assert req.headers["authorization"] == "Bearer ***"
    assert KEY not in repr(srv.requests)
    assert req.finished >= req.started > 0


def test_faults_target_matching_requests_only() -> None:
    faults = [
        Fault.server_error(502, match="poison", times=2),
        Fault.rate_limit(retry_after=0, api="anthropic"),
    ]
    with running_llm_server(faults=faults) as srv:

        async def go():
            client = _openai(srv)
            try:
                assert await _ask(client, "fine") == "You said: fine"
                with pytest.raises(openai.InternalServerError):
                    await _ask(client, "poison pill")
                with pytest.raises(openai.InternalServerError):
                    await _ask(client, "x", system="poison in the system prompt")
                assert await _ask(client, "poison again") == "You said: poison again"  # used up
            finally:
                await client.close()

        asyncio.run(go())
        assert [r.fault for r in srv.completion_requests] == [None, "error", "error", None]
        assert srv.pending_faults == 1  # the anthropic-only fault is still waiting


def test_script_sees_params_and_errors_become_500() -> None:
    seen: list[dict] = []

    def script(system, messages, params):
        seen.append(params)
        if "boom" in messages[-1]["content"]:
            raise RuntimeError("script bug")
        return Reply("ok", finish_reason="content_filter")

    with running_llm_server(script) as srv:

        async def go():
            client = _openai(srv)
            try:
                resp = await client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "hi"}], max_tokens=5, seed=3, stop="Z"
                )
                assert resp.choices[0].finish_reason == "content_filter"
                with pytest.raises(openai.InternalServerError, match="script bug"):
                    await _ask(client, "boom")
            finally:
                await client.close()

        asyncio.run(go())
    assert seen[0]["max_tokens"] == 5 and seen[0]["seed"] == 3 and seen[0]["stop"] == ["Z"]


def test_many_concurrent_requests_overlap() -> None:
    """32 requests in flight at once: the server admits them all before answering any.

    Race-free: every call after the 32 warm-up ones is held until release(); the test
    releases only once the 32 of the semaphore are all in (whatever the machine's speed).
    """
    with running_llm_server(hold_after=32) as srv:

        async def go():
            client = _openai(srv)
            sem = asyncio.Semaphore(32)

            async def one(i: int) -> str:
                async with sem:
                    return await _ask(client, f"n{i}")

            try:
                await asyncio.gather(*(one(i) for i in range(32)))  # warm the connection pool
                srv.clear()  # forget the warm-up's figures
                calls = asyncio.gather(*(one(i) for i in range(64)))
                deadline = time.monotonic() + 60
                while srv.max_in_flight < 32:  # held calls stay in flight: this is reached
                    assert time.monotonic() < deadline, srv.max_in_flight
                    await asyncio.sleep(0.01)
                await asyncio.sleep(0.1)  # room for a 33rd, were the client to send one
                in_flight = srv.max_in_flight
                srv.release()
                return await calls, in_flight
            finally:
                await client.close()

        out, in_flight = asyncio.run(go())
        assert in_flight == 32
    assert out == [f"You said: n{i}" for i in range(64)]


def test_port_in_use_is_reported() -> None:
    with running_llm_server() as srv, pytest.raises(OSError), running_llm_server(port=srv.port):
        pass


def test_cli_entry_serves_until_interrupted() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "upskill_hub.testing.llm_server", "--port", "0", "--latency", "0"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        line = proc.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        assert match, line
        client = openai.OpenAI(api_key=KEY, base_url=f"http://127.0.0.1:{match.group(1)}/v1", max_retries=0)
        resp = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "cli"}])
        assert resp.choices[0].message.content == "You said: cli"
        client.close()
    finally:
        proc.terminate()
        proc.wait(10)


def test_child_process_server_counts_calls() -> None:
    """The out-of-process handle (used by benchmarks) serves and reports its call count."""
    from upskill_hub.testing.llm_server import llm_server_process

    with llm_server_process(latency_s=0.05) as child:
        client = openai.OpenAI(api_key=KEY, base_url=child.openai_base_url, max_retries=0)
        for i in range(3):
            resp = client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"c{i}"}])
            assert resp.choices[0].message.content == f"You said: c{i}"
        client.close()
        assert child.calls == 3 and child.max_in_flight == 1
        proc = child.proc
    assert proc.poll() is not None  # stopped on exit
