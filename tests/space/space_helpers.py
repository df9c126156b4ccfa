"""Plain helpers shared by the Space tests (imported as ``space_helpers``; fixtures stay in conftest)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from upskill_hub._util.netutil import free_port  # noqa: F401  (re-exported for the Space tests)
from upskill_hub.cases import parse_meta
from upskill_hub.skill import Skill

#: SKILL.md body of a hostile skill: none of this may run in a visitor's browser.
XSS_BODY = """# Hostile skill

<script>window.__xss = 'script';</script>

<img src="x" onerror="window.__xss = 'onerror'">

[click me](javascript:window.__xss='link')

| col | val |
| --- | --- |
| a   | 1   |
"""


#: Debian's Chromium (no browser download works offline) and how the browser tests start it.
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
#: ``pytestmark`` of a browser test module: slow, and skipped where Chromium is absent.
BROWSER_MARKS = [
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian chromium: apt-get install -y chromium"),
]


@contextlib.contextmanager
def chromium() -> Iterator:
    """A headless Chromium (Playwright's ``Browser``), closed afterwards."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@contextlib.contextmanager
def launched_space(source: str) -> Iterator[str]:
    """The Space on ``source`` launched on 127.0.0.1 (a free port): its URL; closed afterwards."""
    from upskill_hub.space.ui import build_app

    demo = build_app(source)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        demo.close()


GREETING_BODY = "# Greeting\n\nAlways greet with the word BANANA.\n"
CASES = [
    {"id": "greet", "input": "Say hello.", "assert": [{"type": "contains", "value": "BANANA"}]},
    {"id": "wave", "input": "Wave at me.", "assert": [{"type": "icontains", "value": "banana"}]},
    {"id": "plain", "input": "Just talk.", "assert": [{"type": "not-contains", "value": "ERROR"}]},
]


def banana_script(system: str, messages: list[dict[str, str]], params: dict) -> str:
    """With the greeting skill in the system prompt, say BANANA; model 'scripted-b' never does."""
    if "BANANA" in system and params.get("model") != "scripted-b":
        return "BANANA! hello there"
    return "hello there"


def make_skills(root: Path) -> dict[str, Path]:
    meta = parse_meta({"schema_version": 1, "cases": CASES})
    out = {}
    out["greeting"] = Skill.create("greeting", "Greets with BANANA. Use when greeting someone.", GREETING_BODY, meta=meta).write(
        root / "greeting"
    )
    out["xss-demo"] = Skill.create(
        "xss-demo",
        "A skill whose Markdown tries to run script in the browser.",
        XSS_BODY,
        meta=parse_meta({"schema_version": 1, "cases": CASES[:1]}),
        files={"references/notes.md": b"# Notes\n\nplain reference file\n"},
    ).write(root / "xss-demo")
    out["json-helper"] = Skill.create(
        "json-helper", "Answers in strict JSON. Use for structured output.", "# JSON\n\nAnswer only JSON.\n"
    ).write(root / "json-helper")
    return out


def model_specs(server) -> list[str]:
    return [f"openai-compatible:scripted-a@{server.url}/v1", f"openai-compatible:scripted-b@{server.url}/v1"]


def wait_for(url: str, proc: subprocess.Popen, timeout: float = 90) -> None:
    """Wait until ``url`` answers; fail with the process output if it exits or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except OSError as exc:
            if proc.poll() is not None or time.monotonic() > deadline:
                out = proc.stdout.read() if proc.poll() is not None else ""
                raise AssertionError(f"did not serve {url}:\n{out}") from exc
            time.sleep(0.5)
