"""Checks made before any model call: missing key, unreachable endpoint, missing local model."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from upskill_hub._util.netutil import free_port
from upskill_hub.errors import UpskillError
from upskill_hub.models import create_client, preflight
from upskill_hub.testing.llm_server import running_llm_server


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in (
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "UPSKILL_API_KEY",
    ):
        monkeypatch.delenv(var, raising=False)
    # no token saved by `hf auth login` either
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_TOKEN_PATH", str(tmp_path / "hf" / "token"))


@pytest.mark.parametrize(
    ("spec", "var"),
    [
        ("haiku", "ANTHROPIC_API_KEY"),
        ("anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY"),
        ("openai:gpt-4.1-mini", "OPENAI_API_KEY"),
        ("gpt-4.1-mini", "OPENAI_API_KEY"),
        ("hf:moonshotai/Kimi-K2-Thinking", "HF_TOKEN"),
    ],
)
def test_missing_key_names_the_variable(no_keys: None, spec: str, var: str) -> None:
    for check in (preflight, create_client):
        with pytest.raises(UpskillError) as info:
            check(spec)
        message = str(info.value)
        assert f"set {var}" in message and spec in message
        assert "\n" not in message


def test_key_from_environment_or_argument(no_keys: None, monkeypatch: pytest.MonkeyPatch) -> None:
    assert preflight("haiku", api_key="sk-given-0123456789").provider == "anthropic"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-0123456789")
    assert preflight("openai:gpt-4.1").model == "gpt-4.1"
    monkeypatch.setenv("HF_TOKEN", "hf_" + "a" * 30)
    assert preflight("hf:a/b").provider == "hf"


def test_unreachable_base_url_is_named(no_keys: None) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    start = time.perf_counter()
    with pytest.raises(UpskillError) as info:
        preflight("my-model", base_url=url, probe_timeout=1.0)
    assert time.perf_counter() - start < 2.0
    message = str(info.value)
    assert url in message and "cannot reach" in message and "\n" not in message
    # the same for a hosted provider sent to a proxy that isn't there
    with pytest.raises(UpskillError, match="cannot reach"):
        preflight("openai:gpt-4.1-mini", base_url=url, api_key="sk-x-0123456789", probe_timeout=1.0)


def test_unresolvable_host_is_named(no_keys: None) -> None:
    with pytest.raises(UpskillError, match=r"cannot reach model endpoint http://no-such-host\.invalid:9/v1"):
        preflight("m", base_url="http://no-such-host.invalid:9/v1", probe_timeout=1.0)


def test_reachable_server_passes_and_no_call_is_made(no_keys: None) -> None:
    with running_llm_server() as srv:
        spec = preflight("my-model", base_url=srv.openai_base_url)
        assert (spec.provider, spec.endpoint) == ("openai-compatible", srv.openai_base_url)
        assert srv.calls == 0


def test_unknown_spec_fails_before_anything(no_keys: None) -> None:
    with pytest.raises(UpskillError, match="unknown model spec 'gemini'"):
        preflight("gemini")


def test_local_model_file_checks(tmp_path: Path) -> None:
    with pytest.raises(UpskillError, match="does not exist"):
        preflight(f"local:{tmp_path / 'nope.gguf'}")
    other = tmp_path / "weights.bin"
    other.write_bytes(b"x")
    with pytest.raises(UpskillError, match="not a .gguf file"):
        preflight(f"local:{other}")


def test_local_default_is_installed() -> None:
    """The offline default must work out of the box: its backend importable, GGUF found."""
    from upskill_hub.models.local import default_gguf_path

    spec = preflight("local")
    assert spec.provider == "local"
    path = default_gguf_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 50_000_000


def test_local_backend_missing_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Asking for llama.cpp without llama-cpp-python names the extra to install."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llama_cpp" else real(name, *a))
    monkeypatch.setenv("UPSKILL_LOCAL_BACKEND", "llama.cpp")
    with pytest.raises(UpskillError, match=r"llama\.cpp backend needs .*local-llamacpp"):
        preflight("local")
