"""``upskill-hub check``: judge every skill and kernel project under one or more folders."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table
from rich.text import Text

from upskill_hub.cli._formats import OutputFormat, format_option, json_option, printer
from upskill_hub.cli._output import make_console
from upskill_hub.errors import UpskillError

_MARK = {"ok": "[green]✓[/]", "warning": "[yellow]![/]", "error": "[red]✗[/]"}


def check_command(
    paths: list[Path] = typer.Argument(..., help="Folders to search (a skill collection, a kernels checkout...)."),
    strict: bool = typer.Option(False, "--strict", help="Skills: keys outside the spec and typed scalars are errors."),
    fmt: OutputFormat = format_option(),
    as_json: bool = json_option(),
) -> None:
    """Run `skills validate` and `kernels check` on everything under PATHS; print a table of verdicts.

    Skill folders (SKILL.md or skill.md) and kernel projects (build.toml) are found at any
    depth, hidden collection folders such as .curated/ included. Exit 1 when any item has
    an error.

    Example: [cyan]upskill-hub check ~/src/skills ~/src/kernels-community[/]
    """
    from upskill_hub.corpus import check_corpus, counts

    for p in paths:
        if not p.is_dir():
            raise UpskillError(f"{p}: not a folder")
    out = printer(fmt, as_json)
    verdicts = check_corpus(paths, strict=strict)
    failed = any(not v.ok for v in verdicts)
    if not out.human:
        items = [v.to_dict() for v in verdicts]
        json_data = {"counts": counts(verdicts), "items": items}
        shown = [i for i in items if not i["ok"]] if out.mode is OutputFormat.quiet else items
        out.table(shown, ["path", "status", "kind", "errors", "warnings", "first"], json_data=json_data)
        raise typer.Exit(1 if failed else 0)
    console = make_console()
    if not verdicts:
        raise UpskillError(f"no skills (SKILL.md) or kernel projects (build.toml) under {', '.join(map(str, paths))}")
    table = Table(title="Verdicts")
    table.add_column("", no_wrap=True)
    table.add_column("kind", no_wrap=True)
    table.add_column("path", overflow="fold")
    table.add_column("errors", justify="right")
    table.add_column("warnings", justify="right")
    table.add_column("tests / first problem", overflow="fold")
    for v in verdicts:
        detail = v.first if v.first and not v.ok else (v.tests or v.first)
        # paths and messages are user content: Text, so '[' in them is not read as markup
        table.add_row(_MARK[v.status], v.kind, Text(v.path), str(v.errors), str(v.warnings), Text(detail or ""))
    console.print(table)
    summary = "; ".join(
        f"{kind}s: {c['ok']} ok, {c['warning']} with warnings, {c['error']} failing"
        for kind, c in sorted(counts(verdicts).items())
    )
    console.print(summary, markup=False)
    raise typer.Exit(1 if failed else 0)


def register(app: typer.Typer) -> None:
    """Add ``check`` to the root app."""
    app.command("check", no_args_is_help=True)(check_command)
