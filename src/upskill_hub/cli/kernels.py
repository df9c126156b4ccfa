"""CLI command group: kernels (being built)."""

from __future__ import annotations

import typer

app = typer.Typer(help="kernels commands.", no_args_is_help=True)
