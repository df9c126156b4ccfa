"""One module per command, named after it; every other module of the CLI is a ``_`` helper."""

from __future__ import annotations

import importlib
import pkgutil

import typer
import typer.main

import upskill_hub.cli
from upskill_hub.cli.app import COMMANDS, app


def _command_modules() -> list[str]:
    names = [m.name for m in pkgutil.iter_modules(upskill_hub.cli.__path__)]
    return sorted(n for n in names if not n.startswith("_") and n != "app")


def test_each_command_module_registers_exactly_its_namesake():
    for name in _command_modules():
        module = importlib.import_module(f"upskill_hub.cli.{name}")
        root = typer.Typer()
        module.register(root)
        group = typer.main.get_command(root)
        registered = set(getattr(group, "commands", {}) or {group.name})
        assert registered == {name}, f"upskill_hub/cli/{name}.py registers {registered}"


def test_the_app_registers_every_command_module_once():
    assert sorted(m.__name__.rsplit(".", 1)[1] for m in COMMANDS) == _command_modules()
    top = typer.main.get_command(app)
    assert sorted(top.commands) == _command_modules()
