"""CLI command group: hub (being built)."""

from __future__ import annotations

import typer

app = typer.Typer(help="hub commands.", no_args_is_help=True)
