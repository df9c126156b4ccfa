"""Run the real ``upskill-hub`` entry point in-process, as a user's shell would, for tests."""

from __future__ import annotations

import sys

from upskill_hub.cli.app import main


def run_cli(args: list[str], capsys, monkeypatch) -> tuple[int, str, str]:
    """``upskill-hub ARGS`` through ``main()``: (exit code, stdout, stderr)."""
    monkeypatch.setattr(sys, "argv", ["upskill-hub", *args])
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out, err = capsys.readouterr()
    return code, out, err


def default_ctrl_c() -> None:
    """``preexec_fn`` for a child that a test stops with SIGINT, as Ctrl-C in a terminal would.

    A shell that starts a command in the background without job control (``cmd &`` in a
    script, as a CI runner may) sets SIGINT to "ignore", and every descendant inherits it:
    the child would then never see the test's Ctrl-C. Give it the default back.
    """
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def assert_one_line_errors(cases: list[tuple[list[str], str]], capsys, monkeypatch) -> None:
    """Each ``(args, expected)``: a non-zero exit whose stderr is one line holding ``expected``."""
    for args, expected in cases:
        code, _out, err = run_cli(args, capsys, monkeypatch)
        assert code != 0 and expected in err and "Traceback" not in err, (args, err)
        assert len(err.strip().splitlines()) == 1, err
