"""The price table: built-in prices, user overrides, unknown models are None, local is free."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from upskill_hub.errors import UpskillError
from upskill_hub.models import Usage, cost_usd, lookup_price


@pytest.fixture(autouse=True)
def _isolated_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("UPSKILL_HUB_PRICES", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def test_builtin_prices() -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert cost_usd("claude-sonnet-4-5", usage) == pytest.approx(18.0)
    assert cost_usd("anthropic:claude-haiku-4-5", usage) == pytest.approx(6.0)
    assert cost_usd("gpt-4.1-mini", usage) == pytest.approx(2.0)
    # dated snapshots cost what their family costs
    assert lookup_price("claude-sonnet-4-5-20250929") == lookup_price("claude-sonnet-4-5")
    assert lookup_price("gpt-4.1-mini-2025-04-14") == lookup_price("gpt-4.1-mini")


def test_cached_tokens_use_the_cached_rate() -> None:
    usage = Usage(input_tokens=1000, output_tokens=100, cached_tokens=600)
    # 400 uncached * 3 + 600 cached * 0.3 + 100 out * 15, per million
    assert cost_usd("claude-sonnet-4-5", usage) == pytest.approx((400 * 3 + 600 * 0.3 + 100 * 15) / 1e6)


def test_unknown_is_none_and_local_is_free() -> None:
    usage = Usage(input_tokens=10, output_tokens=10)
    assert cost_usd("some-org/unknown-model", usage) is None
    assert cost_usd("claude-sonnet-4-5", Usage()) is None  # no usage reported: unknown, not 0
    assert cost_usd("local", usage) == 0.0
    assert cost_usd("SmolLM2-135M-Instruct.Q4_1", usage, provider="local") == 0.0


def test_user_price_file_toml_extends_and_overrides(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "prices.toml"
    path.write_text(
        '[models."moonshotai/Kimi-K2-Thinking"]\ninput = 0.6\noutput = 2.5\n\n'
        '[models."gpt-4.1-mini"]\ninput = 1\noutput = 1\ncached = 0\n'
    )
    monkeypatch.setenv("UPSKILL_HUB_PRICES", str(path))
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert cost_usd("hf:moonshotai/Kimi-K2-Thinking", usage) == pytest.approx(3.1)
    assert cost_usd("gpt-4.1-mini", usage) == pytest.approx(2.0)
    assert cost_usd("gpt-4.1-mini", Usage(input_tokens=10, output_tokens=0, cached_tokens=10)) == 0.0


def test_user_price_file_in_config_dir_json(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from platformdirs import user_config_dir

    cfg = Path(user_config_dir("upskill-hub"))
    cfg.mkdir(parents=True)
    (cfg / "prices.json").write_text(json.dumps({"my-model": {"input": 2, "output": 4}}))
    assert cost_usd("my-model", Usage(input_tokens=500_000, output_tokens=250_000)) == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ('[models."x"]\ninput = "cheap"\noutput = 1\n', "numeric 'input' and 'output'"),
        ("[models\nbroken", "cannot read price file"),
        ("[models]\nx = 3\n", "must be a table"),
    ],
)
def test_bad_price_file_is_one_line_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, content: str, needle: str
) -> None:
    path = tmp_path / "prices.toml"
    path.write_text(content)
    monkeypatch.setenv("UPSKILL_HUB_PRICES", str(path))
    with pytest.raises(UpskillError) as info:
        cost_usd("gpt-4.1", Usage(input_tokens=1, output_tokens=1))
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_missing_price_file_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("UPSKILL_HUB_PRICES", str(tmp_path / "nope.toml"))
    with pytest.raises(UpskillError, match="nope.toml"):
        cost_usd("gpt-4.1", Usage(input_tokens=1, output_tokens=1))
