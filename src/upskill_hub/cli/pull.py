"""``upskill-hub pull``: download skills from a Hub dataset repo, byte-identical.

A thin command: the work is in :mod:`upskill_hub.hub.pull`.
"""

from __future__ import annotations

from pathlib import Path

import typer

from upskill_hub.cli._formats import OutputFormat, format_option, json_option, printer
from upskill_hub.cli._output import make_console
from upskill_hub.cli._trust import max_severity_option, print_summary

console = make_console()
console.soft_wrap = True  # keep URLs on one line, on a terminal too
err_console = make_console(stderr=True)


def pull_cmd(
    repo: str = typer.Argument(..., help="Hub dataset repo OWNER/NAME."),
    skill_names: list[str] = typer.Option(
        [], "--skill", "-s", help="Skill to pull (repeatable; default: all)."
    ),
    revision: str | None = typer.Option(None, "--revision", help="Branch, tag or commit to pull from."),
    output: Path = typer.Option(
        Path("skills"), "--output", "-o", help="Folder to write skills/<name>/ into."
    ),
    force: bool = typer.Option(False, "--force", help="Replace local skill folders that differ."),
    max_severity: str | None = max_severity_option(),
    fmt: OutputFormat = format_option(),
    as_json: bool = json_option(),
) -> None:
    """Download skills from a Hub dataset repo, byte-identical, after checking every file's hash."""
    from upskill_hub.hub.client import quiet_progress
    from upskill_hub.hub.pull import pull

    out = printer(fmt, as_json)
    with err_console.status(f"Pulling from {repo}..."), quiet_progress():
        result = pull(
            repo,
            skill_names or None,
            revision=revision,
            out_dir=output,
            force=force,
            max_severity=max_severity,
        )
    if not out.human:
        rows = [
            {
                "name": s.name,
                "version": s.version,
                "path": str(output / s.name),
                "status": result.status.get(s.name, "?"),
            }
            for s in result.skills
        ]
        json_data = {"repo": repo, "commit": result.commit, "skills": rows}
        out.table(rows, ["name", "version", "status", "path"], id_key="path", json_data=json_data)
        return
    for report in result.scans:
        print_summary(err_console, report)
    for skill in result.skills:
        state = result.status.get(skill.name, "?")
        mark = "[green]✓[/]" if state == "written" else "[dim]=[/]"
        console.print(f"{mark} {skill.name} ({skill.version}) -> {output / skill.name} ({state})")
    at = f" at {result.commit[:12]}" if result.commit else ""
    console.print(f"{len(result.skills)} skill(s) from {repo}{at}")


PULL_HELP = "\n\n".join(
    [
        "Download skills from a Hub dataset repo into DIR/<name>/ (default skills/).",
        "Files are checked against the sizes and sha256 recorded in the repo's skills table; a repo "
        "with unsafe paths or mismatching files is refused and nothing is written.",
        "With --max-severity LEVEL each skill is first scanned (`skills scan`) and one with an "
        "unacknowledged finding above LEVEL is refused; nothing is written.",
        "Example: upskill-hub pull me/my-skills --skill my-skill -o skills",
    ]
)



def register(app: typer.Typer) -> None:
    """Add ``pull`` to the root app."""
    app.command("pull", help=PULL_HELP)(pull_cmd)
