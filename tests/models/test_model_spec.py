"""Model specs as users type them: every documented form parses, bad ones fail in one line."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from upskill_hub.errors import UpskillError
from upskill_hub.models.spec import (
    ALIASES,
    ANTHROPIC_BASE_URL,
    HF_ROUTER_URL,
    OPENAI_BASE_URL,
    ModelSpec,
    parse_model_spec,
)

TABLE = [
    # spec, base_url, provider, model, endpoint
    ("local", None, "local", "local", "in-process"),
    ("anthropic:claude-sonnet-4-5", None, "anthropic", "claude-sonnet-4-5", ANTHROPIC_BASE_URL),
    ("openai:gpt-4.1-mini", None, "openai", "gpt-4.1-mini", OPENAI_BASE_URL),
    ("hf:moonshotai/Kimi-K2-Thinking", None, "hf", "moonshotai/Kimi-K2-Thinking", HF_ROUTER_URL),
    ("hf:openai/gpt-oss-120b:groq", None, "hf", "openai/gpt-oss-120b:groq", HF_ROUTER_URL),
    ("haiku", None, "anthropic", "claude-haiku-4-5", ANTHROPIC_BASE_URL),
    ("sonnet", None, "anthropic", "claude-sonnet-4-5", ANTHROPIC_BASE_URL),
    ("opus", None, "anthropic", "claude-opus-4-5", ANTHROPIC_BASE_URL),
    ("Sonnet", None, "anthropic", "claude-sonnet-4-5", ANTHROPIC_BASE_URL),
    ("anthropic:haiku", None, "anthropic", "claude-haiku-4-5", ANTHROPIC_BASE_URL),
    ("gpt-4.1-mini", None, "openai", "gpt-4.1-mini", OPENAI_BASE_URL),
    ("o4-mini", None, "openai", "o4-mini", OPENAI_BASE_URL),
    ("claude-3-5-haiku-20241022", None, "anthropic", "claude-3-5-haiku-20241022", ANTHROPIC_BASE_URL),
    # self-hosted OpenAI-compatible servers
    (
        "qwen2.5:7b",
        "http://localhost:11434/v1",
        "openai-compatible",
        "qwen2.5:7b",
        "http://localhost:11434/v1",
    ),
    ("my-model", "http://127.0.0.1:8080/v1/", "openai-compatible", "my-model", "http://127.0.0.1:8080/v1"),
    (
        "openai-compatible:qwen@http://localhost:8000/v1",
        None,
        "openai-compatible",
        "qwen",
        "http://localhost:8000/v1",
    ),
    # a hosted provider behind a proxy keeps its provider (and its key variable)
    ("openai:gpt-4.1-mini", "http://proxy:9000/v1", "openai", "gpt-4.1-mini", "http://proxy:9000/v1"),
    ("haiku", "http://proxy:9000", "anthropic", "claude-haiku-4-5", "http://proxy:9000"),
    ("local:/models/x.gguf", None, "local", "/models/x.gguf", "in-process"),
]


@pytest.mark.parametrize(("spec", "base_url", "provider", "model", "endpoint"), TABLE)
def test_spec_table(spec: str, base_url: str | None, provider: str, model: str, endpoint: str) -> None:
    parsed = parse_model_spec(spec, base_url)
    assert (parsed.provider, parsed.model, parsed.endpoint) == (provider, model, endpoint)
    assert parsed.raw == spec


def test_key_variables() -> None:
    assert parse_model_spec("haiku").api_key_env == "ANTHROPIC_API_KEY"
    assert parse_model_spec("openai:gpt-4.1").api_key_env == "OPENAI_API_KEY"
    assert parse_model_spec("hf:a/b").api_key_env == "HF_TOKEN"
    compat = parse_model_spec("m", "http://localhost:1/v1")
    # Never the user's OpenAI key for a third-party endpoint, and not required.
    assert compat.api_key_env == "UPSKILL_API_KEY" and not compat.key_required
    assert parse_model_spec("local").api_key_env is None


@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_every_alias_resolves(alias: str) -> None:
    provider, model = ALIASES[alias]
    for spelled in (alias, alias.upper(), f"{provider}:{alias}"):
        parsed = parse_model_spec(spelled)
        assert (parsed.provider, parsed.model) == (provider, model)
        # the canonical label round-trips
        assert parse_model_spec(parsed.label) == ModelSpec(provider, model, None, parsed.label)


@given(st.sampled_from(sorted(ALIASES)), st.sampled_from([None, "http://127.0.0.1:9/v1"]))
def test_aliases_property(alias: str, base_url: str | None) -> None:
    parsed = parse_model_spec(alias, base_url)
    assert parsed.provider == ALIASES[alias][0] and parsed.model == ALIASES[alias][1]
    assert parsed.endpoint == (base_url.rstrip("/") if base_url else ANTHROPIC_BASE_URL)


@pytest.mark.parametrize(
    ("spec", "base_url", "needle"),
    [
        ("gemini-pro", None, "unknown model spec 'gemini-pro'"),
        ("", None, "empty model spec"),
        ("openai:", None, "names no model"),
        ("hf:Kimi-K2", None, "ORG/NAME"),
        ("moonshotai/Kimi-K2-Thinking", None, "hf:moonshotai/Kimi-K2-Thinking"),
        ("openai-compatible:qwen", None, "--base-url"),
        ("my-model", "localhost:8080", "not an http(s) URL"),
        ("two words", None, "whitespace"),
    ],
)
def test_bad_specs_are_one_line_errors(spec: str, base_url: str | None, needle: str) -> None:
    with pytest.raises(UpskillError) as info:
        parse_model_spec(spec, base_url)
    message = str(info.value)
    assert needle in message
    assert "\n" not in message


def test_unknown_spec_lists_the_forms() -> None:
    with pytest.raises(UpskillError, match=r"anthropic:MODEL .* openai:MODEL .* hf:ORG/MODEL .*--base-url"):
        parse_model_spec("mistral-large")
