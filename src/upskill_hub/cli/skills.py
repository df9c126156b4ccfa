"""``upskill-hub skills``: validate, list, show and install skills."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.markdown import Markdown
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from upskill_hub._util.percent import count
from upskill_hub._util.printable import escape_controls
from upskill_hub.cli._formats import OutputFormat, format_option, json_option, printer
from upskill_hub.cli._output import make_console, reading_width
from upskill_hub.cli._trust import max_severity_option, print_report, print_summary
from upskill_hub.errors import UpskillError

app = typer.Typer(help="Validate, list, show and install agent skills.", no_args_is_help=True)
console = make_console()
err_console = make_console(stderr=True)


@app.command("validate")
def validate(
    paths: list[Path] = typer.Argument(..., help="Skill folders (or their SKILL.md) to check."),
    strict: bool = typer.Option(False, "--strict", help="Treat keys outside the spec as errors."),
    fmt: OutputFormat = format_option(),
    as_json: bool = json_option(),
) -> None:
    """Check skills against the Agent Skills spec. Exit 0 when all are valid, 1 otherwise.

    Descriptions get advice as warnings: one that never says when to use the skill, and
    skills given together whose descriptions are nearly the same.

    agent: one tab-separated line per skill with its problems; quiet: the valid skills' paths.

    Example: upskill-hub skills validate skills/*
    """
    from upskill_hub.descriptions import library_description_problems
    from upskill_hub.skill import EVALS_FILE, META_FILE, load_skill
    from upskill_hub.skill.loading import catalog_read_warnings

    out = printer(fmt, as_json)
    report = []
    failed = False
    loaded = [(p, load_skill(p, strict=strict)) for p in paths]
    # Descriptions are checked together: the skills validated at once are one library.
    advice = library_description_problems(
        {str(p): (r.skill.name, r.skill.description) for p, r in loaded if r.skill is not None and r.ok}
    )
    for p, res in loaded:
        res.problems.extend(advice.get(str(p), []))
        if res.skill is not None:
            res.problems.extend(catalog_read_warnings(res.skill, str(p)))
        failed |= not res.ok
        report.append(
            {
                "path": str(p),
                "valid": res.ok,
                "name": res.skill.name if res.skill else None,
                "version": res.skill.version if res.skill else None,
                "problems": [pr.to_dict() for pr in res.problems],
                "tests": len(res.skill.meta.cases) if res.skill else None,
                "problem_text": "; ".join(f"{pr.severity}: {pr}" for pr in res.problems),
            }
        )
        if out.mode is OutputFormat.quiet:  # errors still say why on stderr
            for pr in res.problems:
                if pr.severity == "error":
                    err_console.print(_error_line(pr), highlight=False, soft_wrap=True)
        if out.human:
            for pr in res.problems:
                if pr.severity == "error":
                    err_console.print(_error_line(pr), highlight=False, soft_wrap=True)
                else:
                    err_console.print(
                        f"warning: {pr}", markup=False, highlight=False, soft_wrap=True, style="yellow"
                    )
            if res.ok:
                assert res.skill is not None
                tests_file = next((f for f in (META_FILE, EVALS_FILE) if f in res.skill.files), None)
                tests = f"; {res.skill.meta.describe(tests_file)}" if tests_file else ""
                console.print(
                    f"[green]✓[/] {p} ({res.skill.name} {res.skill.version}{tests})",
                    highlight=False,
                    soft_wrap=True,
                )
    if not out.human:
        shown = [{k: v for k, v in r.items() if k not in ("tests", "problem_text")} for r in report]
        rows = [r for r in report if r["valid"]] if out.mode is OutputFormat.quiet else report
        headers = ["path", "valid", "name", "version", "tests", "problem_text"]
        out.table(rows, headers, json_data={"valid": not failed, "skills": shown})
    raise typer.Exit(1 if failed else 0)


def _error_line(problem: object) -> Text:
    """``Error: PATH: FIELD: why``: the prefix every error line of the CLI starts with (README)."""
    return Text.assemble(("Error:", "bold red"), " ", str(problem))


@app.command("list")
def list_skills(
    directory: Path = typer.Argument(Path("skills"), help="Folder holding skill folders."),
    fmt: OutputFormat = format_option(),
    as_json: bool = json_option(),
) -> None:
    """Show the skills in DIR as a table: name, description, version, tokens, tests.

    Example: upskill-hub skills list skills
    """
    from upskill_hub.skill import find_skills, load_skill

    out = printer(fmt, as_json)
    if not directory.is_dir():
        raise UpskillError(f"{directory}: not a folder")
    rows = []
    for folder in find_skills(directory):
        res = load_skill(folder)
        rel = folder.relative_to(directory).as_posix() if folder != directory else "."
        if res.errors and out.human:  # say why it is invalid: a FIFO or an odd name inside is named here
            more = f" (and {len(res.errors) - 1} more)" if len(res.errors) > 1 else ""
            err_console.print(f"Warning: {res.errors[0]}{more}", markup=False, highlight=False)
        if res.skill is None:
            why = str(res.errors[0]) if res.errors else "unreadable"
            rows.append(
                {"name": folder.name, "description": f"(invalid: {why})", "valid": False, "path": rel}
            )
            continue
        s = res.skill.summary()
        s["valid"] = res.ok
        s["path"] = rel
        rows.append(s)
    if not out.human:
        headers = ["name", "version", "token_estimate", "n_cases", "valid", "path", "description"]
        # quiet: one line per skill folder (its path), so same-named skills stay distinct
        out.table(rows, headers, id_key="path")
        return
    if not rows:
        console.print(f"No skills found in {directory}.")
        return
    names = [r["name"] for r in rows]
    nested = any("/" in r.get("path", "") for r in rows) or len(set(names)) < len(names)
    if console.is_terminal:
        console.print(_skills_table(directory, rows, nested))
    else:
        _print_skills_listing(directory, rows, nested)


def _skill_label(r: dict, nested: bool) -> Text:
    """A row's name (its path when names repeat or skills nest), marked when invalid."""
    label = Text(escape_controls(str(r.get("path", r["name"]) if nested else r["name"]), one_line=True))
    if not r.get("valid"):
        label.append(" (invalid)", style="red")
    return label


def _one_line(description: object) -> str:
    """A description is a stranger's text: one line, controls escaped, never read as markup."""
    return escape_controls(" ".join(str(description or "").split()), one_line=True)


def _skills_table(directory: Path, rows: list[dict], nested: bool) -> Table:
    """The terminal's table: descriptions fold in their column, shortened past 120 characters."""
    table = Table(title=f"Skills in {directory}")
    table.add_column("Name", style="bold cyan", no_wrap=True)
    table.add_column("Description", overflow="fold", max_width=60)
    table.add_column("Version", style="dim")
    table.add_column("Tokens", justify="right")
    table.add_column("Tests", justify="right")
    for r in rows:
        desc = _one_line(r.get("description"))
        desc = desc if len(desc) <= 120 else desc[:117] + "..."
        table.add_row(
            _skill_label(r, nested),
            Text(desc),
            r.get("version", "-"),
            str(r.get("token_estimate", "-")),
            str(r.get("n_cases", "-")),
        )
    return table


def _print_skills_listing(directory: Path, rows: list[dict], nested: bool) -> None:
    """Piped or redirected: one line per skill with its figures, the whole description below.

    Piped, a table is never wrapped (cli/_output.py), and a description in a cell made
    1,700-character lines; five columns at 80 would leave it a column a few words wide. So
    a file or a pager gets one line per skill (``grep NAME`` finds it, whole) with the
    description below it, wrapped between words at ``$COLUMNS`` (or 80), nothing cut.
    Programs read ``--format tsv|json|agent|quiet`` instead.
    """
    import textwrap

    console.print(Text(f"Skills in {directory} ({count(len(rows), 'skill')})", style="bold"))
    for r in rows:
        line = _skill_label(r, nested)
        line.stylize("bold cyan", 0, len(line))
        figures = [f"version {r['version']}"] if r.get("version") else []
        if r.get("token_estimate") is not None:
            figures.append(f"~{count(int(r['token_estimate']), 'token')}")
        if r.get("n_cases") is not None:
            figures.append(count(int(r["n_cases"]), "test"))
        if figures:
            line.append(" (" + ", ".join(figures) + ")", style="dim")
        console.print()
        console.print(line, soft_wrap=True)
        # Wrapped here, between words (a longer word is split, never cut): no padding spaces.
        width = max(20, reading_width(console) - 4)
        for part in textwrap.wrap(_one_line(r.get("description")), width, break_on_hyphens=False):
            console.print(Text("    " + part), soft_wrap=True)


@app.command("show")
def show(
    path: Path = typer.Argument(..., help="Skill folder."),
    fmt: OutputFormat = format_option(),
    as_json: bool = json_option(),
) -> None:
    """Show a skill: its metadata, files, test cases and rendered SKILL.md (agent: one JSON line).

    Example: upskill-hub skills show skills/hf-dataset-card
    """
    from upskill_hub.skill import EVALS_FILE, META_FILE, load_skill

    out = printer(fmt, as_json)
    res = load_skill(path)
    if res.skill is None:
        raise UpskillError(str(res.problems[0]))
    skill = res.skill
    if not out.human:
        data = skill.summary()
        data["frontmatter"] = skill.frontmatter
        # skill_meta.json's other keys, upskill's "metadata" block (license, compatibility, ...) included
        data["meta"] = skill.meta.extra
        data["cases"] = [c.to_dict() for c in skill.meta.cases]
        data["triggers"] = [t.to_dict() for t in skill.meta.triggers]
        data["problems"] = [p.to_dict() for p in res.problems]
        if out.mode is OutputFormat.json:
            out.json(data)
        elif out.mode is OutputFormat.quiet:
            typer.echo(skill.name)
        else:  # agent: the same document, compact, on one line
            typer.echo(json.dumps(data, separators=(",", ":"), default=str))
        return
    info = Table.grid(padding=(0, 2))
    info.add_column(style="bold")
    info.add_column()
    info.add_row("name", Text(escape_controls(skill.name, one_line=True)))
    info.add_row("description", Text(escape_controls(skill.description)))
    info.add_row("version", skill.version)
    info.add_row("license", Text(escape_controls(skill.license or "-")))
    # The whole frontmatter: every other key as written (metadata entries one per row).
    for key, value in skill.frontmatter.items():
        if key in ("name", "description", "license"):
            continue
        if key == "metadata" and isinstance(value, dict):
            for mk, mv in value.items():
                info.add_row(Text(escape_controls(f"metadata.{mk}", one_line=True)), _shown(mv))
        else:
            info.add_row(Text(escape_controls(str(key), one_line=True)), _shown(value))
    info.add_row("tokens", f"~{skill.token_estimate}")
    tests_file = next((f for f in (META_FILE, EVALS_FILE) if f in skill.files), None)
    info.add_row("tests", skill.meta.describe(tests_file) if tests_file else "0 (no skill_meta.json)")
    up_meta = skill.meta.extra.get("metadata")
    if isinstance(up_meta, dict):  # upskill's skill_meta.json block
        for mk, mv in up_meta.items():
            info.add_row(Text(escape_controls(f"{META_FILE} metadata.{mk}", one_line=True)), _shown(mv))
    for d, files in skill.resources().items():
        if files:
            info.add_row(d, ", ".join(f.split("/", 1)[1] for f in files))
    console.print(Panel(info, title=Text(escape_controls(skill.name, one_line=True)), expand=False))
    for p in res.problems:
        err_console.print(
            f"{p.severity}: {p}", markup=False, style="yellow" if p.severity == "warning" else "red"
        )
    if console.is_terminal:
        console.print(Markdown(escape_controls(skill.body)))
    else:  # piped: the Markdown as written (terminal controls escaped), not laid out for a screen
        console.print(escape_controls(skill.body.strip("\n")), markup=False)
    if skill.meta.cases:
        t = Table(title="Test cases")
        t.add_column("id", style="cyan")
        t.add_column("split")
        t.add_column("input", overflow="fold", max_width=60 if console.is_terminal else None)
        t.add_column("assertions", overflow="fold")
        for c in skill.meta.cases:
            t.add_row(
                *(Text(escape_controls(x)) for x in (c.id, c.split, c.input)),
                ", ".join(a.type for a in c.asserts),
            )
        console.print(t)


def _shown(value: object) -> Text:
    """A frontmatter value as one table cell: strings as written, anything else as JSON; controls escaped."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return Text(escape_controls(text))


class ScanFormat(StrEnum):
    """``skills scan --format``: a report to read, the report as JSON, or SARIF 2.1.0."""

    human = "human"
    json = "json"
    sarif = "sarif"


@app.command("scan")
def scan(
    source: str = typer.Argument(
        ..., help="A skill folder, a folder of skills, or a Hub dataset repo OWNER/NAME."
    ),
    skill_names: list[str] = typer.Option([], "--skill", help="Skill(s) to scan (by name, or by path)."),
    revision: str | None = typer.Option(None, "--revision", help="Hub revision (branch, tag or commit)."),
    fmt: ScanFormat = typer.Option(
        ScanFormat.human, "--format", help="human, json or sarif.", case_sensitive=False
    ),
    max_severity: str | None = max_severity_option(),
    llm_model: str | None = typer.Option(
        None,
        "--llm-model",
        metavar="MODEL",
        help="Also run the scanner's LLM analyzer with MODEL (a litellm name, e.g. anthropic/claude-sonnet-4-5); "
        "sends the skill to that provider and passes its API key to the scanner. Off by default: offline.",
    ),
) -> None:
    """Scan skills for prompt injection, exfiltration and malicious code (cisco-ai-skill-scanner).

    Runs the scanner's static analyzers (offline) on each skill, plus what only
    upskill-hub runs: the evals' `command` checks and input files. Findings the author
    acknowledged in the skill's skill-scan-ack.yaml are shown as acknowledged and do not
    count for --max-severity. A Hub repo is read into memory; nothing is written to your folders.
    Exit 1 when a skill is above --max-severity.

    Example: upskill-hub skills scan skills/my-skill --max-severity high
    """
    from upskill_hub.trust import check_severity, enforce_max_severity, scan_skill, to_sarif

    if max_severity is not None:
        max_severity = check_severity(max_severity)
    skills, _ = _skills_of(source, skill_names, revision)
    reports = []
    for skill in skills:
        with err_console.status(f"Scanning {escape_controls(skill.name, one_line=True)}..."):
            reports.append(scan_skill(skill, llm_model=llm_model))
    if fmt is ScanFormat.json:
        data = [r.to_dict() for r in reports]
        typer.echo(json.dumps(data[0] if len(data) == 1 else data, indent=2, ensure_ascii=False))
    elif fmt is ScanFormat.sarif:
        typer.echo(json.dumps(to_sarif(reports), indent=2, ensure_ascii=False))
    else:
        for report in reports:
            print_report(console, report)
    enforce_max_severity(reports, max_severity, action="see `upskill-hub skills scan` for every finding")


def _skills_of(source: str, names: list[str], revision: str | None) -> tuple[list, str | None]:
    """The skills SOURCE stands for (a folder, a repository, or a Hub repo read into memory) and the Hub commit."""
    from upskill_hub.skill import skills_in

    if _looks_like_repo_id(source):
        from upskill_hub.hub.pull import fetch_skills

        return fetch_skills(source, names or None, revision=revision)
    return skills_in(source, names or None), None


def _scan_before_install(skills: list, max_severity: str | None, scan: bool, human: bool) -> None:
    """Scan what ``install`` would write: show the summary; refuse above ``max_severity`` (nothing written).

    Without ``--max-severity`` a missing scanner is one note and the install goes on; with
    it the install is refused, since nothing could be checked.
    """
    from upskill_hub.trust import ScannerMissing, check_severity, enforce_max_severity, scan_skill

    if max_severity is not None:
        max_severity = check_severity(max_severity)
    elif not scan:
        return
    reports = []
    try:
        for skill in skills:
            with err_console.status(f"Scanning {escape_controls(skill.name, one_line=True)}..."):
                reports.append(scan_skill(skill))
    except ScannerMissing as exc:
        if max_severity is not None:
            raise UpskillError(f"{exc} (needed by --max-severity; nothing was installed)") from None
        if human:
            err_console.print(
                f"not scanned: {exc}", markup=False, highlight=False, soft_wrap=True, style="dim"
            )
        return
    if human:
        for report in reports:
            print_summary(err_console, report)
    enforce_max_severity(reports, max_severity, action="nothing was installed")


def _looks_like_repo_id(source: str) -> bool:
    parts = source.split("/")
    return len(parts) == 2 and all(parts) and not Path(source).exists()


# The agent folders ``install`` and ``update`` both target (see upskill_hub.agents).
ClaudeFlag = Annotated[bool, typer.Option("--claude", help="Claude Code: .claude/skills")]
CodexFlag = Annotated[bool, typer.Option("--codex", help="Codex: .agents/skills")]
OpenCodeFlag = Annotated[bool, typer.Option("--opencode", help="OpenCode: .opencode/skills")]
CursorFlag = Annotated[bool, typer.Option("--cursor", help="Cursor: .cursor/skills")]
GeminiFlag = Annotated[bool, typer.Option("--gemini", help="Gemini CLI: .gemini/skills")]
AgentsFlag = Annotated[bool, typer.Option("--agents", help="Shared Agent Skills folder: .agents/skills")]


@app.command("install")
def install(
    source: str = typer.Argument(
        ...,
        help="A local skill folder or repository (its skills found as `skills list` finds them), or a Hub dataset repo OWNER/NAME.",
    ),
    skill_names: list[str] = typer.Option(
        [],
        "--skill",
        help="Skill(s) to take from a Hub repo or a local repository (by name, or by path for same-named skills).",
    ),
    revision: str | None = typer.Option(None, "--revision", help="Hub revision (branch, tag or commit)."),
    claude: ClaudeFlag = False,
    codex: CodexFlag = False,
    opencode: OpenCodeFlag = False,
    cursor: CursorFlag = False,
    gemini: GeminiFlag = False,
    agents: AgentsFlag = False,
    dest: Path | None = typer.Option(None, "--dest", help="Install into this skills folder instead."),
    global_: bool = typer.Option(
        False, "--global", help="Install for the user (~/...) instead of the project."
    ),
    force: bool = typer.Option(False, "--force", help="Replace an existing install."),
    max_severity: str | None = max_severity_option(),
    scan: bool = typer.Option(
        True,
        "--scan/--no-scan",
        help="Scan each skill first and show the summary (when the scanner is installed).",
    ),
    fmt: OutputFormat = format_option(),
    as_json: bool = json_option(),
) -> None:
    """Install a skill into one or more agents' skills folders.

    From a Hub repo (its skills table, or its marketplace.json alone), installs are marked
    as managed so that `skills update` can refresh them later. Each skill is scanned first
    (`skills scan`) and its summary shown; with --max-severity one above it is refused and
    nothing is installed.

    Example: upskill-hub skills install skills/hf-dataset-card --claude --codex
    """
    from upskill_hub.agents import install_skill, target_dirs
    from upskill_hub.skill import skills_in

    out = printer(fmt, as_json)
    chosen = _chosen(
        claude=claude, codex=codex, opencode=opencode, cursor=cursor, gemini=gemini, agents=agents
    )
    dirs = target_dirs(chosen, dest=dest, global_=global_)
    from_hub = _looks_like_repo_id(source)
    commit = None
    if from_hub:
        from upskill_hub.hub.pull import fetch_skills

        skills, commit = fetch_skills(source, skill_names or None, revision=revision)
    else:
        # A skill folder, or a repository whose skills the same walk as `skills list` finds.
        skills = skills_in(source, skill_names or None)
    _scan_before_install(skills, max_severity, scan, out.human)
    # Check every destination first so that a refused install writes nothing anywhere.
    for d in dirs:
        for s in skills:
            target = d.expanduser() / s.name
            if (target.exists() or target.is_symlink()) and not force:
                raise UpskillError(f"{target} already exists (use --force to replace it)")
    from upskill_hub.managed import mark_managed

    rows = []
    for d in dirs:
        for s in skills:
            path = install_skill(s, d, force=force)
            if from_hub:
                mark_managed(path, source, s.name, revision, commit)
            rows.append({"name": s.name, "version": s.version, "path": str(path), "managed": from_hub})
            if out.human:
                console.print(f"[green]✓[/] installed {s.name} ({s.version}) -> {path}", highlight=False)
    if not out.human:
        out.table(rows, ["name", "version", "path", "managed"], id_key="path")


@app.command("update")
def update(
    names: list[str] = typer.Argument(None, help="Installed skills to update (default: every managed one)."),
    claude: ClaudeFlag = False,
    codex: CodexFlag = False,
    opencode: OpenCodeFlag = False,
    cursor: CursorFlag = False,
    gemini: GeminiFlag = False,
    agents: AgentsFlag = False,
    dest: Path | None = typer.Option(None, "--dest", help="Update the skills in this folder instead."),
    global_: bool = typer.Option(
        False, "--global", help="The user's folders (~/...) instead of the project's."
    ),
    fmt: OutputFormat = format_option(),
    as_json: bool = json_option(),
) -> None:
    """Refresh skills installed with `skills install OWNER/NAME` from the Hub.

    Only managed installs are touched; skill folders you made or copied yourself are
    listed as unmanaged and left as they are. With no folder flag, every agent's folder is
    searched. Exit 1 when a source could not be read.

    Example: upskill-hub skills update hf-dataset-card --claude
    """
    from upskill_hub.agents import AGENTS, target_dirs
    from upskill_hub.managed import update_managed

    out = printer(fmt, as_json)
    chosen = _chosen(
        claude=claude, codex=codex, opencode=opencode, cursor=cursor, gemini=gemini, agents=agents
    )
    dirs = target_dirs(chosen if (chosen or dest) else list(AGENTS), dest=dest, global_=global_)
    infos = update_managed(dirs, names or None)
    missing = sorted(set(names or []) - {i.name for i in infos})
    if missing:
        raise UpskillError(f"no installed skill named {missing[0]!r} in {', '.join(map(str, dirs))}")
    rows = [i.to_dict() for i in infos]
    if out.human:
        marks = {"updated": "[green]✓[/]", "up_to_date": "[dim]=[/]", "unmanaged": "[dim]-[/]"}
        for i in infos:
            mark = marks.get(i.status, "[red]✗[/]")
            detail = f": {i.detail}" if i.detail else ""
            console.print(
                f"{mark} {i.name} {i.status.replace('_', ' ')} ({i.path}){detail}",
                highlight=False,
                soft_wrap=True,
            )
        if not infos:
            console.print(f"No installed skills in {', '.join(map(str, dirs))}.", highlight=False)
    else:
        out.table(
            [r for r in rows if r["status"] == "updated"] if out.mode is OutputFormat.quiet else rows,
            ["name", "status", "path", "repo", "version", "detail"],
            id_key="path",
            json_data=rows,
        )
    unreachable = [i for i in infos if i.status == "source_unreachable"]
    if unreachable:
        raise UpskillError(
            f"{len(unreachable)} managed skill(s) could not be updated (first: {unreachable[0].detail})"
        )


def register(root: typer.Typer) -> None:
    """Add the ``skills`` command group to the root app."""
    root.add_typer(app, name="skills")


def _chosen(**flags: bool) -> list[str]:
    """The agents whose flag (``--claude``, ``--codex``...) was given, in the flags' order."""
    return [name for name, on in flags.items() if on]
