"""Entry point of the ``upskill-hub`` CLI.

Each command group lives in its own module and only parses input, calls the library and
renders. Heavy libraries (torch, gradio, datasets) are imported inside commands so that
``upskill-hub --help`` stays fast.
"""

from __future__ import annotations

import sys

import typer
from rich.console import Console

from upskill_hub import __version__
from upskill_hub._util.redact import redact

# One module per command (or command group), named after it; each adds itself with
# register(app). Modules starting with "_" are the commands' shared helpers.
from upskill_hub.cli import (
    check,
    demo,
    doctor,
    generate,
    hub,
    jobs,
    kernels,
    models,
    pull,
    push,
    runs,
    skills,
    space,
    triggers,
    tune,
)
from upskill_hub.cli import eval as eval_
from upskill_hub.cli._help import install as install_help_rules
from upskill_hub.errors import OptionError, UpskillError

install_help_rules()  # switches show as switches; help paragraphs wrap once (see cli/_help.py)

app = typer.Typer(
    name="upskill-hub",
    help="Create, evaluate and share agent skills and compute kernels on the Hugging Face Hub.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode="rich",
)

#: In the order --help lists them (Typer lists single commands before groups).
COMMANDS = (eval_, triggers, tune, runs, generate, push, pull, demo, doctor, check, models, skills, hub, jobs, kernels, space)
for command in COMMANDS:
    command.register(app)


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"upskill-hub {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", help="Show the version and exit.", callback=_version_callback, is_eager=True
    ),
) -> None:
    """Create, evaluate and share agent skills and compute kernels on the Hugging Face Hub."""


def printable(message: str) -> str:
    """``message`` safe to print: Rich markup escaped, control characters shown as ``\\xNN``.

    Error messages quote names from repos and files written by others; ``[/]`` in a path
    must not crash the printer, and an ANSI escape must not repaint the user's terminal.
    """
    from rich.markup import escape

    shown = "".join(c if c.isprintable() or c == " " else f"\\x{ord(c):02x}" for c in message)
    return escape(shown)


#: Options whose flag is not ``--`` + the field name with dashes.
_FLAGS = {"shards": "--jobs"}


def flag(name: str) -> str:
    """The CLI flag of the library's option field ``name`` (``max_tokens`` -> ``--max-tokens``).

    The library raises :class:`OptionError` with field names, so the Space can name its own
    fields; only the CLI knows its flags, here.
    """
    return _FLAGS.get(name, "--" + name.replace("_", "-"))


def message(exc: UpskillError) -> str:
    """The one line the CLI prints for ``exc``: option errors name the flag."""
    return exc.describe(flag(exc.name)) if isinstance(exc, OptionError) else str(exc)


def main() -> None:
    """Run the CLI; turn user errors into one clean line on stderr and exit code 1."""
    err = Console(stderr=True, highlight=False)
    try:
        app()
    except UpskillError as exc:
        err.print(f"[bold red]Error:[/] {printable(redact(message(exc)))}", markup=True, soft_wrap=True)
        sys.exit(exc.exit_code)
    except OSError as exc:  # a full disk, a file-size limit, a read-only folder: one line, not a traceback
        from upskill_hub._util.fsutil import storage_error

        storage = storage_error(exc)
        if storage is None:
            raise
        err.print(f"[bold red]Error:[/] {printable(redact(str(storage)))}", markup=True, soft_wrap=True)
        sys.exit(1)
    except KeyboardInterrupt:
        err.print("[yellow]Interrupted.[/]")
        sys.exit(130)


def entry() -> None:
    """The ``upskill-hub`` executable: :func:`main`, then leave without native teardown.

    After a command has finished and printed its result, the interpreter's own shutdown
    can still die in a native library's static destructors: a CLI that had read parquet
    then exited 1 aborted with "terminate called without an active exception" (exit -6) in
    about one run in eight. Python-level clean-up (atexit handlers, which include
    ``weakref.finalize`` temporary folders and the local model's worker) runs as usual;
    only the C++ destructors that follow are skipped, so the exit status is the one the
    command chose. In-process callers (tests) use :func:`main`, which raises SystemExit.
    """
    import atexit
    import contextlib
    import os

    code = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing left to say
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    entry()
