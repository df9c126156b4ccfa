"""Must-show: evals through the real openai / anthropic SDKs against scripted local servers.

The scripted server (upskill_hub.testing.llm_server) answers BANANA when the system prompt
carries the skill, counts tokens as whitespace-separated words and can inject faults, so
every number in the results can be checked against what the server actually did.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _evalkit import make_skill

from upskill_hub.lift.api import run_eval
from upskill_hub.lift.figures.intervals import score_p_value
from upskill_hub.lift.prepare import EvalOptions
from upskill_hub.lift.runner import BASE_SYSTEM_PROMPT
from upskill_hub.models.base import Usage
from upskill_hub.models.pricing import cost_usd
from upskill_hub.rundir import RESULTS_FILE, read_results
from upskill_hub.skill import require_skill
from upskill_hub.testing.llm_server import Fault, count_tokens, running_llm_server

N_CASES = 8
CASES = [
    {
        "id": f"q{i}",
        "input": f"Question Q{i}: greet me please.",
        "assert": [{"type": "contains", "value": "BANANA"}],
    }
    for i in range(N_CASES)
]
FAKE_KEY = "sk-" + "test-0123456789abcdefghijklmnop"


def script(system: str, messages: list[dict], params: dict) -> str:
    """With the skill: always BANANA. Baseline: BANANA only for Q0."""
    user = messages[-1]["content"]
    if "BANANA" in system or "Q0:" in user:
        return "BANANA hello friend"
    return "hello there friend, how are you"


@pytest.fixture
def skill8(tmp_path: Path) -> Path:
    return make_skill(tmp_path / "skills", cases=CASES)


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", FAKE_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)


def _spec(provider: str, srv) -> tuple[str, str]:
    """(model spec, base_url) for the real SDK of ``provider`` pointed at ``srv``."""
    if provider == "openai":
        return "openai:gpt-4.1-mini", srv.openai_base_url
    return "anthropic:claude-haiku-4-5", srv.url


def _req_condition(system: str) -> str:
    return "with_skill" if "BANANA" in system else "baseline"


def _req_case(messages: list[dict]) -> str:
    m = re.search(r"Q(\d+):", messages[-1]["content"])
    assert m is not None
    return f"q{m.group(1)}"


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_rows_tokens_lift_and_intervals_match_the_server(provider: str, skill8: Path, tmp_path: Path):
    skill = require_skill(skill8)
    with running_llm_server(script, latency_s=0.05) as srv:
        spec, base = _spec(provider, srv)
        res = run_eval(skill8, [spec], EvalOptions(base_url=base, output_dir=tmp_path / "out", plots=False))
        reqs = srv.completion_requests
    assert len(reqs) == 2 * N_CASES and len(res.rows) == 2 * N_CASES
    assert all(r.api == provider for r in reqs)
    by_key = {(r.condition, r.case_id): r for r in res.rows}
    for q in reqs:
        row = by_key[(_req_condition(q.system), _req_case(q.messages))]
        answer = script(q.system, q.messages, {})
        n_in = count_tokens(q.system) + sum(count_tokens(m["content"]) for m in q.messages)
        assert row.output == answer
        assert (row.input_tokens, row.output_tokens) == (n_in, count_tokens(answer))
        assert row.error is None and not row.cached and row.finish_reason in ("stop", "end_turn")
        assert row.provider == provider and row.model == spec.split(":", 1)[1]
        # priced from the providers' table, for exactly the tokens the server counted
        assert row.cost_usd == pytest.approx(
            cost_usd(row.model, Usage(n_in, count_tokens(answer), 0), provider=provider)
        )
        assert row.cost_usd > 0
        assert json.loads(row.params) == {"temperature": 0.0, "max_tokens": 1024}
        assert 0.05 <= row.latency_s < 5  # the server's fixed latency, measured by the client
        assert (row.run_id, row.skill_name, row.skill_version) == (
            res.summary.run_id,
            "greeting",
            skill.version,
        )
        assert row.timestamp.endswith("Z") and row.repeat == 0 and row.split == "train"
        assert row.assertions_total == 1 and row.assertions_passed == int(row.passed)
        detail = json.loads(row.assertion_details)[0]
        assert detail["type"] == "contains" and detail["passed"] == row.passed and detail["evidence"]
    s = res.summary
    base_s, skill_s = (next(c for c in s.conditions if c.condition == k) for k in ("baseline", "with_skill"))
    assert (base_s.passed, base_s.n, skill_s.passed, skill_s.n) == (1, 8, 8, 8)
    # 95% Wilson intervals for 1/8 and 8/8 (published values)
    assert (base_s.ci_low, base_s.ci_high) == pytest.approx((0.02242, 0.47089), abs=1e-4)
    assert (skill_s.ci_low, skill_s.ci_high) == pytest.approx((0.67559, 1.0), abs=1e-4)
    # token sums equal what the server counted
    for cond, st in (("baseline", base_s), ("with_skill", skill_s)):
        mine = [q for q in reqs if _req_condition(q.system) == cond]
        total_in = sum(count_tokens(q.system) + count_tokens(q.messages[-1]["content"]) for q in mine)
        total_out = sum(count_tokens(script(q.system, q.messages, {})) for q in mine)
        assert st.mean_input_tokens * 8 == pytest.approx(total_in)
        assert st.mean_output_tokens * 8 == pytest.approx(total_out)
    (lift,) = s.lifts
    assert lift.lift == pytest.approx(7 / 8)
    # the score test of the lift interval: (7 - 1/2) / sqrt(7) standard errors
    assert lift.p_value == pytest.approx(float(score_p_value(7, 0))) == pytest.approx(0.01402, abs=1e-4)
    assert lift.conclusive and 0 < lift.ci_low <= lift.lift <= lift.ci_high <= 1
    assert lift.token_savings == pytest.approx(base_s.mean_total_tokens - skill_s.mean_total_tokens)
    assert lift.token_savings < 0  # the skill text costs input tokens
    # nothing secret reached the results file
    assert FAKE_KEY not in (res.run_dir / RESULTS_FILE).read_text()


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_baseline_and_with_skill_requests_differ_only_by_skill_text(
    provider: str, skill8: Path, tmp_path: Path
):
    skill = require_skill(skill8)
    with running_llm_server(script) as srv:
        spec, base = _spec(provider, srv)
        run_eval(
            skill8,
            [spec],
            EvalOptions(
                base_url=base,
                output_dir=tmp_path,
                plots=False,
                use_cache=False,
                params={"temperature": 0.3, "max_tokens": 77, "seed": 5},
            ),
        )
        reqs = srv.completion_requests
    pairs: dict[str, dict[str, object]] = {}
    for q in reqs:
        pairs.setdefault(_req_case(q.messages), {})[_req_condition(q.system)] = q
    assert len(pairs) == N_CASES
    for pair in pairs.values():
        b, w = pair["baseline"], pair["with_skill"]
        assert b.path == w.path
        bb, wb = dict(b.body), dict(w.body)
        if provider == "openai":
            b_sys, w_sys = bb["messages"][0], wb["messages"][0]
            assert b_sys["role"] == w_sys["role"] == "system"
            bb["messages"], wb["messages"] = bb["messages"][1:], wb["messages"][1:]
            b_sys, w_sys = b_sys["content"], w_sys["content"]
        else:
            b_sys, w_sys = bb.pop("system"), wb.pop("system")
            wb.pop("system", None)
        bb.pop("system", None)
        assert bb == wb  # model, messages, temperature, max tokens, seed...: identical
        assert b_sys == BASE_SYSTEM_PROMPT
        assert w_sys.startswith(b_sys) and w_sys[len(b_sys) :].strip() == skill.prompt_text().strip()
        hb = {k: v for k, v in b.headers.items() if k not in ("content-length", "x-stainless-retry-count")}
        hw = {k: v for k, v in w.headers.items() if k not in ("content-length", "x-stainless-retry-count")}
        assert hb.keys() == hw.keys()
    body = reqs[0].body
    if provider == "openai":  # the Anthropic Messages API of SDK 2.x takes no temperature
        assert body["temperature"] == 0.3 and body["seed"] == 5
    assert body.get("max_tokens", body.get("max_completion_tokens")) == 77


def _with_skill_case(case: str):
    return lambda system, messages: "BANANA" in system and f"Q{case[1:]}:" in messages[-1]["content"]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_faults_become_error_rows_and_nothing_is_lost(provider: str, skill8: Path, tmp_path: Path):
    faults = [
        Fault.rate_limit(retry_after=0.2, times=1, match=_with_skill_case("q1")),  # recovers
        Fault.drop(times=1, match=_with_skill_case("q6")),  # recovers
        Fault.server_error(500, times=2, match=_with_skill_case("q2")),  # both attempts fail
        Fault.malformed_json(times=2, match=_with_skill_case("q3")),
        Fault.hang(60.0, times=2, match=_with_skill_case("q4")),  # cut by the 3 s timeout
        Fault.drop(times=2, match=_with_skill_case("q5")),
    ]
    with running_llm_server(script, faults=faults) as srv:
        spec, base = _spec(provider, srv)
        t0 = time.monotonic()
        res = run_eval(
            skill8,
            [spec],
            EvalOptions(base_url=base, output_dir=tmp_path, plots=False, timeout=3.0, max_retries=1),
        )
        took = time.monotonic() - t0
        served = srv.completion_requests
        assert srv.pending_faults == 0
        rows = read_results(res.run_dir)
        assert len(rows) == 16 and len({r.key for r in rows}) == 16
        errors = {r.case_id: r for r in rows if r.error}
        assert set(errors) == {"q2", "q3", "q4", "q5"}
        assert all(
            r.condition == "with_skill" and r.passed is None and r.output == "" for r in errors.values()
        )
        assert "500" in errors["q2"].error
        assert FAKE_KEY not in (res.run_dir / RESULTS_FILE).read_text()
        ok = {(r.condition, r.case_id): r for r in rows if not r.error}
        assert ok[("with_skill", "q1")].passed and ok[("with_skill", "q6")].passed
        # the 429 was honoured: its retry came at least Retry-After later
        q1 = sorted(
            (q for q in served if _with_skill_case("q1")(q.system, q.messages)), key=lambda q: q.started
        )
        assert len(q1) == 2 and q1[1].started - q1[0].finished >= 0.19
        assert took < 50  # the 60 s hangs were cut by the timeout (two attempts of 3 s)
        skill_stats = next(c for c in res.summary.conditions if c.condition == "with_skill")
        assert (skill_stats.errors, skill_stats.n, skill_stats.passed) == (4, 4, 4)
        assert "failed and are excluded" in res.summary.lifts[0].note
        # resuming retries exactly the failed calls (the faults are spent now)
        before = srv.calls
        again = run_eval(
            skill8,
            [spec],
            EvalOptions(
                base_url=base, output_dir=tmp_path, plots=False, resume=True, timeout=3.0, max_retries=1
            ),
        )
        assert srv.calls - before == 4
        rows = read_results(again.run_dir)
        assert len(rows) == 16 and not any(r.error for r in rows)


def test_identical_rerun_is_served_from_cache(skill8: Path, tmp_path: Path):
    with running_llm_server(script) as srv:
        spec, base = _spec("openai", srv)
        first = run_eval(
            skill8, [spec], EvalOptions(base_url=base, runs=2, output_dir=tmp_path / "a", plots=False)
        )
        assert srv.calls == 32
        second = run_eval(
            skill8, [spec], EvalOptions(base_url=base, runs=2, output_dir=tmp_path / "b", plots=False)
        )
        assert srv.calls == 32  # no call at all
        assert second.stats.cached == 32 and all(r.cached for r in second.rows)
        assert [c.pass_rate for c in second.summary.conditions] == [
            c.pass_rate for c in first.summary.conditions
        ]
        third = run_eval(
            skill8,
            [spec],
            EvalOptions(base_url=base, runs=2, output_dir=tmp_path / "c", plots=False, use_cache=False),
        )
        assert srv.calls == 64 and not any(r.cached for r in third.rows)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_default_transport_writes_the_same_rows_as_the_sdks_httpx(
    provider: str, skill8: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The aiohttp transport (default) and the SDKs' own httpx give the same results file."""
    from upskill_hub.models.transport import TRANSPORT_ENV

    volatile = {"run_id", "timestamp", "latency_s"}
    lines = {}
    for name in ("httpx", "aiohttp"):
        monkeypatch.setenv(TRANSPORT_ENV, name)
        with running_llm_server(script, latency_s=0.01) as srv:
            spec, base = _spec(provider, srv)
            res = run_eval(
                skill8,
                [spec],
                EvalOptions(
                    base_url=base,
                    runs=2,
                    concurrency=16,
                    use_cache=False,
                    output_dir=tmp_path / name,
                    plots=False,
                ),
            )
            assert srv.calls == 32
        lines[name] = sorted(
            json.dumps({k: v for k, v in json.loads(line).items() if k not in volatile}, sort_keys=True)
            for line in (res.run_dir / RESULTS_FILE).read_text().splitlines()
        )
    assert len(lines["aiohttp"]) == 32 and lines["aiohttp"] == lines["httpx"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cli(*args: str, env: dict | None = None) -> subprocess.Popen:
    from cli_runner import default_ctrl_c

    return subprocess.Popen(
        [sys.executable, "-m", "upskill_hub.cli.app", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        preexec_fn=default_ctrl_c,  # the test's SIGINT is a Ctrl-C, whatever the runner ignores
    )


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["kill-9", "ctrl-c"])
def test_kill_mid_run_then_resume_gives_one_row_per_call(sig: int, skill8: Path, tmp_path: Path):
    out = tmp_path / "runs"
    env = {**os.environ, "UPSKILL_HUB_CACHE": str(tmp_path / "cache")}
    # The server answers 10 calls, then holds the rest until the signal has been sent:
    # the run cannot finish before the kill, whatever the machine's speed.
    with running_llm_server(script, hold_after=10) as srv:
        args = [
            "eval",
            str(skill8),
            "--model",
            f"openai-compatible:scripted@{srv.openai_base_url}",
            "--runs",
            "3",
            "--concurrency",
            "2",
            "--output",
            str(out),
            "--no-plots",
        ]
        proc = _cli(*args, env=env)
        deadline = time.monotonic() + 60
        results = None
        while time.monotonic() < deadline:
            found = list(out.glob(f"*/{RESULTS_FILE}"))
            if found and len(found[0].read_text().splitlines()) >= 10:
                results = found[0]
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        assert results is not None, "the run never got going"
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=20)
        assert proc.returncode != 0
        if sig == signal.SIGINT:  # Ctrl-C: the calls in flight are cancelled, the folder stays resumable
            assert "Traceback" not in err, err
        partial = read_results(results.parent)
        assert len(partial) == 10  # exactly the calls answered before the hold
        calls_at_kill = srv.calls
        srv.release()
        proc = _cli(*args, "--resume", env=env)
        stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 0, stderr
    rows = read_results(results.parent)
    planned = {
        (r.model, "inject", c, f"q{i}", rep)
        for r in rows[:1]
        for c in ("baseline", "with_skill")
        for i in range(N_CASES)
        for rep in range(3)
    }
    assert len(rows) == 48 and {r.key for r in rows} == planned  # exactly one row per planned call
    assert not any(r.error for r in rows)
    # nothing answered before the kill was asked again (only calls in flight may repeat)
    assert srv.calls - calls_at_kill <= 48 - len(partial) + 2
    assert (results.parent / "summary.json").is_file()
    assert "Results:" in stdout
