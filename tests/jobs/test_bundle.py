"""The Job bundle: the plan round-trips, and nothing secret-shaped is ever uploaded in it."""

from __future__ import annotations

from pathlib import Path

import pytest
from _evalkit import CASES, make_skill

from upskill_hub.cases import parse_meta  # noqa: E402
from upskill_hub.errors import UpskillError  # noqa: E402
from upskill_hub.jobs.bundle import bundle_files, read_bundle, rebuild  # noqa: E402
from upskill_hub.lift.prepare import EvalOptions
from upskill_hub.models.spec import parse_model_spec  # noqa: E402
from upskill_hub.rundir.schema import PlannedModel, RunPlan  # noqa: E402
from upskill_hub.skill import require_skill  # noqa: E402

RUN = RunPlan(run_id="20260101T000000Z-greeting-abcdef", created="2026-01-01T00:00:00Z", fingerprint="f" * 16,
              models=[PlannedModel("openai-compatible", "m", "http://127.0.0.1:9/v1")], conditions=["baseline"],
              runs=2, case_ids=["greet"])  # fmt: skip


def _write(files: dict[str, bytes], root: Path) -> Path:
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root / "jobs" / RUN.run_id


def test_the_bundle_rebuilds_the_skill_cases_models_and_options(tmp_path):
    skill = require_skill(make_skill(tmp_path / "skills"))
    specs = [parse_model_spec("openai-compatible:m@http://127.0.0.1:9/v1")]
    cases = parse_meta({"schema_version": 1, "cases": CASES}).cases
    options = EvalOptions(runs=2, concurrency=3, params={"temperature": 0.5, "max_tokens": 64}, timeout=7.0)
    folder = _write(bundle_files(RUN, 4, specs, skill, cases, options), tmp_path / "repo")
    bundle = read_bundle(folder)
    assert bundle.shards == 4 and bundle.run == RUN and bundle.models == specs
    skill2, specs2, options2 = rebuild(folder, bundle, output_dir=tmp_path / "out")
    assert skill2.full_hash == skill.full_hash and specs2 == specs
    assert (options2.runs, options2.concurrency, options2.timeout, options2.output_dir) == (
        2,
        3,
        7.0,
        tmp_path / "out",
    )
    assert options2.params == {"temperature": 0.5, "max_tokens": 64}
    assert bundle.shard(3).index == 3 and bundle.shard(3).fingerprint == RUN.fingerprint


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        ("case", "the test cases hold something that looks like an access token"),
        ("url", "the run plan (model specs, endpoints, options) hold something"),
        ("skill", "looks like it contains an access token or API key"),
    ],
)
def test_a_bundle_holding_something_secret_shaped_is_refused(where, expected, tmp_path):
    token = "hf_" + "abcdefghijklmnopqrstuvwxyz0123"
    skill_dir = make_skill(tmp_path / "skills")
    if where == "skill":
        (skill_dir / "notes.md").write_text(f"use {token}\n")
    skill = require_skill(skill_dir)
    url = f"http://127.0.0.1:9/v1?key={token}" if where == "url" else "http://127.0.0.1:9/v1"
    case = {
        "id": "c",
        "input": f"Use {token}." if where == "case" else "Hi.",
        "assert": [{"type": "contains", "value": "x"}],
    }
    cases = parse_meta({"schema_version": 1, "cases": [case]}).cases
    with pytest.raises(UpskillError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        bundle_files(RUN, 2, [parse_model_spec(f"openai-compatible:m@{url}")], skill, cases, EvalOptions())


def test_a_bundle_nested_without_bound_is_a_one_line_error(tmp_path):
    """plan.json comes from the repo: 100,000-deep nesting is refused, not a RecursionError."""
    (tmp_path / "plan.json").write_text('{"run": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(UpskillError, match="no readable plan.json"):
        read_bundle(tmp_path)


def test_the_bundle_carries_the_launchers_wheel_and_names_it_in_the_plan(tmp_path):
    from upskill_hub.jobs.bundle import BundledWheel

    skill = require_skill(make_skill(tmp_path / "skills"))
    cases = parse_meta({"schema_version": 1, "cases": CASES}).cases
    specs = [parse_model_spec("openai-compatible:m@http://127.0.0.1:9/v1")]
    wheel = BundledWheel("upskill_hub-0.1.0-py3-none-any.whl", "ab" * 32, "0.1.0")
    data = _zip({"upskill_hub/__init__.py": "x = 1\n"})
    files = bundle_files(RUN, 2, specs, skill, cases, EvalOptions(), wheel=(wheel, data))
    assert files[f"jobs/{RUN.run_id}/{wheel.filename}"] == data
    assert read_bundle(_write(files, tmp_path / "repo")).wheel == wheel
    # Launched with --image: no wheel, and the plan says so.
    plain = bundle_files(RUN, 2, specs, skill, cases, EvalOptions())
    assert not any(p.endswith(".whl") for p in plain)
    assert read_bundle(_write(plain, tmp_path / "plain")).wheel is None


def test_a_plan_naming_a_wheel_outside_the_bundle_is_a_one_line_error(tmp_path):
    import json

    skill = require_skill(make_skill(tmp_path / "skills"))
    cases = parse_meta({"schema_version": 1, "cases": CASES}).cases
    specs = [parse_model_spec("openai-compatible:m@http://127.0.0.1:9/v1")]
    folder = _write(bundle_files(RUN, 2, specs, skill, cases, EvalOptions()), tmp_path / "repo")
    plan = json.loads((folder / "plan.json").read_text())
    plan["wheel"] = {"filename": "../../evil.whl", "sha256": "0" * 64, "version": "0.1.0"}
    (folder / "plan.json").write_text(json.dumps(plan))
    with pytest.raises(UpskillError, match="damaged plan.json"):
        read_bundle(folder)


def _zip(members: dict[str, str]) -> bytes:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, text in members.items():
            z.writestr(name, text)
    return buf.getvalue()


def test_a_wheel_holding_something_secret_shaped_is_refused(tmp_path):
    from upskill_hub.jobs.bundle import BundledWheel

    skill = require_skill(make_skill(tmp_path / "skills"))
    cases = parse_meta({"schema_version": 1, "cases": CASES}).cases
    specs = [parse_model_spec("openai-compatible:m@http://127.0.0.1:9/v1")]
    wheel = BundledWheel("upskill_hub-0.1.0-py3-none-any.whl", "ab" * 32, "0.1.0")
    leaky = _zip({"upskill_hub/settings.py": 'TOKEN = "hf_' + 'abcdefghijklmnopqrstuvwxyz0123"\n'})
    with pytest.raises(UpskillError, match=r"own wheel holds something .* \(upskill_hub/settings.py\)"):
        bundle_files(RUN, 2, specs, skill, cases, EvalOptions(), wheel=(wheel, leaky))
    with pytest.raises(UpskillError, match="not a readable zip archive"):
        bundle_files(RUN, 2, specs, skill, cases, EvalOptions(), wheel=(wheel, b"not a zip"))


def test_a_key_value_the_readme_shows_as_an_example_is_not_a_leak(tmp_path, monkeypatch):
    """Issue 37: ``OPENAI_API_KEY=sk-local`` (the README's own offline example) refused every --jobs run."""
    from upskill_hub.jobs.bundle import BundledWheel

    skill = require_skill(make_skill(tmp_path / "skills"))
    cases = parse_meta({"schema_version": 1, "cases": CASES}).cases
    specs = [parse_model_spec("openai-compatible:m@http://127.0.0.1:9/v1")]
    wheel = BundledWheel("upskill_hub-0.1.0-py3-none-any.whl", "ab" * 32, "0.1.0")
    metadata = "Name: upskill-hub\n\nRun offline: `OPENAI_API_KEY=sk-local upskill-hub eval ...`\n"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    documented = _zip({"upskill_hub-0.1.0.dist-info/METADATA": metadata, "upskill_hub/x.py": "# sk-local\n"})
    files = bundle_files(RUN, 2, specs, skill, cases, EvalOptions(), wheel=(wheel, documented))
    assert files[f"jobs/{RUN.run_id}/{wheel.filename}"] == documented
    # A key value that the documentation does not show is still a leak, wherever it sits in the wheel.
    monkeypatch.setenv("OPENAI_API_KEY", "my-real-key-123")
    leaky = _zip({"upskill_hub-0.1.0.dist-info/METADATA": metadata, "upskill_hub/x.py": "K = 'my-real-key-123'\n"})
    with pytest.raises(UpskillError, match=r"own wheel holds something .* \(upskill_hub/x.py\)"):
        bundle_files(RUN, 2, specs, skill, cases, EvalOptions(), wheel=(wheel, leaky))
