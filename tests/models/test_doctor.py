"""``upskill-hub doctor``: a verdict on the local model, and a crash is a finding, not a traceback."""

from __future__ import annotations

import json
from pathlib import Path

from cli_runner import run_cli


def test_doctor_reports_backend_checks_and_speed(scripted_gguf: Path, capsys, monkeypatch):
    code, out, err = run_cli(["doctor", "--model", f"local:{scripted_gguf}", "--json"], capsys, monkeypatch)
    assert code == 0, err
    report = json.loads(out)
    assert report["ok"] is True and report["backend"] == "scripted_backend:ScriptedBackend"
    assert [c["name"] for c in report["checks"]] == ["load", "two-token prompt", "long prompt", "generation speed"]
    assert all(c["ok"] for c in report["checks"])
    assert report["tokens_per_s"] > 0 and report["threads"] >= 1 and report["device"] == "cpu"


def test_doctor_on_a_crashing_runtime_is_a_verdict_not_a_traceback(scripted_gguf: Path, tmp_path, capsys, monkeypatch):
    (tmp_path / "crash-marker").touch()
    monkeypatch.setenv("SCRIPTED_CRASH_ALWAYS", "1")
    code, out, err = run_cli(["doctor", "--model", f"local:{scripted_gguf}"], capsys, monkeypatch)
    assert code == 1
    assert "Traceback" not in out + err
    assert "✗ two-token prompt" in out and "SIGSEGV" in out
    (error,) = [line for line in err.splitlines() if line.startswith("Error:")]
    assert "does not run here" in error and "UPSKILL_LOCAL_BACKEND=" in error


def test_doctor_refuses_a_hosted_model(capsys, monkeypatch):
    code, out, err = run_cli(["doctor", "--model", "haiku"], capsys, monkeypatch)
    assert code == 1 and "not a local model spec" in err and "Traceback" not in err
