"""Stranger's prose (descriptions, metadata, bodies) is refused or escaped, never shown raw."""

from __future__ import annotations

import pytest

from upskill_hub._util.printable import escape_controls, text_problem


@pytest.mark.parametrize(
    ("text", "code"),
    [("a\x1b]0;title\x07b", "U+001B"), ("x\x9by", "U+009B"), ("evil\u2067gpj", "U+2067"), ("del\x7f", "U+007F")],
)
def test_text_problem_names_the_first_control(text: str, code: str) -> None:
    why = text_problem(text)
    assert why is not None and code in why


def test_prose_whitespace_and_unicode_letters_are_fine() -> None:
    assert text_problem("Use when\n\tthe user asks about café, 数据 or עברית.\r\n") is None


def test_escape_controls_keeps_text_and_makes_controls_visible() -> None:
    assert escape_controls("a\x1b[2Jb\u202ec\nd") == "a\\x1b[2Jb\\u202ec\nd"
    assert escape_controls("a\nb\tc", one_line=True) == "a\\x0ab\\x09c"
    assert escape_controls("plain café") == "plain café"
