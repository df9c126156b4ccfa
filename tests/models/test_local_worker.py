"""The local model's worker process: a native crash is an error row, never a dead eval.

These run the real worker (``python -m upskill_hub.models.local_worker``) with a scripted
backend that can kill itself with SIGSEGV mid-call, and the real ``upskill-hub eval``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from _evalkit import make_skill
from cli_runner import run_cli

from upskill_hub.models import local
from upskill_hub.rundir import RESULTS_FILE

CASES = [
    {"id": "a", "input": "Say hello.", "assert": [{"type": "contains", "value": "BANANA"}]},
    {"id": "boom", "input": "CRASH now.", "assert": [{"type": "contains", "value": "BANANA"}]},
    {"id": "c", "input": "Again.", "assert": [{"type": "contains", "value": "BANANA"}]},
    {"id": "d", "input": "Once more.", "assert": [{"type": "contains", "value": "BANANA"}]},
]


def rows_of(out: Path) -> list[dict]:
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    return [json.loads(line) for line in (run_dir / RESULTS_FILE).read_text().splitlines()]


def test_worker_crash_mid_run_is_error_rows_exit_1_and_resume_completes(
    scripted_gguf: Path, tmp_path: Path, capsys, monkeypatch
):
    skill = make_skill(tmp_path / "skills", cases=CASES)
    (tmp_path / "crash-marker").touch()
    monkeypatch.setenv("SCRIPTED_CRASH_ONCE", "1")
    monkeypatch.setenv("UPSKILL_LOCAL_BATCH", "1")  # unbatched: only the call in flight fails
    out = tmp_path / "runs"
    args = ["eval", str(skill), "--model", f"local:{scripted_gguf}", "--output", str(out), "--no-plots"]

    code, stdout, stderr = run_cli(args, capsys, monkeypatch)
    assert code == 1
    assert "Traceback" not in stderr + stdout
    error_lines = [line for line in stderr.splitlines() if line.startswith("Error:")]
    assert len(error_lines) == 1, stderr
    assert "1 of 8 calls failed" in error_lines[0] and "--resume" in error_lines[0]
    assert "scripted_backend:ScriptedBackend" in error_lines[0] and "SIGSEGV" in error_lines[0]
    rows = rows_of(out)
    assert len(rows) == 8
    failed = [r for r in rows if r["error"]]
    # only the call in flight failed (both conditions ask "CRASH", the marker crashes once);
    # the worker was restarted and answered every other call
    assert [(r["case_id"], r["passed"]) for r in failed] == [("boom", None)]
    assert "died during the call (SIGSEGV)" in failed[0]["error"]
    assert all(r["passed"] is True for r in rows if r["condition"] == "with_skill" and not r["error"])

    code, stdout, stderr = run_cli([*args, "--resume"], capsys, monkeypatch)
    assert code == 0, stderr
    rows = rows_of(out)
    keys = [(r["model"], r["condition"], r["case_id"], r["repeat"]) for r in rows]
    assert len(keys) == len(set(keys)) == 8  # exactly one row per planned call
    assert all(r["error"] is None for r in rows)


def test_worker_that_keeps_crashing_is_restarted_once_then_given_up(scripted_gguf: Path, tmp_path: Path):
    (tmp_path / "crash-marker").touch()  # every CRASH prompt crashes
    client = local.LocalModelClient(local.ModelSpec("local", str(scripted_gguf), None, f"local:{scripted_gguf}"))
    from upskill_hub.models.base import GenerationParams, Message, ModelCallError

    def ask(text: str) -> str:
        return client.complete_sync("", [Message("user", text)], GenerationParams(max_tokens=8)).text

    worker = local.shared_worker(scripted_gguf)
    assert ask("hello") == "hi"
    first_pid = worker.pid
    with pytest.raises(ModelCallError, match=r"died during the call \(SIGSEGV\).*upskill-hub doctor"):
        ask("CRASH 1")
    assert ask("hello") == "hi"  # restarted once
    assert worker.pid != first_pid
    with pytest.raises(ModelCallError, match="SIGSEGV"):
        ask("CRASH 2")
    with pytest.raises(ModelCallError, match="not restarted"):
        ask("hello")  # given up: fails at once, no third worker
    assert worker.pid is None


def test_load_failure_is_one_line_and_sticky(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("UPSKILL_LOCAL_BACKEND", "no_such_backend_module:Backend")
    gguf = tmp_path / "fake.gguf"
    gguf.write_bytes(b"GGUF")
    local.stop_workers()
    try:
        client = local.LocalModelClient(local.ModelSpec("local", str(gguf), None, f"local:{gguf}"))
        from upskill_hub.models.base import GenerationParams, Message, ModelCallError

        for _ in range(2):
            with pytest.raises(ModelCallError, match="failed to load: ModuleNotFoundError"):
                client.complete_sync("", [Message("user", "hi")], GenerationParams(max_tokens=4))
    finally:
        local.stop_workers()


@pytest.mark.parametrize(
    ("env", "cores", "expected"),
    [({}, 2, 1), ({}, 16, 8), ({}, 1, 1), ({"UPSKILL_LOCAL_THREADS": "3"}, 2, 2),
     ({"UPSKILL_LOCAL_THREADS": "3"}, 8, 3)],
)
def test_threads_follow_env_and_never_oversubscribe(env, cores, expected, monkeypatch):
    monkeypatch.delenv("UPSKILL_LOCAL_THREADS", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setattr(local, "usable_cores", lambda: cores)
    assert local.local_threads() == expected


@pytest.mark.parametrize(
    ("var", "value", "message"),
    [("UPSKILL_LOCAL_THREADS", "many", "whole number"), ("UPSKILL_LOCAL_THREADS", "0", "at least 1"),
     ("UPSKILL_LOCAL_BACKEND", "onnx", "unknown local backend"), ("UPSKILL_LOCAL_DEVICE", "tpu", "must be one of"),
     ("UPSKILL_LOCAL_PRECISION", "fp16", "must be one of"), ("UPSKILL_LOCAL_BATCH", "0", "between 1 and 64"),
     ("UPSKILL_LOCAL_BATCH", "lots", "whole number")],
)
def test_bad_local_settings_are_one_line_errors(var, value, message, tmp_path, monkeypatch):
    from upskill_hub.errors import UpskillError

    monkeypatch.setenv(var, value)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    with pytest.raises(UpskillError, match=message):
        local.check_local_available(local.ModelSpec("local", str(gguf), None, "local:x"))


def _queue_behind_a_waiting_call(worker, tmp_path: Path, texts: list[str]):
    """One WAIT call in flight, then ``texts`` queued behind it: they are sent as one batch."""
    from upskill_hub.models.local_worker import LocalWorker

    assert isinstance(worker, LocalWorker)

    def request(text: str) -> dict:
        return {"system": "", "messages": [{"role": "user", "content": text}], "temperature": 0.0,
                "max_tokens": 8, "top_p": None, "seed": None, "stop": []}  # fmt: skip

    first = worker.submit(request("WAIT for it"))
    deadline = time.monotonic() + 60
    while worker.batches != [1]:  # the WAIT call has reached the worker
        assert time.monotonic() < deadline, "the first call never reached the worker"
        time.sleep(0.01)
    queued = [worker.submit(request(t)) for t in texts]
    (tmp_path / "release").touch()
    return first, queued


def test_calls_queued_together_are_one_batch_answered_in_order(scripted_gguf: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("SCRIPTED_RELEASE", str(tmp_path / "release"))
    monkeypatch.setenv("UPSKILL_LOCAL_BATCH", "8")
    worker = local.shared_worker(scripted_gguf)
    first, queued = _queue_behind_a_waiting_call(worker, tmp_path, [f"question {i}" for i in range(8)])
    assert first.result(60)["text"] == "hi"
    assert [f.result(60)["text"] for f in queued] == ["hi"] * 8
    assert worker.batches == [1, 8]


def test_an_answer_leaves_its_batch_as_soon_as_it_is_ready(scripted_gguf: Path, tmp_path: Path, monkeypatch):
    """A quick request and a slow one in one batch: the quick one's caller has its answer
    while the slow one is still being made (it waits for a file only the test creates)."""
    monkeypatch.setenv("SCRIPTED_RELEASE", str(tmp_path / "release"))
    monkeypatch.setenv("UPSKILL_LOCAL_BATCH", "8")
    worker = local.shared_worker(scripted_gguf)

    def request(text: str) -> dict:
        return {"system": "", "messages": [{"role": "user", "content": text}], "temperature": 0.0,
                "max_tokens": 8, "top_p": None, "seed": None, "stop": []}  # fmt: skip

    quick, slow = worker.submit_many([request("quick"), request("WAIT, I am the slow one")])
    assert quick.result(60)["text"] == "hi"
    assert not slow.done()  # still in the worker, which cannot finish it before the file exists
    (tmp_path / "release").touch()
    assert slow.result(60)["text"] == "hi"
    assert worker.batches == [2]


def test_a_crash_mid_batch_fails_every_call_of_the_batch_then_restarts(scripted_gguf: Path, tmp_path: Path, monkeypatch):
    from upskill_hub.models.local_worker import WorkerCrashed

    monkeypatch.setenv("SCRIPTED_RELEASE", str(tmp_path / "release"))
    monkeypatch.setenv("SCRIPTED_CRASH_ONCE", "1")
    monkeypatch.setenv("UPSKILL_LOCAL_BATCH", "8")
    (tmp_path / "crash-marker").touch()
    worker = local.shared_worker(scripted_gguf)
    texts = [f"question {i}" for i in range(7)] + ["CRASH in the middle"]
    first, queued = _queue_behind_a_waiting_call(worker, tmp_path, texts)
    assert first.result(60)["text"] == "hi"
    for fut in queued:  # all 8, not only the one that crashed: none of them got an answer
        with pytest.raises(WorkerCrashed, match=r"died during the call \(SIGSEGV\)"):
            fut.result(60)
    assert worker.batches == [1, 8]
    assert worker.call({"system": "", "messages": [{"role": "user", "content": "again"}], "max_tokens": 8})["text"] == "hi"
    assert worker.crashes == 1


def test_batched_eval_crash_is_error_rows_and_resume_completes_once(scripted_gguf: Path, tmp_path: Path, capsys, monkeypatch):
    """Batching on (the default): the crash fails its whole batch; --resume asks those calls again."""
    skill = make_skill(tmp_path / "skills", cases=CASES)
    (tmp_path / "crash-marker").touch()
    monkeypatch.setenv("SCRIPTED_CRASH_ONCE", "1")
    out = tmp_path / "runs"
    args = ["eval", str(skill), "--model", f"local:{scripted_gguf}", "--output", str(out), "--no-plots"]
    code, stdout, stderr = run_cli(args, capsys, monkeypatch)
    assert code == 1 and "Traceback" not in stderr + stdout
    rows = rows_of(out)
    failed = [r for r in rows if r["error"]]
    assert len(rows) == 8 and failed and all("died during the call (SIGSEGV)" in r["error"] for r in failed)
    assert "boom" in {r["case_id"] for r in failed}
    code, stdout, stderr = run_cli([*args, "--resume"], capsys, monkeypatch)
    assert code == 0, stderr
    rows = rows_of(out)
    keys = [(r["model"], r["condition"], r["case_id"], r["repeat"]) for r in rows]
    assert len(keys) == len(set(keys)) == 8 and all(r["error"] is None for r in rows)


def test_a_batch_takes_the_oldest_request_and_others_of_its_system_prompt_shortest_first():
    from upskill_hub.models.local_worker import _next_batch

    def item(system: str, text: str, tag: str):
        return ({"system": system, "messages": [{"role": "user", "content": text}]}, tag)

    queue = [item("A", "a long question " * 10, "old"), item("B", "b", "other"),
             *(item("A", "q" * n, f"a{n}") for n in (5, 1, 9, 3))]  # fmt: skip
    assert [tag for _, tag in _next_batch(queue, 3)] == ["a1", "a3", "old"]
    assert [tag for _, tag in _next_batch(queue[1:], 8)] == ["other"]


@pytest.mark.parametrize(
    ("setting", "features", "precision"),
    [("", ["avx2", "amx_bf16"], "bf16"), ("", ["avx2", "avx512f"], "fp32"), ("auto", ["avx512_bf16"], "bf16"),
     ("fp32", ["amx_bf16"], "fp32"), ("bf16", [], "bf16")],
)
def test_precision_is_bf16_only_where_the_cpu_has_it_unless_asked(setting, features, precision, scripted_gguf, monkeypatch):
    from upskill_hub.models import local_backends

    monkeypatch.setenv("UPSKILL_LOCAL_PRECISION", setting)
    monkeypatch.setattr(local_backends, "cpu_features", lambda: features)
    client = local.LocalModelClient(local.ModelSpec("local", str(scripted_gguf), None, f"local:{scripted_gguf}"))
    assert (client.precision, client.worker.config.options.precision) == (precision, precision)
    # the cache key's endpoint names bf16, so its answers are never replayed for fp32
    assert client.endpoint.endswith(":bf16") == (precision == "bf16")
