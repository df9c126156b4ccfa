"""Secrets never reach messages or files: the shared masking helper."""

from __future__ import annotations

import pytest

from upskill_hub._util.redact import MASK, redact


def test_env_secret_values_are_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "plainkeywithoutprefix123")
    assert redact("failed with key plainkeywithoutprefix123!") == f"failed with key {MASK}!"


@pytest.mark.parametrize(
    "secret",
    ["hf_" + "a" * 34, "sk-ant-api03-" + "b" * 40, "sk-proj-" + "c" * 40],
)
def test_token_shapes_are_masked(secret: str) -> None:
    out = redact(f"token={secret} end")
    assert secret not in out and MASK in out and out.endswith(" end")


def test_bearer_header_keeps_scheme() -> None:
    assert redact("Authorization: Bearer abcdefghijkl") == f"Authorization: Bearer {MASK}"


def test_ordinary_text_is_untouched(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", "short")  # too short to mask safely
    text = "skills/kernel-builder: short description, sk-1 not a key"
    assert redact(text) == text


def test_cli_error_line_is_redacted(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    from upskill_hub.cli import app as cli_app
    from upskill_hub.errors import UpskillError

    secret = "hf_" + "z" * 34

    class Boom:
        def main(self, *args: object, **kwargs: object) -> None:
            raise UpskillError(f"bad token {secret}")

    monkeypatch.setattr(cli_app, "_cli_command", Boom)
    with pytest.raises(SystemExit) as info:
        cli_app.main()
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert secret not in err and "Error:" in err


@pytest.mark.parametrize(
    "name, secret",
    [("OPENAI_API_KEY", True), ("ANTHROPIC_AUTH_TOKEN", True), ("MY_SERVICE_PASSWORD", True),
     ("GOOGLE_APPLICATION_CREDENTIALS", True), ("GITHUB_PAT", True), ("AWS_SECRET_ACCESS_KEY", True),
     ("ANTHROPIC_BASE_URL", False), ("GEMINI_CLI_SYSTEM_SETTINGS_PATH", False), ("MONKEY", False),
     ("KEYBOARD_LAYOUT", False), ("PATH", False), ("FAKE_AGENT_MODE", False)],
)  # fmt: skip
def test_secret_names(name: str, secret: bool) -> None:
    from upskill_hub._util.redact import secret_name

    assert secret_name(name) is secret


def test_a_url_password_is_masked() -> None:
    assert redact("proxy https://bob:hunter22@example.com/x") == "proxy https://bob:***@example.com/x"
    assert redact("http://example.com:8080/y") == "http://example.com:8080/y"
