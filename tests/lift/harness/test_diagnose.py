"""A failed agent call's error names the CLI's own words, the cause and the fix (issue 46)."""

from __future__ import annotations

from upskill_hub.lift.api import run_eval
from upskill_hub.lift.harness import HarnessOptions
from upskill_hub.lift.harness.claude_code import ADAPTER as CLAUDE
from upskill_hub.lift.harness.diagnose import failure_line
from upskill_hub.lift.harness.opencode import ADAPTER as OPENCODE
from upskill_hub.lift.harness.process import ProcessResult
from upskill_hub.lift.prepare import EvalOptions


def _res(stderr: bytes, *, timed_out: bool = False, stdout: bytes = b"") -> ProcessResult:
    return ProcessResult(returncode=None if timed_out else 1, stdout=stdout, stderr_tail=stderr,
                         timed_out=timed_out, elapsed_s=1.0)  # fmt: skip


def test_a_timeout_says_what_the_cli_was_retrying_and_the_fix():
    res = _res(b"retrying...\nAPI error: connect ECONNREFUSED 127.0.0.1:9 (attempt 7 of 10)\n", timed_out=True)
    line = failure_line("timed out after 60 s; its process group was killed", res, CLAUDE, None)
    assert "(stderr: API error: connect ECONNREFUSED 127.0.0.1:9 (attempt 7 of 10))" in line
    assert line.endswith("connection: the CLI could not reach its endpoint: check ANTHROPIC_BASE_URL and that the "
                         "server is up")  # fmt: skip


def test_the_provider_follows_opencodes_model():
    line = failure_line("opencode: Unexpected server error", _res(b"Error: 401 Unauthorized\n"), OPENCODE,
                        "openai-compatible/m")  # fmt: skip
    assert "(stderr: Error: 401 Unauthorized)" in line and "auth: the provider refused the credentials" in line
    assert "OPENAI_API_KEY" in line


def test_words_that_tell_nothing_get_no_guess():
    line = failure_line("exited with code 3", _res(b"something odd happened\n"), CLAUDE, None)
    assert line == "exited with code 3 (stderr: something odd happened)"


def test_an_eval_row_of_a_cli_that_refuses_its_key_names_the_fix(agents_env, widget_skill, tmp_path):
    opts = EvalOptions(agents=["gemini"], output_dir=tmp_path / "runs", cache_dir=tmp_path / "cache", plots=False,
                       harness=HarnessOptions(timeout=60, agent_env=["FAKE_AGENT_MODE=leak"]))  # fmt: skip
    rows = run_eval(widget_skill, [], opts).rows
    assert rows and all("auth: the provider refused the credentials: check GEMINI_API_KEY" in r.error for r in rows)


def test_a_cli_that_can_never_finish_is_stopped_long_before_its_timeout(agents_env, widget_skill, tmp_path):
    """Codex waiting for a network that is not there: the row ends at once, naming the cause."""
    opts = EvalOptions(agents=["codex"], output_dir=tmp_path / "runs", cache_dir=tmp_path / "cache", plots=False,
                       harness=HarnessOptions(timeout=300, agent_env=["FAKE_AGENT_MODE=nonetwork"]))  # fmt: skip
    opts.include_baseline = False
    rows = run_eval(widget_skill, [], opts).rows
    assert rows and all("stopped after" in r.error and "waits for the network without end" in r.error for r in rows)
    assert all("check that OPENAI_BASE_URL" in r.error for r in rows)
    assert all(r.latency_s is None or r.latency_s < 60 for r in rows)


def test_run_process_ends_a_call_its_watch_calls_stalled(tmp_path):
    import asyncio
    import sys

    from upskill_hub.lift.harness.process import run_process

    loop_forever = "import sys, time\nwhile True:\n    print('tick', flush=True)\n    time.sleep(0.02)\n"
    res = asyncio.run(run_process([sys.executable, "-c", loop_forever], cwd=tmp_path, env={}, timeout=300,
                                  watch=lambda tail: "ticks forever" if tail.count(b"tick") >= 3 else None))  # fmt: skip
    assert res.stopped == "ticks forever" and res.returncode is None and not res.timed_out
    assert res.stdout.count(b"tick") >= 3
