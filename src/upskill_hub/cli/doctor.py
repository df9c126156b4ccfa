"""``upskill-hub doctor``: check that the offline model runs here (see ``upskill_hub.models.doctor``)."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from upskill_hub.cli._formats import OutputFormat, format_option, json_option, printer
from upskill_hub.errors import UpskillError


def register(app: typer.Typer) -> None:
    """Add ``doctor`` to the root app."""

    @app.command("doctor")
    def doctor(
        model: str = typer.Option("local", "--model", help="Local model spec: local or local:PATH.gguf."),
        tokens: int = typer.Option(48, "--tokens", min=8, max=512, help="Tokens to generate for the speed check."),
        fmt: OutputFormat = format_option(),
        as_json: bool = json_option(),
        device: str | None = typer.Option(None, "--device", help="auto (a GPU if torch sees one), cpu or cuda."),
    ) -> None:
        """Check the offline model: load it, run a two-token and a long prompt, measure tokens/s.

        Prints the backend, its version, the device, CPU features and a verdict; exits 1 if
        the model cannot run here, with what to try next. Settings: UPSKILL_LOCAL_BACKEND
        (transformers | llama.cpp), UPSKILL_LOCAL_THREADS, UPSKILL_LOCAL_DEVICE (auto | cpu | cuda).
        """
        from upskill_hub.cli.eval import set_local_device
        from upskill_hub.models.doctor import check_local_model

        out = printer(fmt, as_json)
        if device is not None:
            set_local_device(device)
        report = check_local_model(model, tokens=tokens)
        if not out.human:
            data = report.to_dict()
            out.result(
                "ok" if report.ok else "failed",
                json_data=data,
                ok=report.ok,
                backend=report.backend,
                device=report.device,
                threads=report.threads,
                tokens_per_s=report.tokens_per_s,
                batch=report.batch,
                precision=report.precision,
                failed=",".join(n for n, passed, _ in report.checks if not passed) or None,
            )
        else:
            console = Console(highlight=False)
            facts = Table.grid(padding=(0, 2))
            facts.add_row("backend", report.backend)
            facts.add_row("device", f"{report.device} ({report.threads} thread{'s' * (report.threads != 1)})")
            facts.add_row("cpu", escape(f"{report.cpu} [{' '.join(report.cpu_features) or 'features unknown'}]"))
            facts.add_row("precision", escape(f"{report.precision} ({report.precision_why})"))
            facts.add_row("batch", f"up to {report.batch} concurrent calls answered together (UPSKILL_LOCAL_BATCH)")
            if report.loaded_from:
                facts.add_row("loaded from", escape(report.loaded_from))
            if report.tokens_per_s is not None:
                facts.add_row("speed", f"{report.tokens_per_s:.1f} tokens/s")
            console.print(facts)
            for name, passed, detail in report.checks:
                mark = "[green]✓[/]" if passed else "[red]✗[/]"
                console.print(f"{mark} {name}: {escape(detail)}")
            if report.ok:
                console.print("[bold green]OK[/]: the local model runs on this machine.")
        if not report.ok:
            raise UpskillError(f"the local model does not run here ({report.backend}); {report.advice}")
