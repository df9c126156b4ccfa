"""The Space in a real browser: Debian's headless Chromium driven by Playwright.

Needs /usr/bin/chromium (``apt-get update && apt-get install -y chromium``); the test is
skipped with that message when it is missing. Screenshots of every step are saved under
the test's tmp folder (``<tmp_path>/screenshots``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from space_helpers import BROWSER_MARKS, CHROMIUM, CHROMIUM_ARGS, banana_script

pytestmark = BROWSER_MARKS


#: Where the README's screenshots go when ``UPSKILL_README_SCREENSHOTS=1`` (see the README's Space section).
README_SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
KEY_COLUMNS = ["name", "best lift [95% CI]", "best model", "tests", "tokens"]

#: Every table header cell on the page whose text is a bare number: Gradio's placeholder for a table with no headers.
PLACEHOLDER_HEADERS = """() => Array.from(document.querySelectorAll('th'))
    .map(th => th.innerText.trim()).filter(t => /^[0-9]+$/.test(t))"""
#: Images that are shown but failed to load (the broken-image icon).
BROKEN_IMAGES = """() => Array.from(document.querySelectorAll('img'))
    .filter(i => i.offsetParent !== null && (!i.complete || i.naturalWidth === 0)).map(i => i.outerHTML)"""


#: Every image has finished loading (or failed to): only then can a broken one be told apart.
IMAGES_SETTLED = "() => Array.from(document.images).every(i => i.complete)"


def _no_placeholders(page) -> None:
    assert page.evaluate(PLACEHOLDER_HEADERS) == [], "a table shows placeholder headers"
    # An image still loading (a slow, shared machine) is not a broken one: wait for every
    # image to settle, then look for those that failed.
    page.wait_for_function(IMAGES_SETTLED, timeout=30_000)
    assert page.evaluate(BROKEN_IMAGES) == [], "an empty or broken image frame is shown"


def _key_columns_fit(page, width: int) -> None:
    """The key columns' headers are on screen, inside ``width``, and nothing scrolls sideways."""
    table = page.locator("#skills-table")
    for name in KEY_COLUMNS:
        th = table.locator("th", has_text=name).first
        box = th.bounding_box()
        assert box is not None and box["width"] > 0, f"column {name!r} is not shown"
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, f"column {name!r} is off screen: {box}"
    widths = page.evaluate(
        """() => Array.from(document.querySelectorAll('#skills-table *'))
            .filter(e => e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX.match(/auto|scroll/))
            .map(e => [e.className, e.scrollWidth, e.clientWidth])"""
    )
    assert widths == [], f"the browse table scrolls sideways: {widths}"
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth"), (
        "the page scrolls sideways"
    )


def test_browse_search_open_evaluate_in_chromium(running_app, space_repo, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    from upskill_hub.testing.llm_server import running_llm_server

    shots = tmp_path / "screenshots"
    shots.mkdir()
    readme = os.environ.get("UPSKILL_README_SCREENSHOTS") == "1"
    if readme:
        README_SHOTS.mkdir(parents=True, exist_ok=True)
    with (
        running_llm_server(banana_script, models=("scripted-a",), latency_s=1.0) as slow_llm,
        sync_playwright() as pw,
    ):
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page_errors: list[str] = []
            page.on("pageerror", lambda exc: page_errors.append(str(exc)))

            # 1. load: the table lists the pushed skills; the key columns fit 1280 px; no placeholders anywhere
            page.goto(running_app, wait_until="domcontentloaded")
            table = page.locator("#skills-table")
            expect(table).to_contain_text("greeting", timeout=30_000)
            expect(table).to_contain_text("xss-demo")
            expect(page.locator("#status")).to_contain_text("3 skills")
            _key_columns_fit(page, 1280)
            expect(table).to_contain_text("+67 pts")
            _no_placeholders(page)
            page.screenshot(path=str(shots / "01-loaded.png"), full_page=True)
            if readme:
                page.screenshot(path=str(README_SHOTS / "browse.png"))
            for tab in ("Skill", "Leaderboard", "Evaluate"):  # every empty state, before anything is chosen
                page.get_by_role("tab", name=tab, exact=True).click()
                _no_placeholders(page)
            expect(page.locator("#run-progress")).to_contain_text("Nothing is running")
            page.get_by_role("tab", name="Skill", exact=True).click()
            expect(page.locator("#skill-header")).to_contain_text("Click a skill")
            expect(page.locator("#lift-chart")).to_contain_text("No results yet")
            for sub in ("Answers", "SKILL.md", "Test cases", "Files", "Results"):  # the skill page's own tabs
                page.get_by_role("tab", name=sub, exact=True).click()
                _no_placeholders(page)
            page.get_by_role("tab", name="Browse", exact=True).click()

            # 2. search
            page.locator("#search-box textarea, #search-box input").first.fill("json")
            expect(page.locator("#match-note")).to_contain_text("1 of 3", timeout=10_000)
            expect(table).not_to_contain_text("xss-demo")
            page.screenshot(path=str(shots / "02-search.png"), full_page=True)

            # 3. click the hostile skill's row: its page opens, it renders, nothing in it runs
            page.locator("#search-box textarea, #search-box input").first.fill("")
            expect(table).to_contain_text("xss-demo", timeout=10_000)
            table.get_by_text("xss-demo", exact=True).first.click()
            expect(page.locator("#skill-header")).to_contain_text("xss-demo", timeout=15_000)
            page.get_by_role("tab", name="SKILL.md", exact=True).click()
            skill_md = page.locator("#skill-md")
            expect(skill_md).to_contain_text("Hostile skill", timeout=15_000)
            expect(skill_md.locator("table")).to_have_count(2)  # frontmatter + the Markdown table
            assert skill_md.locator("script").count() == 0
            assert skill_md.locator("[onerror]").count() == 0
            assert page.evaluate("() => window.__xss === undefined")  # no script, handler or link ran
            skill_md.get_by_text("click me").click()  # a javascript: link must not run either
            assert page.evaluate("() => window.__xss === undefined")
            page.screenshot(path=str(shots / "03-skill-page.png"), full_page=True)

            # 4. click 'greeting' (sorted first, by lift): its page shows the lift chart and the answers
            page.get_by_role("tab", name="Browse", exact=True).click()
            table.get_by_text("greeting", exact=True).first.click()
            header = page.locator("#skill-header")
            expect(header).to_contain_text("greeting", timeout=15_000)
            expect(header).to_contain_text("3 test cases")
            page.get_by_role("tab", name="Results", exact=True).click()
            expect(page.locator("#lift-chart svg")).to_have_count(1, timeout=15_000)
            expect(page.locator("#lift-chart")).to_contain_text("+67 pts")
            expect(page.locator("#pass-chart")).to_contain_text("with skill")
            _no_placeholders(page)
            if readme:
                page.screenshot(path=str(README_SHOTS / "skill.png"), full_page=True)
            page.get_by_role("tab", name="Answers", exact=True).click()
            answers = page.locator("#answers")
            expect(answers).to_contain_text("BANANA! hello there", timeout=15_000)
            expect(answers.locator("td.uh-fail")).not_to_have_count(0)
            expect(answers.locator("td.uh-pass")).not_to_have_count(0)
            page.screenshot(path=str(shots / "04-answers.png"), full_page=True)

            # 5. the leaderboard: a heat map with the table beneath
            page.get_by_role("tab", name="Leaderboard", exact=True).click()
            heat = page.locator("#heatmap table.uh-heatmap")
            expect(heat).to_contain_text("greeting", timeout=15_000)
            expect(heat.locator("td.uh-cell")).to_have_count(2)
            expect(page.locator("#leaderboard-table")).to_contain_text("+67 pts")
            # Hatched exactly when the interval (as the table beneath prints it) contains zero.
            cells = heat.locator("td.uh-cell")
            assert "uh-unsure" in cells.nth(1).get_attribute("class")  # scripted-b: +0 pts
            low = int(
                re.search(r"\+67 pts \[([+-]\d+),", page.locator("#leaderboard-table").inner_text()).group(1)
            )
            assert ("uh-unsure" in cells.nth(0).get_attribute("class")) == (low <= 0)
            _no_placeholders(page)
            page.screenshot(path=str(shots / "05-leaderboard.png"), full_page=True)
            if readme:
                page.screenshot(path=str(README_SHOTS / "leaderboard.png"))

            # 6. evaluate 'greeting' against the (slow) scripted model
            page.get_by_role("tab", name="Skill", exact=True).click()
            page.locator("#eval-this").click()
            expect(page.locator("#eval-cases")).to_contain_text("greet", timeout=15_000)
            models = page.locator("#models-box textarea")
            models.fill(f"openai-compatible:scripted-a@{slow_llm.url}/v1")
            page.locator("#run-btn").click()
            # Partial results: some calls done (not all), a bar, and their rows already in the live table.
            expect(page.locator("#run-status")).to_contain_text(
                re.compile(r"Running .*: [1-5]/6 calls done"), timeout=20_000
            )
            expect(page.locator("#run-progress [role=progressbar]")).to_have_count(1)
            expect(page.locator("#live-table")).to_contain_text("scripted-a")
            page.screenshot(path=str(shots / "06-progress.png"), full_page=True)

            # 7. results: table with lift, and the skill page's charts
            expect(page.locator("#run-status")).to_contain_text("Finished", timeout=60_000)
            expect(page.locator("#run-progress")).to_contain_text("6 / 6 calls done")
            summary = page.locator("#summary-table")
            expect(summary).to_contain_text("scripted-a")
            expect(summary).to_contain_text("+67 pts")
            expect(page.locator("#run-lift-chart")).to_contain_text("+67 pts")
            expect(page.locator("#live-table")).to_contain_text("with_skill")
            _no_placeholders(page)
            page.screenshot(path=str(shots / "07-results.png"), full_page=True)

            # 8. upload a SKILL.md: its text lands in the paste box, ready to evaluate
            upload = tmp_path / "SKILL.md"
            upload.write_text("---\nname: uploaded\ndescription: From a file.\n---\n# Uploaded skill\n")
            page.get_by_text("Paste or upload a skill").click()
            page.locator("#upload-skill").locator("xpath=..").locator("input[type=file]").set_input_files(
                str(upload)
            )
            expect(page.locator("#pasted-skill textarea")).to_have_value(upload.read_text(), timeout=15_000)
            assert page.evaluate("() => window.__xss === undefined")

            # 9. a phone: the key columns still fit
            phone = browser.new_page(viewport={"width": 412, "height": 915})
            phone.goto(running_app, wait_until="domcontentloaded")
            expect(phone.locator("#skills-table")).to_contain_text("greeting", timeout=30_000)
            _key_columns_fit(phone, 412)
            phone.screenshot(path=str(shots / "08-phone.png"), full_page=True)
            assert not page_errors, page_errors
        finally:
            browser.close()
    assert sorted(p.name for p in shots.iterdir()) == [
        "01-loaded.png", "02-search.png", "03-skill-page.png", "04-answers.png", "05-leaderboard.png",
        "06-progress.png", "07-results.png", "08-phone.png",
    ]  # fmt: skip
