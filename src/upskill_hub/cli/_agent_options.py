"""The options every command that runs agent CLIs shares (``eval --agent``, ``triggers --agent``),
defined once so that both spell, default and document them the same."""

from __future__ import annotations

from typing import Any

import typer

PANEL = "Agent harnesses"


def agent_env_option() -> Any:
    return typer.Option(
        None,
        "--agent-env",
        help="Environment variable the agent CLI also gets (NAME or NAME=VALUE), repeatable; "
        "by default it gets only its provider key.",
        rich_help_panel=PANEL,
    )


def agent_timeout_option(default: float | None) -> Any:
    """``--agent-timeout``; ``None`` as the default lets a command tell "not given" apart."""
    shown = " (default 600)" if default is None else ""
    return typer.Option(
        default,
        "--agent-timeout",
        help=f"Seconds per agent call before its process group is killed{shown}.",
        rich_help_panel=PANEL,
    )


def keep_workspaces_option() -> Any:
    return typer.Option(
        False,
        "--keep-workspaces",
        help="Keep each call's workspace (its path is in the run folder's agents/).",
        rich_help_panel=PANEL,
    )


def agent_real_home_option() -> Any:
    return typer.Option(
        False,
        "--agent-real-home",
        help="Run agents with your real HOME (subscription logins); refused while a "
        "user-level skill of the same name exists.",
        rich_help_panel=PANEL,
    )
