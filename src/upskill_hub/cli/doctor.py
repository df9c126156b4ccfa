"""``upskill-hub doctor``: check that the offline model runs here (see ``upskill_hub.models.doctor``),
or with ``--agent NAME`` that an agent CLI would run an eval (see ``upskill_hub.lift.harness.doctor``)."""

from __future__ import annotations

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from upskill_hub.cli._agent_options import (
    PANEL,
    agent_env_option,
    agent_real_home_option,
    agent_timeout_option,
)
from upskill_hub.cli._formats import OutputFormat, Printer, format_option, json_option, printer
from upskill_hub.errors import UpskillError

#: ``--agent-timeout`` for the probe call: ``eval`` allows 600 s a call, but a one-word answer
#: takes seconds, and a CLI stuck on a login or a retry loop should not hold ``doctor`` that long.
DEFAULT_AGENT_TIMEOUT_S = 120.0


def register(app: typer.Typer) -> None:
    """Add ``doctor`` to the root app."""

    @app.command("doctor")
    def doctor(
        model: str = typer.Option("local", "--model", help="Local model spec: local or local:PATH.gguf."),
        tokens: int = typer.Option(
            48, "--tokens", min=8, max=512, help="Tokens to generate for the speed check."
        ),
        fmt: OutputFormat = format_option(),
        as_json: bool = json_option(),
        device: str | None = typer.Option(
            None, "--device", help="auto (a GPU if torch sees one), cpu or cuda."
        ),
        agent: str | None = typer.Option(
            None,
            "--agent",
            help="Check an agent CLI instead of the local model: claude-code, codex, gemini, opencode "
            "(optionally NAME:MODEL) or cmd:'TEMPLATE'; makes one real call.",
            rich_help_panel=PANEL,
        ),
        agent_env: list[str] | None = agent_env_option(),
        agent_timeout: float = agent_timeout_option(DEFAULT_AGENT_TIMEOUT_S),
        agent_real_home: bool = agent_real_home_option(),
    ) -> None:
        """Check the offline model, or with --agent an agent CLI, before an eval.

        Without --agent: load the offline model, run a two-token and a long prompt, measure
        tokens/s; prints the backend, its version, the device, CPU features and a verdict.
        Settings: UPSKILL_LOCAL_BACKEND (transformers | llama.cpp), UPSKILL_LOCAL_THREADS,
        UPSKILL_LOCAL_DEVICE (auto | cpu | cuda).

        With --agent NAME: one line per check, in the order they would stop `eval --agent`:
        executable on PATH, version, provider key, endpoint reachable (its base-URL variable
        or the public host), running as root, then one real call ("Reply with the single
        word OK.") in a throwaway workspace, its error classified (auth, trust, root,
        connection, timeout). --model, --tokens and --device are ignored then.

        Exits 1 with the first failed check and what to try next.

        Example: [cyan]upskill-hub doctor --agent claude-code --agent-timeout 60[/]
        """
        out = printer(fmt, as_json)
        if agent is not None:
            _doctor_agent(out, agent, agent_env or [], agent_timeout, agent_real_home)
            return
        from upskill_hub.cli.eval import set_local_device
        from upskill_hub.models.doctor import check_local_model

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
            facts.add_row(
                "cpu", escape(f"{report.cpu} [{' '.join(report.cpu_features) or 'features unknown'}]")
            )
            facts.add_row("precision", escape(f"{report.precision} ({report.precision_why})"))
            facts.add_row(
                "batch", f"up to {report.batch} concurrent calls answered together (UPSKILL_LOCAL_BATCH)"
            )
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


def _doctor_agent(out: Printer, spec: str, agent_env: list[str], timeout: float, real_home: bool) -> None:
    """``doctor --agent``: print each check, then exit 1 naming the first that failed."""
    from upskill_hub.lift.harness import HarnessOptions
    from upskill_hub.lift.harness.doctor import check_agent

    report = check_agent(spec, HarnessOptions(timeout=timeout, agent_env=agent_env, real_home=real_home))
    rows = [{"check": c.name, "ok": c.ok, "detail": c.detail} for c in report.checks]
    if out.human:
        console = Console(highlight=False)
        console.print(f"[bold]{escape(report.agent)}[/] {escape(report.version or '')}".rstrip())
        for c in report.checks:
            mark = "[green]✓[/]" if c.ok else ("[red]✗[/]" if c.ok is False else "[dim]-[/]")
            console.print(f"{mark} {c.name}: {escape(c.detail)}", soft_wrap=True)  # one line each
        if report.ok:
            console.print(f"[bold green]OK[/]: {escape(report.agent)} can run `eval --agent` here.")
    elif out.mode is OutputFormat.quiet:
        out.result("ok" if report.ok else "failed")
    else:
        out.table(rows, ["check", "ok", "detail"], json_data=report.to_dict())
    failed = report.first_failure
    if failed is not None:
        raise UpskillError(f"{report.agent} would not run an eval here: {failed.name}: {failed.detail}")
