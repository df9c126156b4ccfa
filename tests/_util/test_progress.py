"""One switch for the libraries' progress bars (issue 48 item 4): off by default when stderr
is not a terminal, the user's HF_HUB_DISABLE_PROGRESS_BARS always wins, datasets follows it."""

from __future__ import annotations

import io

import pytest

from upskill_hub._util.progress import DATASETS_SWITCH, HUB_SWITCH, quiet_library_progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_piped_output_turns_the_bars_off_for_both_libraries() -> None:
    env: dict[str, str] = {}
    assert quiet_library_progress(env, io.StringIO()) is True
    assert env == {HUB_SWITCH: "1", DATASETS_SWITCH: "1"}


def test_a_terminal_keeps_the_libraries_defaults() -> None:
    env: dict[str, str] = {}
    assert quiet_library_progress(env, Terminal()) is False
    assert env == {}


@pytest.mark.parametrize("stream", [io.StringIO(), Terminal()], ids=["piped", "terminal"])
@pytest.mark.parametrize(("value", "off"), [("0", False), ("1", True)])
def test_the_users_setting_wins_and_datasets_follows_it(stream, value, off) -> None:
    env = {HUB_SWITCH: value}
    assert quiet_library_progress(env, stream) is off
    assert env == {HUB_SWITCH: value, DATASETS_SWITCH: value}


def test_a_datasets_setting_of_its_own_is_kept() -> None:
    env = {DATASETS_SWITCH: "0"}
    quiet_library_progress(env, io.StringIO())
    assert env == {HUB_SWITCH: "1", DATASETS_SWITCH: "0"}


def test_a_closed_stderr_counts_as_not_a_terminal() -> None:
    stream = io.StringIO()
    stream.close()
    env: dict[str, str] = {}
    assert quiet_library_progress(env, stream) is True
