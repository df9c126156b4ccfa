"""``upskill-hub triggers --library``: a folder or a Hub repo in, the routing report out; bad input in one line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "triggering"))
from test_routing_run import KEY, LIBRARY, MODEL, answer, write_library  # noqa: E402

from upskill_hub.testing.llm_server import running_llm_server  # noqa: E402


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("UPSKILL_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "200")


def test_the_report_names_the_stealing_pair_and_its_queries(tmp_path: Path, capsys, monkeypatch) -> None:
    from cli_runner import run_cli

    lib = write_library(tmp_path / "lib")
    with running_llm_server(answer) as srv:
        args = ["triggers", str(lib), "--library", "-m", MODEL, "--base-url", srv.openai_base_url, "-o", str(tmp_path / "out")]
        code, out, err = run_cli(args, capsys, monkeypatch)
        assert code == 0, err
        code_j, out_j, err_j = run_cli([*args, "--resume", "--json"], capsys, monkeypatch)
        assert len(srv.completion_requests) == 15  # the second run only read the run folder
    assert "Stealing pair: csv-cleaner <-> csv-to-json" in out
    assert "for csv-to-json, loaded csv-cleaner: 'turn this spreadsheet into JSON'" in out
    assert "library routing accuracy 67% (10/15) [42%, 85%]" in out and "33% (1/3)" in out
    (run_dir,) = (tmp_path / "out").iterdir()
    assert f"Heat map: {run_dir / 'routing.png'}" in out and (run_dir / "routing.png").is_file()
    assert code_j == 0, err_j
    data = json.loads(out_j)
    assert data["run_dir"] == str(run_dir) and data["reports"][0]["skills"] == list(LIBRARY)


def test_a_hub_repo_is_routed_like_a_folder(hub_server, hub_repo_id, tmp_path: Path, capsys, monkeypatch) -> None:
    from cli_runner import run_cli

    from upskill_hub.hub.push import push
    from upskill_hub.rundir.routing_rows import read_routing

    lib = write_library(tmp_path / "lib")
    push(sorted(lib.iterdir()), hub_repo_id)
    with running_llm_server(answer) as srv:
        code, out, err = run_cli(["triggers", hub_repo_id, "--library", "-m", MODEL, "--base-url",
                                  srv.openai_base_url, "-o", str(tmp_path / "out")], capsys, monkeypatch)  # fmt: skip
    assert code == 0, err
    assert f"5 skill(s) from {hub_repo_id}" in err and "Stealing pair: csv-cleaner <-> csv-to-json" in out
    (run_dir,) = (tmp_path / "out").iterdir()
    assert hub_repo_id.replace("/", "-") in run_dir.name
    assert read_routing(run_dir)[2][0].skills == list(LIBRARY)
    # and the run goes back to the Hub as the repo's routing config
    result = push([], hub_repo_id, results=[run_dir])
    assert f"data/routing/{run_dir.name}.parquet" in {c.path for c in result.changes}


def test_bad_library_input_is_one_line_and_calls_nothing(hub_server, tmp_path: Path, capsys, monkeypatch) -> None:
    from cli_runner import assert_one_line_errors

    lib = write_library(tmp_path / "lib")
    with running_llm_server(answer) as srv:
        common = ["--library", "-m", MODEL, "--base-url", srv.openai_base_url, "-o", str(tmp_path / "out")]
        cases = [
            (["triggers", str(lib), str(lib), *common], "one folder of skills"),
            (["triggers", str(lib), *common, "--triggers", str(tmp_path / "t.json")], "cannot be used with --library"),
            (["triggers", str(lib / "sql-lint"), *common], "at least two skills"),
            (["triggers", str(tmp_path / "nowhere"), *common], "not a folder of skills"),
            (["triggers", "user/no-such-library-repo", *common], "no-such-library-repo"),
            (["triggers", str(lib), *common, "--resume"], "no routing run"),
        ]
        assert_one_line_errors(cases, capsys, monkeypatch)
        assert srv.completion_requests == []
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
