"""Entry point of the ``upskill-hub`` CLI.

Each command group lives in its own module and only parses input, calls the library and
renders. Heavy libraries (torch, gradio, datasets) are imported inside commands so that
``upskill-hub --help`` stays fast.
"""

from __future__ import annotations

import sys

import typer
import typer.main
from rich.console import Console
from typer import _click as click  # the click Typer runs on (it vendors its own copy)
from typer.core import TyperGroup

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


def _command_path(root: click.Command, args: list[str]) -> str:
    """``upskill-hub kernels push`` for ``args`` ``kernels push --repo``: the command named."""
    path, command = ["upskill-hub"], root
    for arg in args:
        sub = command.commands.get(arg) if isinstance(command, TyperGroup) else None
        if sub is None:
            break
        path.append(arg)
        command = sub
    return " ".join(path)


def usage_error_line(exc: click.ClickException, root: click.Command, args: list[str]) -> str:
    """The one line for a command line click refused (unknown option, missing argument...).

    Typer would print a box of help around click's message, with exit code 2; the README
    promises one ``Error:`` line and exit code 1 for every error. click's own message is
    kept ("Missing argument 'paths'.", "No such option: --modle. Did you mean --mode or --model?")
    and the line points to the command's ``--help``, where the full usage is. An unknown
    option names the closest known ones, as click computes them.
    """
    if isinstance(exc, click.exceptions.NoSuchOption):
        close = sorted(exc.possibilities or ())
        text = exc.message + (f". Did you mean {' or '.join(close)}?" if close else "")
    else:
        text = " ".join(exc.format_message().split())
    if isinstance(exc, click.exceptions.UsageError):  # some carry no context: find the command in args
        path = exc.ctx.command_path if exc.ctx is not None else _command_path(root, args)
        text = f"{text if text.endswith(('.', '?')) else text + '.'} See '{path} --help'."
    return text


def _cli_command() -> click.Command:
    """The root click command, where a command without its arguments is an error.

    ``no_args_is_help`` on a command (``eval``, ``check``...) printed 200 lines of help, exit
    2, for a missing argument: click then names the missing argument instead. Groups
    (``kernels``, the root) keep showing their help: they have nothing to be missing.
    """
    root = typer.main.get_command(app)
    pending = [root]
    while pending:
        command = pending.pop()
        if isinstance(command, TyperGroup):
            pending.extend(command.commands.values())
        else:
            command.no_args_is_help = False
    return root


def main() -> None:
    """Run the CLI; turn user errors into one clean line on stderr and exit code 1."""
    err = Console(stderr=True, highlight=False)
    root, args = _cli_command(), sys.argv[1:]
    try:
        # The name users type, also when run as `python -m upskill_hub.cli.app` (tests, the demo).
        code = root.main(args, prog_name="upskill-hub", standalone_mode=False)
        if isinstance(code, int) and code:  # typer.Exit(code) comes back as its code here
            sys.exit(code)
    except click.exceptions.NoArgsIsHelpError as exc:  # a group without its command: its help
        typer.echo(exc.ctx.get_help())
    except click.ClickException as exc:
        err.print(
            f"[bold red]Error:[/] {printable(redact(usage_error_line(exc, root, args)))}",
            markup=True,
            soft_wrap=True,
        )
        sys.exit(1)
    except typer.Abort:  # Ctrl-C or end of input at a prompt
        err.print("[yellow]Interrupted.[/]")
        sys.exit(130)
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
    The process-wide settings live here too, not in :func:`main`: the libraries' progress
    bars are settled once for every command (:func:`quiet_library_progress`).
    """
    import atexit
    import contextlib
    import os

    from upskill_hub._util.progress import quiet_library_progress

    quiet_library_progress()  # libraries' tqdm bars: off when stderr is not a terminal
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
