"""Visitor evaluations: keys are explicit, the Space's own secrets are never used, endpoints checked."""

from __future__ import annotations

import asyncio

import pytest
from space_helpers import banana_script

from upskill_hub.errors import UpskillError
from upskill_hub.models.base import GenerationParams, Message
from upskill_hub.space.safety import ALLOW_PRIVATE_ENV, check_base_url
from upskill_hub.space.session import SessionKeys, build_clients, skill_from_text, split_specs

SPACE_SECRET = "sk-" + "space-owner-secret-0123456789abcdef"
VISITOR_KEY = "sk-" + "visitor-key-abcdefghijklmnop0123"


@pytest.fixture(autouse=True)
def _space_env(monkeypatch):
    # The Space's own secrets are in its environment, as on a real Space.
    monkeypatch.setenv("OPENAI_API_KEY", SPACE_SECRET)
    monkeypatch.setenv("ANTHROPIC_API_KEY", SPACE_SECRET)
    monkeypatch.setenv("HF_TOKEN", "hf_" + "s" * 34)
    monkeypatch.setenv("UPSKILL_API_KEY", SPACE_SECRET)
    monkeypatch.delenv(ALLOW_PRIVATE_ENV, raising=False)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/v1",
        "http://localhost/v1",
        "http://169.254.169.254/latest",
        "http://10.0.0.5/v1",
        "http://[::1]:9000/v1",
        "http://192.168.1.2/v1",
        "http://[::ffff:127.0.0.1]/v1",
        "ftp://example.com",
        "http://user:pw@8.8.8.8/v1",
    ],
)
def test_internal_or_odd_base_urls_are_refused(url):
    with pytest.raises(UpskillError):
        check_base_url(url)


def test_public_address_and_operator_override(monkeypatch):
    assert check_base_url("http://8.8.8.8/v1/") == "http://8.8.8.8/v1"
    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "1")
    assert check_base_url("http://127.0.0.1:8080/v1") == "http://127.0.0.1:8080/v1"


def test_hosted_providers_need_a_typed_key_not_the_environment():
    for spec, what in (("openai:gpt-4.1-mini", "OpenAI"), ("anthropic:claude-haiku-4-5", "Anthropic"),
                       ("hf:Qwen/Qwen2.5-7B-Instruct", "Hugging Face")):  # fmt: skip
        with pytest.raises(UpskillError, match=what):
            build_clients([spec], SessionKeys())
    with pytest.raises(UpskillError, match="local model"):
        build_clients(["local"], SessionKeys())
    with pytest.raises(UpskillError, match="internal address"):
        build_clients(["my-model"], SessionKeys(), base_url="http://127.0.0.1:1/v1")


def _ask(client) -> str:
    async def go():
        try:
            out = await client.complete("", [Message("user", "hi")], GenerationParams(max_tokens=10))
            return out.text
        finally:
            await client.aclose()

    return asyncio.run(go())


def test_typed_key_reaches_the_endpoint_and_env_key_never_does(monkeypatch):
    from upskill_hub.models.base import ModelCallError
    from upskill_hub.testing.llm_server import running_llm_server

    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "1")
    # An endpoint that only accepts the visitor's key.
    with running_llm_server(banana_script, models=("m",), api_key=VISITOR_KEY) as srv:
        (ok,) = build_clients(["m"], SessionKeys(endpoint_key=VISITOR_KEY), base_url=f"{srv.url}/v1")
        assert _ask(ok) == "hello there"
        # A hosted spec redirected to the endpoint uses the typed key too, never OPENAI_API_KEY.
        (proxied,) = build_clients(
            ["openai:m"], SessionKeys(openai_key=VISITOR_KEY), base_url=f"{srv.url}/v1"
        )
        assert _ask(proxied) == "hello there"
    # An endpoint that only accepts the Space's secret: a visitor without a key is refused.
    with running_llm_server(banana_script, models=("m",), api_key=SPACE_SECRET) as srv:
        (anon,) = build_clients(["m"], SessionKeys(), base_url=f"{srv.url}/v1")
        with pytest.raises(ModelCallError) as info:
            _ask(anon)
        assert SPACE_SECRET not in str(info.value)
        assert all("space-owner" not in str(r.headers) for r in srv.requests)


def test_session_keys_never_print():
    keys = SessionKeys(openai_key=VISITOR_KEY, hf_token="hf_" + "v" * 34)
    assert VISITOR_KEY not in repr(keys) and VISITOR_KEY not in str(keys) and "v" * 34 not in f"{keys}"
    assert "openai_key" in repr(keys)


def test_split_specs_and_pasted_skill(tmp_path):
    assert split_specs("a, b\n\n c ") == ["a", "b", "c"]
    text = "---\nname: pasted\ndescription: A pasted skill.\n---\n# Hi\n"
    meta = '{"cases": [{"id": "x", "input": "hi", "assert": [{"type": "contains", "value": "hi"}]}]}'
    skill = skill_from_text(text, meta, tmp_path)
    assert skill.name == "pasted" and [c.id for c in skill.meta.cases] == ["x"]
    with pytest.raises(UpskillError, match="name"):
        skill_from_text("---\nname: Bad Name\ndescription: d\n---\nx\n", None, tmp_path / "2")
    with pytest.raises(UpskillError, match="frontmatter"):
        skill_from_text("no frontmatter", None, tmp_path / "3")
    with pytest.raises(UpskillError, match="larger than"):
        skill_from_text(text, "x" * 300_000, tmp_path / "4")
    with pytest.raises(UpskillError, match="larger than"):
        skill_from_text(text + "y" * 300_000, None, tmp_path / "5")
    assert not (tmp_path / "4").exists() and not (tmp_path / "5").exists()  # nothing half-written


def test_visitor_key_is_not_written_into_the_run_folder(monkeypatch, tmp_path, caplog):
    import gc

    from space_helpers import make_skills

    from upskill_hub.skill import load_skill
    from upskill_hub.space.session import EvalSession
    from upskill_hub.testing.llm_server import running_llm_server

    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "1")
    skill = load_skill(make_skills(tmp_path / "skills")["greeting"]).skill
    with running_llm_server(banana_script, models=("m",), api_key=VISITOR_KEY) as srv:
        clients = build_clients(["m"], SessionKeys(endpoint_key=VISITOR_KEY), base_url=f"{srv.url}/v1")
        ev = EvalSession(skill, clients, runs=1, secrets=[VISITOR_KEY], workdir=tmp_path / "work").start()
        last = list(ev.updates())[-1]
    assert last.error is None and last.result.summary.lifts[0].lift == pytest.approx(2 / 3)
    del clients, ev
    gc.collect()  # the session closed its clients' connections in the run's own event loop
    assert "Unclosed" not in caplog.text
    files = [p for p in (tmp_path / "work").rglob("*") if p.is_file()]
    assert files
    for p in files:
        data = p.read_bytes()
        assert VISITOR_KEY.encode() not in data and SPACE_SECRET.encode() not in data, p


def test_old_eval_folders_are_swept(tmp_path):
    import os
    import shutil
    import time

    from upskill_hub.space.session import new_workdir

    old = new_workdir()
    past = time.time() - 10_000
    os.utime(old, (past, past))
    fresh = new_workdir()  # creating one sweeps folders past their time
    assert not old.exists() and fresh.is_dir()
    shutil.rmtree(fresh)


def test_more_concurrent_evaluations_than_slots_are_refused(monkeypatch, tmp_path):
    import threading

    from space_helpers import make_skills

    from upskill_hub.skill import load_skill
    from upskill_hub.space import session
    from upskill_hub.testing.llm_server import running_llm_server

    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "1")
    monkeypatch.setattr(session, "MAX_EVALS", 1)
    monkeypatch.setattr(session, "_EVAL_SLOTS", threading.BoundedSemaphore(1))
    skill = load_skill(make_skills(tmp_path / "skills")["greeting"]).skill
    # Every call is held until release(): the first evaluation is surely still running below.
    with running_llm_server(banana_script, models=("m",), hold_after=0) as srv:
        clients = build_clients(["m"], SessionKeys(), base_url=f"{srv.url}/v1")
        first = session.EvalSession(skill, clients, workdir=tmp_path / "w1").start()
        with pytest.raises(UpskillError, match="running 1 evaluations already"):
            session.EvalSession(skill, clients, workdir=tmp_path / "w2").start()
        srv.release()
        assert list(first.updates())[-1].error is None
        # The slot is free again once the first one finished.
        second = session.EvalSession(skill, clients, workdir=tmp_path / "w3").start()
        assert list(second.updates())[-1].error is None


def test_push_handle_names_only_runs_this_space_made(tmp_path):
    from upskill_hub.space.session import remember_run, run_for

    run = tmp_path / "run"
    run.mkdir()
    handle = remember_run(run)
    assert run_for(handle) == run and str(tmp_path) not in handle
    for hostile in (str(run), "/etc", "", "../" + handle):
        with pytest.raises(UpskillError, match="no such evaluation"):
            run_for(hostile)
    run.rmdir()
    with pytest.raises(UpskillError, match="removed"):
        run_for(handle)
