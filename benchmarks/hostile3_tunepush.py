"""Issue 33, the ``tune`` and ``push`` area: what each attack does now, measured in child processes.

Classes (issue 33's numbering), one verdict line per attack (see ``hostile_inputs.verdict``):

* 4, run folders: ``tune --resume`` through a symlinked ``tune.jsonl`` and into a run folder
  that is a symlink; ``push --results`` of a run whose ``run.json`` is a symlink to another
  run's, whose ``results.parquet`` is a FIFO, and whose one row is over ``UPSKILL_MAX_ROW_MB``.
* 5, ``tune --write`` and a changing SKILL.md: read-only (as root too), edited by someone
  else while the teacher thinks, swapped for a symlink to an outside file mid-run, and a
  SKILL.md symlinked inside its repository (must stay a symlink, its target rewritten).
* 8, rows read back by push: ``Infinity`` as a latency, a row pasted twice, a list of lists
  for a summary's model names.
* 9, a teacher's description carrying a C1 OSC title sequence (U+009D ... U+009C): rejected,
  never written, printed or stored raw.

Everything runs against local servers started here: the scripted OpenAI-compatible server
(model and teacher) and the local Hub, whose storage folder is compared before and after each
refused push ("nothing written" means nothing reached the Hub).

Run: ``cd benchmarks && ../.venv/bin/python hostile3_tunepush.py`` (about a minute).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from hostile_inputs import cli, snapshot, verdict

GOOD = "Convert spreadsheets into JSON records. Use when someone wants JSON from spreadsheet rows."
SHOULD = ["convert this sheet to JSON", "turn my spreadsheet into JSON records", "spreadsheet rows to JSON",
          "JSON from this sheet", "export rows as JSON objects", "parse a spreadsheet and give me JSON"]  # fmt: skip
SHOULD_NOT = ["a haiku about autumn", "fix this python stack trace", "plan a trip to rome",
              "draft an email to my landlord", "translate hello to french", "tune my guitar"]  # fmt: skip
MODEL, TEACHER = "openai:gpt-4.1-mini", "openai:gpt-4.1"


def _skill(root: Path, name: str = "sheet-to-json") -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: Helps with stuff.\n---\n\n# Sheets\n\nRead the header.\n"
    )
    triggers = [{"id": f"p{i}", "query": q, "should_trigger": True} for i, q in enumerate(SHOULD)]
    triggers += [{"id": f"n{i}", "query": q, "should_trigger": False} for i, q in enumerate(SHOULD_NOT)]
    (d / "skill_meta.json").write_text(json.dumps({"schema_version": 1, "triggers": triggers}))
    return d


def _line(label: str, ok: bool, detail: str) -> bool:
    """A verdict line for an attack whose intended outcome is a safe success, not an error."""
    print(f"  {'ok  ' if ok else 'FAIL'} {label}: {detail[:150]}")
    return ok


class Teacher:
    """The scripted server's text answers: ``proposal`` for the teacher, after running ``before``."""

    def __init__(self) -> None:
        self.proposal = GOOD
        self.before: Callable[[], None] = lambda: None

    def __call__(self, system: str, messages: list, params: dict) -> str:
        from upskill_hub.triggering.tune import TEACHER_SYSTEM

        if system != TEACHER_SYSTEM:
            return "ok"
        self.before()
        return f"<description>{self.proposal}</description>"


def attacks(tmp: Path) -> list[bool]:
    """Run every attack of this area; one verdict line each."""
    from upskill_hub import rundir
    from upskill_hub._util.netutil import free_port
    from upskill_hub.localhub.testing import running_server
    from upskill_hub.testing.llm_server import running_llm_server

    results: list[bool] = []
    teacher = Teacher()
    port = free_port()
    token = "hf_" + "tunepush" * 4
    hub_root = tmp / "hub-root"
    base_env = {
        "OPENAI_API_KEY": "sk-" + "bench-0123456789abcdefghij", "HF_ENDPOINT": f"http://127.0.0.1:{port}",
        "HF_TOKEN": token, "HF_HUB_DISABLE_XET": "1", "HF_HOME": str(tmp / "hf"),
        "UPSKILL_HUB_TABLE_CACHE": str(tmp / "tables"),
    }  # fmt: skip
    counter = iter(range(1000))

    def env(**extra: str) -> dict[str, str]:
        return {**base_env, "UPSKILL_HUB_CACHE": str(tmp / f"cache-{next(counter)}"), **extra}

    with running_llm_server(teacher) as llm, running_server(hub_root, port=port, write_tokens=(token,)):

        def tune(skill: Path, out: Path, *extra: str) -> tuple[int | str, float, str]:
            return cli(["tune", str(skill), "-m", MODEL, "--teacher", TEACHER, "--base-url", llm.openai_base_url,
                        "--runs", "1", "--iterations", "1", "--distractors", "none", "-o", str(out), *extra],
                       budget_s=120, env=env())  # fmt: skip

        def push(run: Path, **extra: str) -> tuple[int | str, float, str]:
            return cli(["push", "--repo", f"user/bench-{next(counter)}", "--results", str(run)], budget_s=60,
                       env=env(**extra))  # fmt: skip

        print("class 4: run folders (tune --resume, push --results)")
        skill = _skill(tmp / "c4")
        out = tmp / "c4" / "out"
        first = tune(skill, out)
        (run_dir,) = out.iterdir()
        history = run_dir / "tune.jsonl"
        outside = tmp / "c4" / "outside"
        outside.mkdir()
        shutil.move(history, outside / "tune.jsonl")
        history.symlink_to(outside / "tune.jsonl")
        (run_dir / "tune_result.json").unlink()
        before = snapshot(outside)
        results.append(first[0] == 0 and verdict("tune --resume through a symlinked tune.jsonl",
                                                 tune(skill, out, "--resume"), "symlink", unchanged=outside,
                                                 before=before))  # fmt: skip
        history.unlink()
        shutil.move(outside / "tune.jsonl", history)
        elsewhere = tmp / "c4" / "elsewhere"
        shutil.move(run_dir, elsewhere)
        run_dir.symlink_to(elsewhere, target_is_directory=True)
        before = snapshot(elsewhere)
        results.append(verdict("tune --resume of a run folder that is a symlink out of --output",
                               tune(skill, out, "--resume"), "symlink", unchanged=elsewhere, before=before))  # fmt: skip

        runs = _eval_runs(tmp / "c4" / "runs", skill)
        victim, other = runs / "run-a", runs / "run-b"
        (victim / rundir.RUN_FILE).unlink()
        (victim / rundir.RUN_FILE).symlink_to(other / rundir.RUN_FILE)
        before = snapshot(hub_root)
        results.append(verdict("push --results with run.json a symlink to another run's",
                               push(victim), "symlink", unchanged=hub_root, before=before))  # fmt: skip
        fifo_run = _eval_runs(tmp / "c4" / "runs-fifo", skill) / "run-a"
        os.mkfifo(fifo_run / rundir.RESULTS_PARQUET)
        before = snapshot(hub_root)
        results.append(verdict("push --results with results.parquet a FIFO", push(fifo_run), "FIFO",
                               unchanged=hub_root, before=before))  # fmt: skip
        big_run = _eval_runs(tmp / "c4" / "runs-big", skill) / "run-a"
        rows = _rows(big_run)
        rows[3]["assertion_details"] = json.dumps([{"type": "contains", "evidence": "y" * 3_000_000}])
        _write_rows(big_run, rows)
        before = snapshot(hub_root)
        results.append(verdict("push of one 3 MB row under UPSKILL_MAX_ROW_MB=1", push(big_run, UPSKILL_MAX_ROW_MB="1"),
                               "UPSKILL_MAX_ROW_MB", unchanged=hub_root, before=before))  # fmt: skip

        print("class 5: tune --write and a changing SKILL.md")
        skill = _skill(tmp / "c5-ro")
        md = skill / "SKILL.md"
        md.chmod(0o444)
        before = snapshot(skill)
        results.append(verdict("tune --write of a read-only SKILL.md (as root too)",
                               tune(skill, tmp / "c5-ro" / "out", "--write"), "read-only", unchanged=skill,
                               before=before))  # fmt: skip
        skill = _skill(tmp / "c5-edit")
        md = skill / "SKILL.md"

        def edit() -> None:
            md.write_text(md.read_text().replace("Read the header.", "A colleague's careful edit."))

        teacher.before = edit
        got = tune(skill, tmp / "c5-edit" / "out", "--write")
        teacher.before = lambda: None
        kept = "A colleague's careful edit." in md.read_text() and GOOD not in md.read_text()
        results.append(verdict("tune --write after a colleague edited SKILL.md mid-run", got,
                               "changed by someone else during the run") and kept)  # fmt: skip
        skill = _skill(tmp / "c5-swap")
        md = skill / "SKILL.md"
        secret = tmp / "c5-swap" / "private-notes.md"
        secret.write_text(md.read_text().replace("Read the header.", "PRIVATE: the launch codes"))

        def swap() -> None:
            md.unlink()
            md.symlink_to(secret)

        teacher.before = swap
        before = snapshot(secret.parent / "private-notes.md")
        got = tune(skill, tmp / "c5-swap" / "out", "--write")
        teacher.before = lambda: None
        results.append(verdict("tune --write after SKILL.md was swapped for a symlink mid-run", got,
                               "changed during the run") and md.is_symlink() and snapshot(secret) == before
                       and "PRIVATE" in secret.read_text() and GOOD not in secret.read_text())  # fmt: skip
        repo = tmp / "c5-link"
        (repo / ".git").mkdir(parents=True)
        skill = _skill(repo / "skills")
        shared = repo / "agents" / "SKILL.md"
        shared.parent.mkdir()
        (skill / "SKILL.md").rename(shared)
        (skill / "SKILL.md").symlink_to(os.path.relpath(shared, skill))
        rc, took, err = tune(skill, repo / "out", "--write")
        ok = (
            rc == 0
            and (skill / "SKILL.md").is_symlink()
            and GOOD in shared.read_text()
            and "Traceback" not in err
        )
        results.append(_line("tune --write of a SKILL.md symlinked inside its repository", ok,
                             f"exit {rc} in {took:.1f}s: still a symlink={(skill / 'SKILL.md').is_symlink()}, "
                             f"target rewritten={GOOD in shared.read_text()}"))  # fmt: skip

        print("class 8: rows read back by push")
        for label, change, must in (
            (
                "push of a row whose latency is Infinity",
                lambda r: r[2].update(latency_s=float("inf")),
                "line 3",
            ),
            ("push of a row pasted twice", lambda r: r.append(dict(r[0])), "repeats the call of line 1"),
        ):
            run = _eval_runs(tmp / f"c8-{next(counter)}", skill) / "run-a"
            rows = _rows(run)
            change(rows)
            _write_rows(run, rows)
            before = snapshot(hub_root)
            results.append(verdict(label, push(run), must, unchanged=hub_root, before=before))
        run = _eval_runs(tmp / "c8-summary", skill) / "run-a"
        summary = json.loads((run / rundir.SUMMARY_FILE).read_text())
        summary["models"] = [["model-a", "model-b"]]
        (run / rundir.SUMMARY_FILE).write_text(json.dumps(summary))
        before = snapshot(hub_root)
        results.append(verdict("push of a summary whose model names are a list of lists", push(run),
                               "'models' item 0 is a list, not text", unchanged=hub_root, before=before))  # fmt: skip

        print("class 9: a teacher's control characters")
        skill = _skill(tmp / "c9")
        md = skill / "SKILL.md"
        before_md = md.read_bytes()
        teacher.proposal = "Convert spreadsheets to JSON. \x9d0;owned\x9cUse when someone wants JSON."
        rc, took, err = tune(skill, tmp / "c9" / "out", "--write")
        teacher.proposal = GOOD
        (run_dir,) = (tmp / "c9" / "out").iterdir()
        stored = (run_dir / "tune_result.json").read_text() + (run_dir / "tune.jsonl").read_text()
        ok = rc == 0 and md.read_bytes() == before_md and "\x9d" not in err + stored and "U+009D" in err
        results.append(_line("a teacher's description with a C1 OSC sequence", ok,
                             f"exit {rc} in {took:.1f}s: SKILL.md unchanged={md.read_bytes() == before_md}, "
                             f"raw C1 printed or stored={chr(0x9D) in err + stored}"))  # fmt: skip
    return results


def _eval_runs(root: Path, skill: Path) -> Path:
    """Two small eval run folders (``run-a``, ``run-b``) as the runner writes them."""
    from upskill_hub import rundir
    from upskill_hub.rundir.schema import ConditionStats, ResultRow, RunPlan, RunSummary

    for run_id in ("run-a", "run-b"):
        folder = root / run_id
        folder.mkdir(parents=True)
        rows = [
            ResultRow(
                run_id,
                "2026-11-26T10:00:00Z",
                "0.3.0",
                skill.name,
                "v1",
                "model-a",
                "openai-compatible",
                "{}",
                cond,
                f"case-{i}",
                0,
                i > 0,
                1,
                1,
                "[]",
                f"answer {i}",
            )  # fmt: skip
            for cond in ("baseline", "with_skill")
            for i in range(4)
        ]
        rundir.write_plan(
            folder, RunPlan(run_id=run_id, skill_name=skill.name, created="2026-11-26T10:00:00Z")
        )
        rundir.write_results(folder, rows)
        cond = ConditionStats(
            "model-a", "with_skill", 4, 3, 0, 0.75, 0.3, 0.95, 0.75, None, None, None, None, None
        )
        rundir.write_summary(folder, RunSummary(run_id, "2026-11-26T10:00:00Z", "0.3.0", skill.name, "v1",
                                                ["model-a"], 1, 4, conditions=[cond]))  # fmt: skip
    return root


def _rows(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]


def _write_rows(run: Path, rows: list[dict]) -> None:
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


if __name__ == "__main__":
    sys.exit(0 if all(attacks(Path(tempfile.mkdtemp(prefix="hostile3-tunepush-")))) else 1)
