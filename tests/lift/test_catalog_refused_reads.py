"""A file too big for catalog mode is named before a run and counted after it (issue 48, item 5).

A 1 MB reference passes validate and push (``UPSKILL_MAX_FILE_MB`` is 50), but
``read_skill_file`` refuses it to the model: ``skills validate`` warns, and the eval's
report says how many reads were refused and why, naming ``UPSKILL_SKILL_FILE_MAX_BYTES``.
"""

from __future__ import annotations

from pathlib import Path

from upskill_hub.cases import parse_meta
from upskill_hub.skill import Skill
from upskill_hub.testing.llm_server import running_llm_server

KEY = "sk-" + "test-0123456789abcdefghijklmnop"
BODY = "# Greeter\n\nAlways greet with BANANA. House style: references/style.md\n"
CASES = [{"id": f"q{i}", "input": f"Q{i}: please greet me", "assert": [{"type": "contains", "value": "BANANA"}]}
         for i in range(2)]  # fmt: skip


def script(system: str, messages: list[dict], params: dict) -> str:
    return "BANANA hello friend" if "BANANA" in system else "hello there friend"


def _skill(root: Path) -> Path:
    meta = parse_meta({"schema_version": 1, "cases": CASES})
    path = Skill.create(
        "greeter", "Greet people warmly in house style. Use when greeting someone.", BODY, meta=meta
    ).write(root / "greeter")
    (path / "references").mkdir()
    (path / "references" / "style.md").write_text("x" * 1_048_576)
    (path / "assets").mkdir()
    (path / "assets" / "logo.png").write_bytes(b"\x89PNG\0" * 20_000)  # binary: never served, no warning
    return path


def test_validate_warns_of_a_file_too_big_for_catalog_mode(tmp_path: Path, capsys, monkeypatch) -> None:
    from cli_runner import run_cli

    skill = _skill(tmp_path)
    code, out, err = run_cli(["skills", "validate", str(skill)], capsys, monkeypatch)
    assert code == 0, err
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, err
    assert "references/style.md: is 1.0 MB;" in warnings[0] and "over 64 KB" in warnings[0]
    assert "UPSKILL_SKILL_FILE_MAX_BYTES" in warnings[0]


def test_eval_report_counts_the_reads_refused_to_the_model(tmp_path: Path, capsys, monkeypatch) -> None:
    from cli_runner import run_cli

    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.setenv(var, KEY)
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "400")
    skill = _skill(tmp_path)
    with running_llm_server(script) as srv:
        code, out, err = run_cli(
            ["eval", str(skill), "-m", "openai:gpt-4.1-mini", "--base-url", srv.openai_base_url,
             "--mode", "catalog", "-o", str(tmp_path / "out"), "--no-plots"],
            capsys, monkeypatch,
        )  # fmt: skip
    assert code == 0, err
    lines = [line for line in out.splitlines() if "refused to the model" in line]
    assert len(lines) == 1, out
    assert lines[0].startswith("• 2 file reads refused to the model"), lines[0]
    assert "'references/style.md': 1.0 MB, over the 64 KB limit per file read" in lines[0]
    assert "UPSKILL_SKILL_FILE_MAX_BYTES" in lines[0] and "(2 times)" in lines[0]
