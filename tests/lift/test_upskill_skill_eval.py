"""A skill saved by upskill evaluates in upskill-hub with the tests upskill stored."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from upskill_shapes import TestCase, save_upskill_skill

from upskill_hub.cli.app import main
from upskill_hub.testing.llm_server import running_llm_server


def _answer(system, messages, params):
    return "Use edition = 5 and cuda-capabilities 9.0" if "edition" in system else "no idea"


def test_upskill_skill_evaluates_with_its_tests(tmp_path: Path, capsys, monkeypatch) -> None:
    folder = save_upskill_skill(
        tmp_path / "kernel-build",
        "kernel-build",
        "Writes kernel-builder build.toml files. Use when packaging kernels.",
        "Always write edition = 5 and list cuda-capabilities such as 9.0.\n",
        [
            TestCase(input="build.toml for H100?", expected={"contains": "9.0"}),
            TestCase(input="Which edition?", expected={"contains": ["edition", "5"]}),
        ],
    )
    with running_llm_server(_answer) as srv:
        monkeypatch.setattr(
            sys,
            "argv",
            ["upskill-hub", "eval", str(folder), "--model", f"openai-compatible:toy@{srv.openai_base_url}",
             "--output", str(tmp_path / "runs"), "--json", "--no-plots"],
        )
        try:
            main()
        except SystemExit as exc:
            assert exc.code in (0, None)
    out, err = capsys.readouterr()
    assert 'tests: 2 test cases from skill_meta.json (upskill skill_meta.json ("tests"))' in err
    summary = json.loads(out)
    assert summary["n_cases"] == 2
    rates = {c["condition"]: c["pass_rate"] for c in summary["conditions"]}
    assert rates == {"with_skill": 1.0, "baseline": 0.0}
