"""Response cache: key covers everything that determines an answer; bad entries are misses."""

from __future__ import annotations

from pathlib import Path

import pytest

from upskill_hub.models.base import Completion, GenerationParams, Message, Usage
from upskill_hub.session.cache import CACHE_ENV, ResponseCache, cache_key, default_cache_dir

BASE = dict(
    provider="openai", endpoint="http://x/v1", model="m", system="sys",
    messages=[Message("user", "hi")], params=GenerationParams(), repeat=0,
)


@pytest.mark.parametrize(
    "change",
    [
        {"provider": "anthropic"}, {"endpoint": "http://y/v1"}, {"model": "m2"}, {"system": "sys2"},
        {"messages": [Message("user", "hi!")]}, {"messages": [Message("assistant", "hi")]},
        {"params": GenerationParams(temperature=0.5)}, {"params": GenerationParams(max_tokens=7)},
        {"params": GenerationParams(seed=1)}, {"repeat": 1},
    ],
)
def test_every_input_changes_the_key(change):
    assert cache_key(**{**BASE, **change}) != cache_key(**BASE)


def test_key_is_stable_and_accepts_precomputed_params():
    assert cache_key(**BASE) == cache_key(**{**BASE, "params": GenerationParams().to_dict()})
    assert cache_key(**BASE) == cache_key(**{**BASE, "endpoint": "http://x/v1/"})


def test_roundtrip_and_corrupt_entries_are_misses(tmp_path: Path):
    cache = ResponseCache(tmp_path)
    k = cache_key(**BASE)
    assert cache.get(k) is None
    comp = Completion("answer", Usage(3, 1, 2), 0.25, "stop", "m")
    cache.put(k, comp)
    assert cache.get(k) == comp
    cache._path(k).write_text('{"format": 1, "text": "tor')  # a torn write from elsewhere
    assert cache.get(k) is None
    assert not list(tmp_path.rglob(".tmp-*"))  # no temp files left behind


def test_cache_dir_env_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "c"))
    assert default_cache_dir() == tmp_path / "c"
    monkeypatch.delenv(CACHE_ENV)
    assert default_cache_dir().parts[-2:] == ("upskill-hub", "responses")
