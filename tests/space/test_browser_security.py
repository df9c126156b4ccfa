"""Issue 49 in a real browser: Browse marks a critical skill; its Security tab lists the findings (headless Chromium)."""

from __future__ import annotations

from pathlib import Path

import pytest
from space_helpers import BROWSER_MARKS, chromium
from test_space_security import EVIL, HELPER, _library, _row

pytestmark = BROWSER_MARKS


@pytest.fixture
def scanned_app(tmp_path: Path):
    from space_helpers import launched_space

    _library(tmp_path / "lib", [_row("evil", EVIL), _row("helper", HELPER)])
    with launched_space(str(tmp_path / "lib")) as url:
        yield url


def test_browse_marks_the_critical_skill_and_its_security_tab_lists_findings(scanned_app):
    from playwright.sync_api import expect

    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(scanned_app, wait_until="domcontentloaded")
        table = page.locator("#skills-table")
        expect(table).to_contain_text("⛔ critical (2)", timeout=30_000)
        expect(table).to_contain_text("none · 1 ack")
        expect(table).to_contain_text("not scanned")
        table.get_by_text("evil", exact=True).locator("visible=true").first.click()
        expect(page.locator("#skill-header")).to_contain_text(
            "⛔ Security: critical findings", timeout=15_000
        )
        page.get_by_role("tab", name="Security", exact=True).click()
        tab = page.locator("#skill-security")
        expect(tab).to_contain_text("PIPE_TO_SHELL", timeout=15_000)
        expect(tab).to_contain_text("SKILL.md:7")
        expect(tab).to_contain_text("scripts/run.py:12")
        expect(tab).to_contain_text("<script>window.__xss=1</script>")  # shown as text, never run
        assert page.evaluate("() => window.__xss") is None
