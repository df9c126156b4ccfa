"""``upskill-hub push``: share skills and eval results on the Hub (``pull``: :mod:`.pull`).

A thin command: the work is in :mod:`upskill_hub.hub.push`.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from upskill_hub.cli._formats import OutputFormat, format_option, json_option, printer
from upskill_hub.cli._output import make_console

console = make_console()
console.soft_wrap = True  # keep URLs on one line, on a terminal too
err_console = make_console(stderr=True)

_STATUS_STYLE = {"added": "green", "updated": "yellow", "deleted": "red", "kept": "dim", "unchanged": "dim"}


def push_cmd(
    skill_dirs: list[Path] = typer.Argument(None, help="Skill folders to publish (each is validated first)."),
    repo: str = typer.Option(..., "--repo", "-r", help="Hub dataset repo OWNER/NAME (created when missing)."),
    results: list[Path] = typer.Option(
        [],
        "--results",
        help="Eval run folder to publish, or a folder of runs (every finished run of the skills pushed); repeatable.",
    ),
    private: bool = typer.Option(False, "--private", help="Create the repo as private."),
    revision: str | None = typer.Option(
        None, "--revision", help="Branch to push to (created from main if new)."
    ),
    create_pr: bool = typer.Option(False, "--create-pr", help="Open a pull request instead of committing."),
    message: str | None = typer.Option(None, "--message", "-m", help="Commit message."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="List unchanged files too."),
    no_scan: bool = typer.Option(
        False, "--no-scan", help="Do not scan the skills (no security rows are written or refreshed)."
    ),
    fmt: OutputFormat = format_option(),
    as_json: bool = json_option(),
) -> None:
    """Publish skills and their eval results to a Hub dataset repo, in one commit."""
    from upskill_hub import trust
    from upskill_hub.hub.client import quiet_progress
    from upskill_hub.hub.push import push

    out = printer(fmt, as_json)
    with err_console.status("Pushing...") as spinner, quiet_progress():
        result = push(
            skill_dirs or [],
            repo,
            results=results,
            private=private,
            revision=revision,
            create_pr=create_pr,
            message=message,
            on_status=lambda msg: spinner.update(msg),
            scan=None if no_scan else trust.scan_skills,
        )
    for note in result.notes:
        err_console.print(note, markup=False, highlight=False, soft_wrap=True)
    if out.human:
        from upskill_hub.cli._trust import print_summary

        for report in result.scans:
            print_summary(err_console, report)
    if not out.human:
        data = {
            "repo": repo,
            "url": result.url,
            "committed": result.committed,
            "commit_url": result.commit_url,
            "pr_url": result.pr_url,
            "bytes_uploaded": result.bytes_uploaded,
            "changes": [{"path": c.path, "status": c.status, "size": c.size} for c in result.changes],
        }
        counts = result.counts()
        out.result(
            repo,
            json_data=data,
            repo=repo,
            committed=result.committed,
            commit_url=result.commit_url,
            pr_url=result.pr_url,
            bytes_uploaded=result.bytes_uploaded,
            **{k: n for k, n in counts.items() if n},
        )
        return
    shown = [c for c in result.changes if verbose or c.status != "unchanged"]
    if shown:
        table = Table(show_header=True, header_style="bold")
        table.add_column("File", overflow="fold")
        table.add_column("Change")
        table.add_column("Bytes", justify="right")
        for c in shown:
            style = _STATUS_STYLE.get(c.status, "")
            label = "kept (run already in repo)" if c.status == "kept" else c.status
            table.add_row(c.path, f"[{style}]{label}[/]" if style else label, f"{c.size:,}")
        console.print(table)
    counts = result.counts()
    summary = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
    if result.pr_url:
        console.print(f"[green]✓[/] Opened a pull request: {result.pr_url} ({summary})")
    elif result.committed:
        console.print(
            f"[green]✓[/] Pushed to {result.url} ({summary}; {result.bytes_uploaded:,} bytes uploaded)"
        )
        if result.commit_url:
            console.print(f"  commit: {result.commit_url}")
    else:
        console.print(
            f"[green]✓[/] Nothing changed: {result.url} is up to date ({summary}; 0 bytes uploaded)"
        )


PUSH_HELP = "\n\n".join(
    [
        "Publish skills and their eval results to a Hub dataset repo, in one commit.",
        "The repo gets skills/<name>/ (installable files), the skills, results and runs tables "
        "(readable with datasets.load_dataset) and a dataset card showing the latest results. "
        "Every skill is validated first; pushing the same content again makes no commit; runs "
        "already in the repo are never duplicated. Uses HF_TOKEN or your `hf auth login` token.",
        "Each skill is scanned first (cisco-ai-skill-scanner, as `skills scan` does) and its findings "
        "are recorded in the repo's security table and on the card; nothing is refused. Without the "
        "scanner installed the push goes on and says the skills were not scanned; --no-scan skips it.",
        "Example: upskill-hub push skills/my-skill --results upskill-runs/RUN_ID --repo me/my-skills",
    ]
)


def register(app: typer.Typer) -> None:
    """Add ``push`` to the root app."""
    app.command("push", help=PUSH_HELP)(push_cmd)
