"""The Space under a hostile evaluation: other visitors' searches still answer quickly.

One visitor pastes a skill whose ``regex`` assertion backtracks catastrophically on the
model's answer (each check runs until its time limit). Meanwhile a second visitor types
searches. The regex engine releases the GIL and the checks run off the event loop, so the
searches must answer while the hostile check still runs (their times are printed: a few
hundred milliseconds here, against seconds for the hostile check).
"""

from __future__ import annotations

import statistics
import threading
import time

from gradio_client import Client

from upskill_hub.testing.llm_server import running_llm_server

HOSTILE_MD = (
    "---\nname: hostile-regex\ndescription: Backtracks. Use never.\n---\n# Hostile\n\nAnswer with x.\n"
)
HOSTILE_META = (
    '{"cases": ['
    + ", ".join(
        f'{{"id": "c{i}", "input": "go {i}", "assert": [{{"type": "regex", "value": "(x+x+)+y"}}]}}'
        for i in range(4)
    )
    + "]}"
)


def _x_script(system, messages, params) -> str:
    return "x" * 5000


def _watch_hostile(monkeypatch, owner, attr: str, hostile: str) -> tuple[threading.Event, threading.Event]:
    """Wrap the bounded regex search ``owner.attr``: events set when the first ``hostile`` match starts and ends."""
    started, ended = threading.Event(), threading.Event()
    real = getattr(owner, attr)

    def watched(pattern, string, *args, **kwargs):
        first = pattern == hostile and not started.is_set()
        if first:
            started.set()
        try:
            return real(pattern, string, *args, **kwargs)
        finally:
            if first:
                ended.set()

    monkeypatch.setattr(owner, attr, staticmethod(watched) if isinstance(owner, type) else watched)
    return started, ended


def test_searches_answer_while_a_catastrophic_regex_eval_runs(running_app, space_repo, monkeypatch):
    """Race-free: the hostile regex check signals when it starts and ends (it gets 8 s); the
    other visitor's searches are made between the two. Had they waited on the hostile check
    (the event loop blocked, or a lock held), it would have ended before they answered.
    """
    from upskill_hub._util import guarded, limits

    started, ended = _watch_hostile(monkeypatch, guarded, "search", "(x+x+)+y")
    monkeypatch.setattr(limits, "REGEX_TIMEOUT_S", 8.0)
    attacker = Client(running_app, verbose=False)
    visitor = Client(running_app, verbose=False)
    visitor.predict(space_repo, api_name="/load")
    quiet = []
    for _ in range(5):  # the same searches with nobody else on the Space, for comparison
        t = time.monotonic()
        visitor.predict(space_repo, "gree", 0, False, "best lift", api_name="/search")
        quiet.append(time.monotonic() - t)
    with running_llm_server(_x_script, models=("xs",)) as srv:
        job = attacker.submit(
            space_repo, "paste", "", HOSTILE_MD, HOSTILE_META, "xs", f"{srv.url}/v1", "", "", "", "", 1,
            api_name="/run_eval",
        )  # fmt: skip
        assert started.wait(60), job.status()
        latencies = []
        for _ in range(5):
            t = time.monotonic()
            table, note = visitor.predict(space_repo, "gree", 0, False, "best lift", api_name="/search")
            latencies.append(time.monotonic() - t)
            assert "1 of 3 skills match" in note
        assert not ended.is_set(), "the hostile regex check ended before the searches: they did not overlap"
        monkeypatch.setattr(limits, "REGEX_TIMEOUT_S", 0.5)  # the rest of the run need not take long
        status = job.result()[0]
    assert status.startswith("Finished **hostile-regex**: 8 calls"), status
    print(f"search alone: median {statistics.median(quiet) * 1000:.0f} ms; during the hostile regex check: "
          f"median {statistics.median(latencies) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms")  # fmt: skip


SCHEMA_MD = "---\nname: hostile-schema\ndescription: Backtracks in a schema. Use never.\n---\n# Hostile\n\nAnswer in JSON.\n"
SCHEMA_META = (
    '{"cases": [{"id": "c0", "input": "go", "assert": [{"type": "json-schema", "value": '
    '{"type": "object", "properties": {"a": {"type": "string", "pattern": "(x+x+)+y"}}}}]}]}'
)


def _json_x_script(system, messages, params) -> str:
    return '{"a": "' + "x" * 5000 + '"}'


def test_page_load_and_search_answer_while_a_schema_redos_runs(running_app, space_repo, monkeypatch):
    """Issue 29 class 1: a JSON-Schema ``pattern`` that backtracks used to freeze every visitor.

    Race-free: the schema's regex signals when it starts and when it ends; the other
    visitor's page load and search are measured between the two, and the test checks that
    the hostile match was still running when the last of them had answered (had they
    waited on it, it would have ended first). The times are printed, not asserted.
    """
    import httpx

    from upskill_hub._util import guarded, limits

    started, ended = _watch_hostile(monkeypatch, guarded._BoundedRe, "search", "(x+x+)+y")
    # The first hostile check gets 8 s: far longer than the few requests measured inside it.
    monkeypatch.setattr(limits, "SCHEMA_TIMEOUT_S", 8.0)
    monkeypatch.setattr(limits, "REGEX_TIMEOUT_S", 8.0)
    attacker = Client(running_app, verbose=False)
    visitor = Client(running_app, verbose=False)
    # Alone first: the first /load reads the library from the Hub (seconds, attack or not); the
    # measured ones below are the steady state every later visitor gets.
    quiet = {}
    for name, call in (("load", lambda: visitor.predict(space_repo, api_name="/load")),
                       ("search", lambda: visitor.predict(space_repo, "gree", 0, False, "best lift", api_name="/search"))):  # fmt: skip
        t = time.monotonic()
        call()
        quiet[name] = time.monotonic() - t
    with running_llm_server(_json_x_script, models=("xs",)) as srv:
        job = attacker.submit(
            space_repo, "paste", "", SCHEMA_MD, SCHEMA_META, "xs", f"{srv.url}/v1", "", "", "", "", 1,
            api_name="/run_eval",
        )  # fmt: skip
        assert started.wait(60), job.status()
        latencies = {}
        t = time.monotonic()
        page = httpx.get(running_app, timeout=10)
        latencies["page"] = time.monotonic() - t
        assert page.status_code == 200
        t = time.monotonic()
        config = httpx.get(running_app.rstrip("/") + "/config", timeout=10)  # what the page then fetches
        latencies["config"] = time.monotonic() - t
        assert config.status_code == 200
        t = time.monotonic()
        visitor.predict(space_repo, api_name="/load")  # the page's load event: the library's table
        latencies["load"] = time.monotonic() - t
        t = time.monotonic()
        table, note = visitor.predict(space_repo, "gree", 0, False, "best lift", api_name="/search")
        latencies["search"] = time.monotonic() - t
        assert "1 of 3 skills match" in note
        assert not ended.is_set(), (
            "the hostile schema check ended before the measurements: they did not overlap"
        )
        # The rest of the run need not take long.
        monkeypatch.setattr(limits, "SCHEMA_TIMEOUT_S", 0.5)
        monkeypatch.setattr(limits, "REGEX_TIMEOUT_S", 0.5)
        status = job.result()[0]
    assert status.startswith("Finished **hostile-schema**: 2 calls"), status
    print(
        "alone:",
        {k: f"{v * 1000:.0f} ms" for k, v in quiet.items()},
        "during the hostile schema check:",
        {k: f"{v * 1000:.0f} ms" for k, v in latencies.items()},
    )
