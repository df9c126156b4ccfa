"""The Space in a real browser: Debian's headless Chromium driven by Playwright.

Needs /usr/bin/chromium (``apt-get update && apt-get install -y chromium``); the test is
skipped with that message when it is missing. Screenshots of every step are saved under
the test's tmp folder (``<tmp_path>/screenshots``).
"""

from __future__ import annotations

import os
import re

import pytest
from space_helpers import banana_script

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian chromium: apt-get install -y chromium"),
]


def test_browse_search_open_evaluate_in_chromium(running_app, space_repo, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    from upskill_hub.testing.llm_server import running_llm_server

    shots = tmp_path / "screenshots"
    shots.mkdir()
    with running_llm_server(banana_script, models=("scripted-a",), latency_s=1.0) as slow_llm, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1400})
            page_errors: list[str] = []
            page.on("pageerror", lambda exc: page_errors.append(str(exc)))

            # 1. load: the table lists the pushed skills
            page.goto(running_app, wait_until="domcontentloaded")
            table = page.locator("#skills-table")
            expect(table).to_contain_text("greeting", timeout=30_000)
            expect(table).to_contain_text("xss-demo")
            expect(page.locator("#status")).to_contain_text("3 skills")
            page.screenshot(path=str(shots / "01-loaded.png"), full_page=True)

            # 2. search
            page.locator("#search-box textarea, #search-box input").first.fill("json")
            expect(page.locator("#match-note")).to_contain_text("1 of 3", timeout=10_000)
            expect(table).not_to_contain_text("xss-demo")
            page.screenshot(path=str(shots / "02-search.png"), full_page=True)

            # 3. open the hostile skill: it renders, nothing in it runs
            page.locator("#search-box textarea, #search-box input").first.fill("")
            expect(table).to_contain_text("xss-demo", timeout=10_000)
            table.get_by_text("xss-demo", exact=True).first.click()
            skill_md = page.locator("#skill-md")
            expect(skill_md).to_contain_text("Hostile skill", timeout=15_000)
            expect(skill_md.locator("table")).to_have_count(2)  # frontmatter + the Markdown table
            assert skill_md.locator("script").count() == 0
            assert skill_md.locator("[onerror]").count() == 0
            assert page.evaluate("() => window.__xss === undefined")  # no script, handler or link ran
            skill_md.get_by_text("click me").click()  # a javascript: link must not run either
            assert page.evaluate("() => window.__xss === undefined")
            page.screenshot(path=str(shots / "03-skill-page.png"), full_page=True)

            # 4. open 'greeting' and evaluate it against the (slow) scripted model
            table.get_by_text("greeting", exact=True).first.click()
            expect(page.locator("#skill-header")).to_contain_text("3 test cases", timeout=15_000)
            page.locator("#eval-this").click()
            expect(page.locator("#eval-cases")).to_contain_text("greet", timeout=15_000)
            models = page.locator("#models-box textarea")
            models.fill(f"openai-compatible:scripted-a@{slow_llm.url}/v1")
            page.locator("#run-btn").click()
            # Partial results: some calls done (not all), and their rows already in the live table.
            expect(page.locator("#run-status")).to_contain_text(re.compile(r"Running .*: [1-5]/6 calls done"), timeout=20_000)
            expect(page.locator("#live-table")).to_contain_text("scripted-a")
            page.screenshot(path=str(shots / "04-progress.png"), full_page=True)

            # 5. results: table with lift
            expect(page.locator("#run-status")).to_contain_text("Finished", timeout=60_000)
            summary = page.locator("#summary-table")
            expect(summary).to_contain_text("scripted-a")
            expect(summary).to_contain_text("+67 pp")
            expect(page.locator("#live-table")).to_contain_text("with_skill")
            page.screenshot(path=str(shots / "05-results.png"), full_page=True)

            # 6. upload a SKILL.md: its text lands in the paste box, ready to evaluate
            upload = tmp_path / "SKILL.md"
            upload.write_text("---\nname: uploaded\ndescription: From a file.\n---\n# Uploaded skill\n")
            page.get_by_text("Paste or upload a skill").click()
            page.locator("#upload-skill").locator("xpath=..").locator("input[type=file]").set_input_files(str(upload))
            expect(page.locator("#pasted-skill textarea")).to_have_value(upload.read_text(), timeout=15_000)
            assert page.evaluate("() => window.__xss === undefined")
            assert not page_errors, page_errors
        finally:
            browser.close()
    assert sorted(p.name for p in shots.iterdir()) == [
        "01-loaded.png", "02-search.png", "03-skill-page.png", "04-progress.png", "05-results.png",
    ]  # fmt: skip
