"""User text in the Space shows exactly as written: a regex keeps its backslashes (headless Chromium)."""

from __future__ import annotations

import pytest
from space_helpers import BROWSER_MARKS, banana_script, chromium

pytestmark = BROWSER_MARKS

#: Markdown reads ``\\(`` as an escaped ``(`` and ``*x*`` as emphasis: both must survive as typed.
REGEX = r"hello\s*(\(|there)"
INPUT = r"Say *hello* to load_dataset\(x\) [a](b) <b>x</b>"


@pytest.fixture
def regex_repo(hub_server, hub_repo_id, tmp_path, monkeypatch) -> str:
    """One skill whose regex assertion passes in both conditions (so the skill page flags it)."""
    from upskill_hub.cases import parse_meta
    from upskill_hub.hub.push import push
    from upskill_hub.lift.api import run_eval
    from upskill_hub.lift.prepare import EvalOptions
    from upskill_hub.skill import Skill
    from upskill_hub.testing.llm_server import running_llm_server

    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))
    cases = [{"id": "re", "input": INPUT, "assert": [{"type": "regex", "value": REGEX}]}]
    skill = Skill.create(
        "regex-skill", r"Matches \(parens\) with *regexes*.", "# Regex\n\nAlways greet.\n",
        meta=parse_meta({"schema_version": 1, "cases": cases}),
    ).write(tmp_path / "skills" / "regex-skill")  # fmt: skip
    with running_llm_server(banana_script, models=("scripted-a",)) as llm:
        result = run_eval(
            skill, [f"openai-compatible:scripted-a@{llm.url}/v1"],
            EvalOptions(runs=2, output_dir=tmp_path / "runs", use_cache=False, plots=False),
        )  # fmt: skip
    push([skill], hub_repo_id, results=[result.run_dir])
    return hub_repo_id


@pytest.fixture
def regex_app(regex_repo):
    from space_helpers import launched_space

    with launched_space(regex_repo) as url:
        yield url


def test_regex_assertion_keeps_its_backslashes(regex_app):
    from playwright.sync_api import expect

    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(regex_app, wait_until="domcontentloaded")
        table = page.locator("#skills-table")
        expect(table).to_contain_text("regex-skill", timeout=30_000)
        # The idle Evaluate tab: a hint under the table's own headers, no table headed "error".
        page.get_by_role("tab", name="Evaluate", exact=True).click()
        idle = page.locator("#eval-cases")
        expect(idle).to_contain_text("Pick a library skill", timeout=15_000)
        assert "error" not in [t.strip().lower() for t in idle.locator("th").all_inner_texts()]
        page.get_by_role("tab", name="Browse", exact=True).click()
        table.get_by_text("regex-skill", exact=True).locator("visible=true").first.click()
        # The skill page: description and the flagged assertion, as written.
        header = page.locator("#skill-header")
        expect(header).to_contain_text(f"regex: {REGEX}", timeout=15_000)
        expect(header).to_contain_text(r"Matches \(parens\) with *regexes*.")
        wrap = header.locator("td").first.evaluate("td => getComputedStyle(td).overflowWrap")
        assert wrap == "break-word", wrap  # no "non-discriminatin/g"
        # Test cases: the input as typed, the assertion as a readable line with its backslashes.
        page.get_by_role("tab", name="Test cases", exact=True).click()
        cases = page.locator("#skill-cases")
        expect(cases).to_contain_text(f"regex: {REGEX}", timeout=15_000)
        expect(cases).to_contain_text(INPUT)
        expect(cases).not_to_contain_text('[{"')
        # Files: the empty box says what to do.
        page.get_by_role("tab", name="Files", exact=True).click()
        box = page.locator("#file-view textarea")
        assert "choose a file" in (box.get_attribute("placeholder") or "")
