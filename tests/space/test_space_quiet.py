"""Issue 37: the Space says only what its user can act on, and reports nothing by default.

* Gradio's usage reports (``analytics_enabled``) are off unless GRADIO_ANALYTICS_ENABLED
  turns them on: the tool promises to work offline.
* ``space run`` prints one line, where the Space runs; not Gradio's "set `share=True` in
  `launch()`" (advice for someone editing the code).
* Gradio's warning that local sign-in is mocked is not shown (twice per ``space run``,
  20 times in the test summary).
* The status line's counts agree with their nouns ("1 skill", not "1 skills").
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace

import pandas as pd
import pytest
from space_helpers import free_port

from upskill_hub.space import serving, ui, views


@pytest.mark.parametrize(
    ("value", "enabled"),
    [(None, False), ("True", True), ("true", True), ("1", True), ("False", False), ("0", False), ("", False)],
)
def test_analytics_are_off_unless_the_user_turns_them_on(value, enabled, monkeypatch) -> None:
    if value is None:
        monkeypatch.delenv(serving.ANALYTICS_ENV, raising=False)
    else:
        monkeypatch.setenv(serving.ANALYTICS_ENV, value)
    assert serving.ANALYTICS_ENV == "GRADIO_ANALYTICS_ENABLED"
    assert serving.analytics_enabled() is enabled


def test_the_built_space_does_not_report_usage_by_default(monkeypatch) -> None:
    monkeypatch.delenv("GRADIO_ANALYTICS_ENABLED", raising=False)
    demo = ui.build_app("me/skills")
    assert demo.analytics_enabled is False
    assert demo.get_config_file()["analytics_enabled"] is False


@pytest.fixture
def signed_in(monkeypatch) -> None:
    """As on a machine logged in to the Hub: the sign-in button is shown, Gradio mocks it."""
    from gradio import oauth

    monkeypatch.delenv("GRADIO_ANALYTICS_ENABLED", raising=False)
    monkeypatch.setattr(serving, "sign_in_available", lambda: True)
    monkeypatch.setattr(oauth, "_get_mocked_oauth_info", lambda: {"userinfo": {"name": "user"}})


def test_local_sign_in_launches_without_gradios_oauth_warning(signed_in) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        demo = ui.build_app("me/skills")  # closing the Blocks builds the server app once
        demo.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True)
    try:
        assert not [w for w in caught if "OAuth" in str(w.message)], [str(w.message) for w in caught]
    finally:
        demo.close()


def test_space_run_prints_where_it_runs_and_nothing_of_gradios(signed_in, capsys) -> None:
    said: list[str] = []
    port = free_port()
    demo = ui.launch("me/skills", host="127.0.0.1", port=port, echo=said.append, prevent_thread_lock=True)
    try:
        assert said == [f"The Space runs at http://127.0.0.1:{port}/ (Ctrl-C stops it)"]
        out, err = capsys.readouterr()
        assert "share=True" not in out + err and "Running on local URL" not in out + err
    finally:
        demo.close()


def test_the_status_line_agrees_with_its_counts() -> None:
    def lib(skills: int, results: int, models: list[str]):
        return SimpleNamespace(
            source="me/skills",
            revision="0123456789",
            skills=pd.DataFrame({"name": range(skills)}),
            results=pd.DataFrame({"x": range(results)}),
            aggregates=SimpleNamespace(models=models),
        )

    one = views.library_status(lib(1, 1, ["m"]), "1 of 1 skill matches")
    assert one == "**me/skills** @ `01234567` · 1 skill · 1 result row · 1 model · 1 of 1 skill matches"
    many = views.library_status(lib(2, 30, ["a", "b"]), "")
    assert "· 2 skills · 30 result rows · 2 models ·" in many
