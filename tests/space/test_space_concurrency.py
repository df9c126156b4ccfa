"""Issue 50: the Space under load.

* Its read-only events (open a skill, leaderboard, files, answers, routing, load) run
  concurrently in one bounded pool; before, Gradio ran each of them one call at a time.
* API callers and crawlers that make a new session per call do not grow the process:
  Gradio keeps state for a bounded number of sessions, and a dropped session's next call
  (a dropdown value the session had been sent) still works.
* Concurrent first views of one library read it once.
"""

from __future__ import annotations

import importlib.util
import threading
import uuid
from pathlib import Path

import httpx
import pytest
from space_helpers import free_port

from upskill_hub.space import data, serving, ui

ROOT = Path(__file__).resolve().parents[2]
READ_APIS = ("load", "open_skill", "answers", "skill_file", "leaderboard", "routing")


def _benchmark_module():
    spec = importlib.util.spec_from_file_location("space_benchmark", ROOT / "benchmarks" / "space.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> Path:
    """A dataset folder in the layout ``push`` writes: 12 skills, 1,000 result rows over 4 models."""
    root = tmp_path_factory.mktemp("space-load") / "dataset"
    _benchmark_module().build_dataset(root, 12, 1000)
    return root


def _limit(demo, fn) -> int | None:
    return (
        demo._queue.default_concurrency_limit if fn.concurrency_limit == "default" else fn.concurrency_limit
    )


def test_read_only_events_run_concurrently_in_one_bounded_pool(monkeypatch) -> None:
    monkeypatch.setenv(serving.READ_CONCURRENCY_ENV, "6")
    demo = ui.build_app("me/skills")
    by_api = {fn.api_name: fn for fn in demo.fns.values() if fn.api_name}
    for api in READ_APIS:
        fn = by_api[api]
        assert fn.queue is not False, api
        assert _limit(demo, fn) == 6, f"/{api} runs {_limit(demo, fn)} call(s) at a time"
        assert fn.concurrency_id == serving.READ_GROUP, api  # one pool for all of them, not 6 each
    # Evaluations and pushes keep their own bounds.
    from upskill_hub.space.session import MAX_EVALS

    assert _limit(demo, by_api["run_eval"]) == 2 * MAX_EVALS  # those past MAX_EVALS are refused, not queued
    assert _limit(demo, by_api["push_results"]) == 1


def test_the_read_pool_is_sized_from_the_machine(monkeypatch) -> None:
    from upskill_hub.models import local_backends

    monkeypatch.delenv(serving.READ_CONCURRENCY_ENV, raising=False)
    monkeypatch.setattr(local_backends, "usable_cores", lambda: 2)
    assert serving.read_concurrency() == 4
    monkeypatch.setattr(local_backends, "usable_cores", lambda: 8)
    assert serving.read_concurrency() == 16
    monkeypatch.setattr(local_backends, "usable_cores", lambda: 128)
    assert serving.read_concurrency() == 32  # Gradio's thread pool is 40: room stays for evaluations
    monkeypatch.setenv(serving.READ_CONCURRENCY_ENV, "nonsense")  # a typo keeps the default
    assert serving.read_concurrency() == 32


def _call(http: httpx.Client, api: str, args: list, session_hash: str) -> str:
    r = http.post(f"/call/{api}", json={"data": args, "session_hash": session_hash})
    r.raise_for_status()
    with http.stream("GET", f"/call/{api}/{r.json()['event_id']}") as stream:
        return "".join(stream.iter_text())


def test_sessionless_calls_keep_a_bounded_number_of_sessions(library, monkeypatch) -> None:
    """200 calls, each with its own session hash (an API caller or a crawler): Gradio kept
    every one of them (its default is 10,000, about 180 kB each here)."""
    monkeypatch.delenv(serving.SESSIONS_ENV, raising=False)
    lib = data.load_library(str(library))
    name, model = lib.skill_names[0], lib.aggregates.models[-1]
    demo = ui.build_app(str(library))
    demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True)
    try:
        with httpx.Client(base_url=demo.local_url.rstrip("/") + "/gradio_api", timeout=60) as http:
            for _ in range(200):
                out = _call(http, "open_skill", [str(library), name], uuid.uuid4().hex)
                assert "event: complete" in out and name in out, out[-300:]
            kept = len(demo.state_holder.session_data)
            assert kept <= serving.DEFAULT_SESSIONS, f"{kept} sessions kept after 200 sessionless calls"
            # A session Gradio dropped (or never had) may still send what the page was given:
            # a model of this library for the leaderboard's sort, which is not a default choice.
            out = _call(http, "leaderboard", [str(library), model, ""], uuid.uuid4().hex)
            assert "event: complete" in out and "not in the list of choices" not in out, out[-300:]
            out = _call(http, "answers", [str(library), name, model], uuid.uuid4().hex)
            assert "event: complete" in out and "not in the list of choices" not in out, out[-300:]
    finally:
        demo.close()


def test_concurrent_first_views_of_a_library_read_it_once(library, monkeypatch) -> None:
    """Eight requests for a library nobody has read yet: one reads it, the others wait for it.

    Race-free: the first read waits until all eight have asked (each computes the folder's
    signature first), so without the per-library lock all eight would be reading.
    """
    n = 8
    asked = threading.Semaphore(0)
    reads: list[int] = []
    signature, read = data._folder_signature, data.load_library_dir

    def counted_signature(root):
        asked.release()
        return signature(root)

    def slow_read(root, **kwargs):
        reads.append(1)
        if len(reads) == 1:
            for _ in range(n):
                assert asked.acquire(timeout=30)
        return read(root, **kwargs)

    monkeypatch.setattr(data, "_folder_signature", counted_signature)
    monkeypatch.setattr(data, "load_library_dir", slow_read)
    libs: list[data.Library] = []
    threads = [
        threading.Thread(target=lambda: libs.append(data.load_library(str(library)))) for _ in range(n)
    ]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert len(libs) == n and all(lib is libs[0] for lib in libs)
    assert len(reads) == 1, f"the library was read {len(reads)} times"


def test_gradios_monitoring_summary_is_not_rebuilt_after_every_event(monkeypatch) -> None:
    """Gradio rebuilds a pandas table of its last 10,000 events after each event for its
    monitoring page: milliseconds per call on a busy Space. Here it does so every 200."""
    monkeypatch.delenv(serving.SUMMARY_EVERY_ENV, raising=False)
    assert ui.build_app("me/skills")._queue.ANAYLTICS_CACHE_FREQUENCY == serving.SUMMARY_EVERY
    monkeypatch.setenv(serving.SUMMARY_EVERY_ENV, "1")  # the operator's own setting wins
    assert ui.build_app("me/skills")._queue.ANAYLTICS_CACHE_FREQUENCY == 1


def test_events_reuse_a_local_library_without_looking_the_folder_over(library, monkeypatch) -> None:
    """A skill page, a search or a leaderboard (``refresh=False``) reuses the library read last,
    as for a Hub repo; a page load or "Load" (``refresh=True``) still looks for changes. Looking
    a 1,000-skill folder over costs 8 ms of the interpreter per event, for every visitor."""
    lib = data.load_library(str(library))
    looked: list[Path] = []
    signature = data._folder_signature
    monkeypatch.setattr(data, "_folder_signature", lambda root: looked.append(root) or signature(root))
    assert data.load_library(str(library), refresh=False) is lib
    assert looked == []
    assert data.load_library(str(library)) is lib  # unchanged folder: same library, looked over once
    assert len(looked) == 1
