"""Base URLs from OPENAI_BASE_URL / ANTHROPIC_BASE_URL, in the SDKs' order, and `models`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _evalkit import make_skill
from cli_runner import run_cli as run_main

from upskill_hub.errors import UpskillError
from upskill_hub.models.endpoints import mask_key, resolve_endpoint
from upskill_hub.models.spec import ANTHROPIC_BASE_URL, OPENAI_BASE_URL, parse_model_spec
from upskill_hub.testing.llm_server import running_llm_server

OPENAI_KEY = "sk-" "openai-0123456789abcdefghij"
ANTHROPIC_KEY = "sk-ant-" "0123456789abcdefghijklmn"


def test_order_flag_then_spec_then_env_then_default():
    env = {"OPENAI_BASE_URL": "http://gw.local/v1/", "ANTHROPIC_BASE_URL": "http://gw.local"}
    ep = resolve_endpoint(parse_model_spec("openai:gpt-4.1-mini"), env)
    assert (ep.url, ep.source) == ("http://gw.local/v1", "env OPENAI_BASE_URL")
    ep = resolve_endpoint(parse_model_spec("haiku"), env)
    assert (ep.url, ep.source) == ("http://gw.local", "env ANTHROPIC_BASE_URL")
    ep = resolve_endpoint(parse_model_spec("haiku", "http://flag.local"), env)
    assert (ep.url, ep.source) == ("http://flag.local", "--base-url")
    ep = resolve_endpoint(parse_model_spec("openai-compatible:m@http://spec.local/v1"), env)
    assert (ep.url, ep.source) == ("http://spec.local/v1", "spec")
    assert resolve_endpoint(parse_model_spec("openai:gpt-4.1-mini"), {}).url == OPENAI_BASE_URL
    assert resolve_endpoint(parse_model_spec("sonnet"), {"OPENAI_BASE_URL": "http://x"}).url == ANTHROPIC_BASE_URL
    # huggingface_hub has no router variable: hf: stays on the public router.
    assert resolve_endpoint(parse_model_spec("hf:org/m"), env).source == "default"
    with pytest.raises(UpskillError, match="OPENAI_BASE_URL"):
        resolve_endpoint(parse_model_spec("gpt-4.1"), {"OPENAI_BASE_URL": "gw.local"})


def test_mask_key_never_shows_the_key():
    assert mask_key(OPENAI_KEY) == "sk-o…ij"
    assert OPENAI_KEY not in mask_key(OPENAI_KEY)
    assert mask_key("abc123") == "*** (6 chars)"
    assert mask_key(None) == "-"


@pytest.fixture
def gateway_env(monkeypatch):
    with running_llm_server(lambda s, m, p: "BANANA {}" if "BANANA" in s else "hello") as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_base_url)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.url)
        monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
        monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        yield srv


def test_eval_without_flags_reaches_the_gateway(gateway_env, tmp_path: Path, capsys, monkeypatch):
    skill = make_skill(tmp_path / "skills")
    specs = ["openai:gpt-4.1-mini", "anthropic:claude-sonnet-4-5", "haiku", "gpt-4.1-nano"]
    args = ["eval", str(skill), "--output", str(tmp_path / "runs"), "--json"]
    for s in specs:
        args += ["--model", s]
    code, out, err = run_main(args, capsys, monkeypatch)
    assert code == 0, err
    summary = json.loads(out)
    assert all(c["errors"] == 0 for c in summary["conditions"])
    assert len(summary["lifts"]) == 4 and all(x["lift"] > 0 for x in summary["lifts"])
    apis = {(r.api, r.body.get("model")) for r in gateway_env.completion_requests}
    assert apis == {
        ("openai", "gpt-4.1-mini"),
        ("anthropic", "claude-sonnet-4-5"),
        ("anthropic", "claude-haiku-4-5"),
        ("openai", "gpt-4.1-nano"),
    }
    # 3 cases x (baseline + with skill) x 4 models, all answered by the gateway.
    assert gateway_env.calls == 24
    assert OPENAI_KEY not in out + err and ANTHROPIC_KEY not in out + err


def test_models_prints_resolution_with_keys_masked(gateway_env, capsys, monkeypatch):
    code, out, err = run_main(
        ["models", "openai:gpt-4.1-mini", "haiku", "local", "hf:org/m", "--format", "agent"], capsys, monkeypatch
    )
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split("\t") == [
        "spec", "provider", "model", "endpoint", "endpoint_source", "key_env", "key", "tools"
    ]  # fmt: skip
    rows = {ln.split("\t")[0]: ln.split("\t") for ln in lines[1:]}
    assert rows["openai:gpt-4.1-mini"][3:6] == [gateway_env.openai_base_url, "env OPENAI_BASE_URL", "OPENAI_API_KEY"]
    assert rows["haiku"][3:6] == [gateway_env.url, "env ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"]
    assert rows["openai:gpt-4.1-mini"][6] == mask_key(OPENAI_KEY)
    assert rows["local"][3] == "in-process"
    assert (rows["local"][7], rows["haiku"][7]) == ("text protocol", "native (tool_use)")
    assert OPENAI_KEY not in out and ANTHROPIC_KEY not in out
    code, out, _ = run_main(["models", "haiku", "--format", "quiet"], capsys, monkeypatch)
    assert (code, out) == (0, "haiku\n")
    monkeypatch.delenv("OPENAI_API_KEY")
    code, out, _ = run_main(["models", "gpt-4.1", "--json"], capsys, monkeypatch)
    assert code == 0 and json.loads(out)[0]["key"] == "missing"
    assert gateway_env.calls == 0
