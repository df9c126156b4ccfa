"""The dataset card (``README.md``) of a skills-and-results repo.

Its YAML tells the Hub and ``datasets`` about the three configs (skills / results / runs),
the license and tags; its body shows, per skill, the latest eval run as a small table
(model, baseline, with skill, lift with its interval, tokens) so a visitor sees at once
whether a skill helps. The text is a pure function of the tables, so pushing the same
content again renders the same bytes and makes no commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from upskill_hub._util.percent import pct, points
from upskill_hub.hub.dataset_repo import config_schemas
from upskill_hub.hub.layout import CONFIG_GLOBS

TAGS = ["agent-skills", "upskill-hub"]

#: Licenses the Hub knows by id (lower case); anything else is declared as ``other``.
KNOWN_LICENSES = {
    "apache-2.0", "mit", "bsd-2-clause", "bsd-3-clause", "cc0-1.0", "cc-by-4.0", "cc-by-sa-4.0",
    "cc-by-nc-4.0", "cc-by-nc-sa-4.0", "gpl-2.0", "gpl-3.0", "lgpl-3.0", "agpl-3.0", "mpl-2.0",
    "unlicense", "openrail", "bigscience-openrail-m", "llama3", "gemma", "other",
}  # fmt: skip


def hub_license(licenses: list[str | None]) -> str | list[str]:
    """The card's ``license`` value for the skills' own license strings."""
    ids = sorted({(lic or "").strip().lower() for lic in licenses if lic and lic.strip()})
    mapped = sorted({lic if lic in KNOWN_LICENSES else "other" for lic in ids}) or ["other"]
    return mapped[0] if len(mapped) == 1 else mapped


def _cond_cell(c: dict[str, Any] | None) -> str:
    if not c:
        return "–"
    return f"{pct(c.get('pass_rate'))} ({c.get('passed', 0)}/{c.get('n', 0)})"


def _lift_cell(lift: dict[str, Any] | None) -> str:
    if not lift or lift.get("lift") is None:
        return "–"
    return points(lift["lift"], lift.get("ci_low"), lift.get("ci_high"))


def _tokens_cell(base: dict[str, Any] | None, skill: dict[str, Any] | None) -> str:
    def fmt(c: dict[str, Any] | None) -> str:
        v = (c or {}).get("mean_total_tokens")
        return "–" if v is None else f"{v:,.0f}"

    return f"{fmt(base)} → {fmt(skill)}"


def _md(text: str) -> str:
    """Keep a cell on one line and free of table syntax."""
    return " ".join(str(text).split()).replace("|", "\\|")


def latest_runs(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The newest run (by timestamp, then run id) per skill name."""
    best: dict[str, dict[str, Any]] = {}
    for r in runs:
        name = r.get("skill_name")
        if not name:
            continue
        key = (r.get("timestamp") or "", r.get("run_id") or "")
        cur = best.get(name)
        if cur is None or key > (cur.get("timestamp") or "", cur.get("run_id") or ""):
            best[name] = r
    return best


def latest_trigger_runs(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The newest run with trigger figures, per skill name (often not the newest eval)."""
    return latest_runs([r for r in runs if r.get("triggers")])


def _rate_cell(rate: Any, lo: Any, hi: Any, k: Any, n: Any) -> str:
    if rate is None or not n:
        return "–"
    return f"{pct(rate)} [{pct(lo)}–{pct(hi)}] ({k}/{n})"


def triggers_table(run: dict[str, Any]) -> list[str]:
    """Markdown lines of one run's trigger figures per model (recall, false triggers, F1)."""
    lines = [
        "| Model | Trigger recall (95% CI) | False triggers (95% CI) | F1 |",
        "|---|---|---|---|",
    ]
    for t in run.get("triggers") or []:
        f1 = t.get("f1")
        lines.append(
            f"| {_md(t.get('model') or '?')} | "
            f"{_rate_cell(t.get('recall'), t.get('recall_ci_low'), t.get('recall_ci_high'), t.get('triggered_should'), t.get('n_should'))} | "
            f"{_rate_cell(t.get('false_trigger_rate'), t.get('fpr_ci_low'), t.get('fpr_ci_high'), t.get('triggered_should_not'), t.get('n_should_not'))} | "
            f"{'–' if f1 is None else f'{f1:.2f}'} |"
        )
    return lines


def _features(names: Sequence[str]):  # -> DatasetInfosDict
    """The declared columns of each config in ``names`` (see :func:`config_schemas`)."""
    from datasets import DatasetInfo, Features
    from datasets.info import DatasetInfosDict

    schemas = config_schemas()
    return DatasetInfosDict(
        {n: DatasetInfo(features=Features.from_arrow_schema(schemas[n]), config_name=n) for n in names}
    )


def results_table(run: dict[str, Any]) -> list[str]:
    """Markdown lines of one run's per-model table (one line per mode when it has several)."""
    modes = list(dict.fromkeys(c.get("mode") or "inject" for c in run.get("conditions", [])))
    multi = len(modes) > 1 or modes not in ([], ["inject"])
    lines = [
        f"| Model |{' Mode |' if multi else ''} Baseline | With skill | Lift (95% CI) | Mean tokens (baseline → with skill) |",
        "|---|---|---|---|---|" + ("---|" if multi else ""),
    ]
    conds = {
        (c.get("model"), c.get("mode") or "inject", c.get("condition")): c for c in run.get("conditions", [])
    }
    lifts = {(x.get("model"), x.get("mode") or "inject"): x for x in run.get("lifts", [])}
    models = list(run.get("models") or []) or sorted({m for m, _, _ in conds})
    for m in models:
        for mode in modes or ["inject"]:
            base, with_skill = conds.get((m, mode, "baseline")), conds.get((m, mode, "with_skill"))
            if multi and base is None and with_skill is None:
                continue
            lines.append(
                f"| {_md(m)} |{f' {_md(mode)} |' if multi else ''} {_cond_cell(base)} | {_cond_cell(with_skill)} | "
                f"{_lift_cell(lifts.get((m, mode)))} | {_tokens_cell(base, with_skill)} |"
            )
    return lines


_LEVELS = ("critical", "high", "medium", "low", "info")


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def security_section(rows: list[dict[str, Any]]) -> list[str]:
    """Markdown lines of the ``## Security`` section: one table line per scanned skill.

    Per skill: the worst unacknowledged severity, the unacknowledged counts per level, how
    many findings the author acknowledged, the scanner's version and the scan's date. No
    rows, no section: a skill pushed without a scan is simply not listed.
    """
    if not rows:
        return []
    lines = [
        "## Security",
        "",
        "Each skill as scanned for prompt injection, exfiltration and malicious code by "
        "[cisco-ai-skill-scanner](https://pypi.org/project/cisco-ai-skill-scanner/) (static analyzers) "
        "when it was pushed; findings are in the `security` config. Counts are unacknowledged findings; "
        "acknowledged ones are the author's, with a reason, and are still listed. Run "
        "`upskill-hub skills scan OWNER/NAME` to scan it yourself before installing.",
        "",
        "| Skill | Max severity | Critical | High | Medium | Low | Info | Acknowledged | Scanner | Scanned |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(rows, key=lambda r: str(r.get("name") or "")):
        level = str(r.get("max_severity") or "")  # rows come from the repo: only known words pass
        shown = f"**{level.upper()}**" if level in ("critical", "high") else (level.upper() or "none")
        shown = shown if level in ("", *_LEVELS) else "?"
        counts = " | ".join(str(_count(r.get(k))) for k in _LEVELS)
        lines.append(
            f"| {_md(r.get('name') or '?')} | {shown} | {counts} | {_count(r.get('acknowledged'))} | "
            f"{_md(r.get('scanner') or '?')} {_md(r.get('scanner_version') or '?')} | "
            f"{_md(str(r.get('scanned_at') or '?')[:10])} |"
        )
    lines.append("")
    return lines


def render_card(
    repo_id: str,
    skills: list[dict[str, Any]],
    runs: list[dict[str, Any]],
    *,
    has_results: bool,
    results_globs: Sequence[str] | None = None,
    has_triggers: bool = False,
    has_routing: bool = False,
    security: list[dict[str, Any]] | None = None,
) -> str:
    """``README.md`` text for the repo's skills rows and run summaries (deterministic).

    ``has_results`` says whether any ``data/results`` shard exists (a run can have results
    before it has a summary); ``results_globs`` are the ``results`` config's patterns when
    the repo holds runs sharded over Jobs (see :func:`~upskill_hub.hub.dataset_repo.results_globs`);
    ``has_triggers`` / ``has_routing`` whether any ``data/triggers`` / ``data/routing`` shard exists;
    ``security`` the ``security`` rows (one per scanned skill, see :func:`security_section`). Each declared config also
    declares its columns, so shards written by older versions (fewer columns) still load.
    """
    from huggingface_hub import DatasetCard, DatasetCardData

    have = {
        "skills": bool(skills),
        "results": has_results,
        "runs": bool(runs),
        "triggers": has_triggers,
        "routing": has_routing,
        "security": bool(security),
    }
    # A config whose glob matches no file would break ``load_dataset`` and the viewer, so
    # only tables that exist are declared. ``skills`` comes first: it is the default.
    paths: dict[str, str | list[str]] = dict(CONFIG_GLOBS)
    if results_globs:
        paths["results"] = results_globs[0] if len(results_globs) == 1 else list(results_globs)
    configs = [
        {"config_name": name, "data_files": [{"split": "train", "path": paths[name]}]}
        for name in CONFIG_GLOBS
        if have[name]
    ]
    name = repo_id.split("/")[-1]
    data = DatasetCardData(
        license=hub_license([s.get("license") for s in skills]),
        pretty_name=name,
        tags=list(TAGS),
        configs=configs,
    )
    if configs:
        _features([c["config_name"] for c in configs]).to_dataset_card_data(data)
    latest = latest_runs(runs)
    latest_triggers = latest_trigger_runs(runs)
    body = [
        f"# {name}",
        "",
        "Agent skills published with [upskill-hub](https://huggingface.co/upskill-hub), "
        "together with the eval runs that measure them: every skill is tested with and without its "
        "instructions on the same cases, and the lift is reported with its 95% interval.",
        "",
        "## Use",
        "",
        "```python",
        "from datasets import load_dataset",
        "",
    ]
    if have["skills"]:
        body.append(f'skills = load_dataset("{repo_id}", "skills", split="train")  # one row per skill')
    if have["results"]:
        body.append(
            f'results = load_dataset("{repo_id}", "results", split="train")  # one row per model call'
        )
    if have["runs"]:
        body.append(f'runs = load_dataset("{repo_id}", "runs", split="train")  # one row per eval run')
    if have["triggers"]:
        body.append(
            f'triggers = load_dataset("{repo_id}", "triggers", split="train")  # one row per trigger query'
        )
    if have["routing"]:
        body.append(
            f'routing = load_dataset("{repo_id}", "routing", split="train")  # skill x skill loaded, per model'
        )
    if have["security"]:
        body.append(f'security = load_dataset("{repo_id}", "security", split="train")  # one scan per skill')
    body += [
        "```",
        "",
        "Install a skill into your agent (Claude Code shown; also `--codex`, `--cursor`, `--gemini`, ...):",
        "",
        "```bash",
        f"upskill-hub skills install {repo_id} --skill SKILL_NAME --claude",
        f"upskill-hub pull {repo_id} -o skills   # or fetch the skill folders",
        "```",
        "",
        "## Skills",
        "",
    ]
    by_name = {s.get("name") or "?": s for s in skills}
    # Runs can be pushed without their skill (e.g. from the Space): list those skills too.
    for sname in sorted(set(by_name) | set(latest) | set(latest_triggers)):
        s = by_name.get(sname)
        body += [f"### {sname}", ""]
        if s is not None:
            body += [_md(s.get("description") or ""), ""]
            body.append(
                f"Version `{s.get('version')}` · ~{s.get('token_estimate') or 0} tokens · "
                f"{s.get('n_cases') or 0} test cases · files in `skills/{sname}/`"
            )
        else:
            body.append("The skill's files are not in this repo; its eval results are.")
        body.append("")
        trig = latest_triggers.get(sname)
        if trig is not None:
            body += [
                f"Triggering (does the description make the model load the skill?): run `{trig.get('run_id')}`.",
                "",
            ]
            body += triggers_table(trig)
            body.append("")
        run = latest.get(sname)
        if run is None or (not run.get("conditions") and run is trig):
            if trig is None:
                body += ["No eval results yet.", ""]
            continue
        note = ""
        if s is not None and run.get("skill_version") and run.get("skill_version") != s.get("version"):
            note = f" (measured on skill version `{run.get('skill_version')}`)"
        body.append(
            f"Latest eval: run `{run.get('run_id')}` at {run.get('timestamp')}, "
            f"{run.get('n_cases')} cases × {run.get('runs_per_case')} runs{note}."
        )
        body.append("")
        body += results_table(run)
        body.append("")
    body += security_section(security or [])
    content = f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(body).rstrip() + "\n"
    # Round-trip through DatasetCard so what we push is what the Hub's parser reads back.
    return str(DatasetCard(content))
