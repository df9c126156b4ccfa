"""``upskill-hub demo``: the offline walk-through (see ``upskill_hub.demo``)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from upskill_hub.cli._output import make_console

# Piped (`demo | tee log`), its sentences stay one line each, like every command's.
console = make_console()


def register(app: typer.Typer) -> None:
    """Add ``demo`` to the root app."""

    @app.command("demo")
    def demo(
        model: str = typer.Option("local", "--model", help="Model to evaluate on; local is the offline one."),
        cases: int | None = typer.Option(None, "--cases", min=1, help="Run only the first N test cases (default: all)."),
        max_tokens: int = typer.Option(64, "--max-tokens", min=16, help="Answer length cap per call."),
        workdir: Path = typer.Option(Path(".upskill-demo"), "--workdir", help="Scratch folder: new, empty, or one an earlier demo made (emptied first); a folder holding other files is refused."),
        kernels: bool = typer.Option(True, "--kernels/--no-kernels", help="Also build, publish and load a kernel."),
        space: bool = typer.Option(True, "--space/--no-space", help="Also launch the Space once."),
    ) -> None:
        """Run the whole loop offline: validate, evaluate on the local model, push to a local Hub,
        load back with `datasets`, pull, build + publish + load a kernel, launch the Space.

        Runs from any folder (the shipped skills and kernel example are copied into --workdir);
        every step prints the command it runs, from --workdir.

        Example: upskill-hub demo --no-kernels --no-space --cases 2
        """
        from upskill_hub.demo import Demo

        d = Demo(workdir.resolve(), model=model, cases=cases, max_tokens=max_tokens, kernels=kernels, space=space, echo=console.print)
        try:
            report = d.go()
        finally:
            if d.report.steps:  # a refusal before the first step is its one error line, no table
                _print_steps(d.report.steps)
        if report.ok:
            if d.lift_line:
                console.print(f"[bold]Measured:[/] {d.lift_line}", highlight=False)
            if d.trigger_line:
                console.print(f"[bold]Measured:[/] {d.trigger_line}", highlight=False)
            console.print(f"[bold green]All done.[/] Scratch files are in {workdir}.")


def _print_steps(steps: list) -> None:
    """The table of steps run so far, each with its result and time."""
    table = Table(title="upskill-hub demo")
    table.add_column("step")
    table.add_column("result")
    table.add_column("seconds", justify="right")
    for s in steps:
        table.add_row(s.title, "[green]ok[/]" if s.ok else "[red]failed[/]", f"{s.seconds:.1f}")
    console.print(table)
