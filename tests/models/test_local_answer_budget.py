"""The local model's answer budget (issue 48 item 2): answers that loop end, ``eval --model
local`` defaults to the demo's token budget, piped runs print progress, and an answer's
time is its own share of a batch, not the batch's latency.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from _evalkit import make_skill
from cli_runner import run_cli

from upskill_hub.cli import eval as eval_cli
from upskill_hub.models import local_backends, local_worker
from upskill_hub.rundir import RESULTS_FILE

CASES = [
    {"id": f"c{i}", "input": f"Question {i}.", "assert": [{"type": "contains", "value": "BANANA"}]}
    for i in range(10)
]


class FakeTok:
    """Just what the decode loop uses: token ids shown as ``<id>``, ``2`` is end of answer."""

    eos_token_id = pad_token_id = 2
    unk_token_id = None

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return "".join(f"<{i}>" for i in ids if not (skip_special_tokens and i == 2))

    def convert_tokens_to_ids(self, name: str) -> int | None:
        return {"<|im_end|>": 2}.get(name)


def test_an_answer_that_loops_ends_there_keeping_one_stretch() -> None:
    loop = [40, 41] * 20  # "hello, hello, hello, ..." as token ids
    new = [7, 8, 9, *loop]
    answer = local_backends._row_answer(FakeTok(), [1, 1, 1], new, 1024, [], {2})
    assert answer is not None, "a looping answer ran on to max_tokens"
    assert answer["finish_reason"] == "repetition"
    assert answer["text"] == "<7><8><9><40><41>"
    assert answer["output_tokens"] == len(new)  # every generated token is counted (it was paid for)
    # A longer stretch said three times running ("# This file is ... Apache 2.0.\n#\n" x 3) ends too.
    sentence = list(range(100, 115))
    answer = local_backends._row_answer(FakeTok(), [1], [7, *sentence * 3], 1024, [], {2})
    assert answer is not None and answer["finish_reason"] == "repetition"
    assert answer["text"] == "".join(f"<{i}>" for i in [7, *sentence])
    # Varied text, a stretch said twice, and a short run of repeats, go on.
    assert local_backends._row_answer(FakeTok(), [1], [7, *sentence * 2, 8], 1024, [], {2}) is None
    assert local_backends._row_answer(FakeTok(), [1], list(range(10, 80)), 1024, [], {2}) is None
    assert local_backends._row_answer(FakeTok(), [1], [7, *[40, 41] * 8], 1024, [], {2}) is None


def test_eval_local_defaults_to_the_demo_budget_an_explicit_one_wins_and_piped_runs_print_progress(
    scripted_gguf: Path, tmp_path: Path, capsys, monkeypatch
) -> None:
    skill = make_skill(tmp_path / "skills", cases=CASES)
    base = ["eval", str(skill), "--model", f"local:{scripted_gguf}", "--no-plots"]

    code, _, stderr = run_cli([*base, "--output", str(tmp_path / "a")], capsys, monkeypatch)
    assert code == 0, stderr
    assert {json.loads(r["params"])["max_tokens"] for r in rows_of(tmp_path / "a")} == {
        64
    }  # the demo's budget
    # stderr is not a terminal here: progress comes as lines while the calls go, one per tenth.
    progress = [line for line in stderr.splitlines() if re.match(r"eval: \d+/20 calls", line)]
    assert progress[0].startswith("eval: 0/20 calls") and progress[-1].startswith("eval: 20/20 calls"), stderr
    assert 10 <= len(progress) <= 12, progress

    code, _, stderr = run_cli(
        [*base, "--output", str(tmp_path / "b"), "--max-tokens", "300"], capsys, monkeypatch
    )
    assert code == 0, stderr
    assert {json.loads(r["params"])["max_tokens"] for r in rows_of(tmp_path / "b")} == {300}
    assert eval_cli.default_max_tokens(["haiku"]) == eval_cli.default_max_tokens(["local", "haiku"]) == 1024


def test_a_slow_call_still_gets_a_progress_line_every_interval() -> None:
    now = [0.0]
    lines: list[str] = []
    progress = eval_cli.LineProgress(lines.append, every_s=30.0, clock=lambda: now[0])
    progress._thread = object()  # type: ignore[assignment] - no timer thread: the test ticks
    progress.start("eval", 24, 0)
    now[0] = 29.0
    progress.tick()
    now[0] = 95.0
    progress.tick()
    assert lines == ["eval: 0/24 calls, 0m 00s", "eval: 0/24 calls, 1m 35s"]


def rows_of(out: Path) -> list[dict[str, Any]]:
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    return [json.loads(line) for line in (run_dir / RESULTS_FILE).read_text().splitlines()]


def test_answers_made_one_by_one_report_their_own_time_not_the_wait(monkeypatch) -> None:
    clock = [0.0]
    monkeypatch.setattr(local_worker.time, "perf_counter", lambda: clock[0])

    class OneByOne:
        def generate(self, request: dict[str, Any]) -> dict[str, Any]:
            clock[0] += 10.0
            return {"text": "hi", "input_tokens": 1, "output_tokens": 1, "finish_reason": "stop"}

    answers = local_worker._answer_batch(OneByOne(), [{}, {}, {}], lambda index, answer: None)
    assert [a["ok"]["seconds"] for a in answers] == [10.0, 10.0, 10.0]


def test_a_batched_answer_reports_its_share_of_the_batch(monkeypatch) -> None:
    """Two rows decoded together: each step's time is split among the rows it computed, so
    the answers' times add up to the batch's, and the short one is not charged the long one's."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    clock = [0.0]
    monkeypatch.setattr(local_backends.time, "perf_counter", lambda: clock[0])
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=2)  # fmt: skip
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).eval()
    forward = model.forward

    @functools.wraps(forward)
    def timed_forward(*args: Any, **kwargs: Any) -> Any:
        clock[0] += 1.0  # each decoding step costs one second, whatever the batch size
        return forward(*args, **kwargs)

    monkeypatch.setattr(model, "forward", timed_forward, raising=False)
    with torch.no_grad():  # the end-of-answer token scores 0, the others ±: some other token always wins
        model.lm_head.weight[FakeTok.eos_token_id] = 0.0
    backend = local_backends.TransformersBackend()
    backend._model, backend._tok = model, FakeTok()
    settled: dict[int, dict[str, Any]] = {}
    prompts = [list(range(3, 8)), list(range(8, 15))]  # different lengths: one row is padded
    backend._greedy_batch([(0, prompts[0], 2, []), (1, prompts[1], 4, [])], settled.__setitem__)
    assert [settled[i]["output_tokens"] for i in (0, 1)] == [2, 4]
    steps = clock[0]
    assert steps == 4
    seconds = [settled[0]["seconds"], settled[1]["seconds"]]
    assert seconds == [1.0, 3.0]  # 2 shared steps (0.5 each), then 2 the long row ran alone
    assert sum(seconds) == steps
