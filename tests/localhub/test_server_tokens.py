"""`hub serve` tokens come from the environment or a file, so `ps` never shows them."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from upskill_hub.errors import UpskillError
from upskill_hub.localhub.tokens import READ_ENV, WRITE_ENV, collect

W1, W2, R1 = "hf_" + "w" * 20, "hf_" + "v" * 20, "hf_" + "r" * 20


def test_tokens_in_argv_are_not_needed_env_and_file_suffice(tmp_path):
    env = {WRITE_ENV: f"{W1}, {W2}", READ_ENV: R1}
    assert collect([], [], None, env) == ((W1, W2), (R1,))
    f = tmp_path / "tokens"
    f.write_text(f"# team tokens\nwrite {W1}\nread {R1}\n{W2}\n")
    f.chmod(0o600)
    assert collect([], [], f, {}) == ((W1, W2), (R1,))


def test_token_file_readable_by_others_is_refused(tmp_path):
    f = tmp_path / "tokens"
    f.write_text(f"write {W1}\n")
    f.chmod(0o644)
    with pytest.raises(UpskillError, match="chmod 600"):
        collect([], [], f, {})


@pytest.mark.parametrize("line", ["admin " + W1, "write short", "write " + W1 + " extra"])
def test_bad_token_file_line_is_one_line_error(tmp_path, line):
    f = tmp_path / "tokens"
    f.write_text(line + "\n")
    f.chmod(0o600)
    with pytest.raises(UpskillError) as exc:
        collect([], [], f, {})
    assert "line 1" in str(exc.value) and W1 not in str(exc.value)


def test_same_token_for_write_and_read_is_refused():
    with pytest.raises(UpskillError, match="both"):
        collect([W1], [], None, {READ_ENV: W1})


def test_serve_with_an_unreadable_token_file_is_one_line_error(tmp_path):
    from upskill_hub.cli.app import app

    result = CliRunner().invoke(app, ["hub", "serve", "--root", str(tmp_path / "r"), "--token-file",
                                      str(tmp_path / "missing")])  # fmt: skip
    # The CLI's main() prints an UpskillError as one "Error: ..." line (no traceback).
    assert isinstance(result.exception, UpskillError)
    assert "cannot read token file" in str(result.exception) and "\n" not in str(result.exception)
