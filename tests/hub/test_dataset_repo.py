"""The tables of a skills-and-results repo: schemas, deterministic parquet, redaction, run folders."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from test_push_support import write_run, write_skill

from upskill_hub._util.hashing import sha256_hex
from upskill_hub.errors import UpskillError
from upskill_hub.hub import dataset_repo as dr
from upskill_hub.rundir import RESULTS_FILE, read_results, result_arrow_schema
from upskill_hub.skill import load_skill

HF_TOKEN_LIKE = "hf_" + "AbCdEfGhIjKlMnOpQrStUv123456"
OPENAI_KEY_LIKE = "sk-" + "proj0123456789abcdefghijkl"


def test_skill_record_lists_every_file_with_sha256(tmp_path):
    skill = load_skill(write_skill(tmp_path)).skill
    rec = dr.skill_record(skill)
    assert rec["name"] == "tiny-skill"
    assert rec["version"] == skill.version and rec["content_hash"] == skill.full_hash
    paths = [f["path"] for f in rec["files"]]
    assert paths == sorted(skill.files)
    for f in rec["files"]:
        assert f["sha256"] == sha256_hex(skill.files[f["path"]])
        assert f["size"] == len(skill.files[f["path"]])


def test_skill_table_round_trips_and_is_deterministic(tmp_path):
    skill = load_skill(write_skill(tmp_path)).skill
    a, b = dr.skill_table_bytes(skill), dr.skill_table_bytes(skill)
    assert a == b
    rows = dr.read_parquet_rows(a)
    assert rows == [dr.skill_record(skill)]
    assert pq.read_schema(__import__("io").BytesIO(a)).equals(dr.skills_arrow_schema(), check_metadata=False)


def test_run_folder_becomes_results_and_runs_tables(tmp_path):
    skill_dir = write_skill(tmp_path / "s")
    run = write_run(tmp_path / "runs", "run-1", skill_dir, models=("m1", "m2"))
    bundle = dr.load_run_dir(run)
    assert bundle.run_id == "run-1" and bundle.skill_name == "tiny-skill"
    data = dr.results_table_bytes(bundle)
    assert data == dr.results_table_bytes(dr.load_run_dir(run))  # deterministic
    table = pq.read_table(__import__("io").BytesIO(data))
    assert table.schema.equals(result_arrow_schema(), check_metadata=False)
    expected = [r.to_dict() for r in read_results(run)]
    assert table.to_pylist() == expected
    runs_rows = dr.read_parquet_rows(dr.runs_table_bytes(bundle))
    assert len(runs_rows) == 1
    row = runs_rows[0]
    assert row["run_id"] == "run-1" and row["models"] == ["m1", "m2"] and row["n_results"] == len(expected)
    assert {(c["model"], c["condition"]) for c in row["conditions"]} == {
        ("m1", "baseline"),
        ("m1", "with_skill"),
        ("m2", "baseline"),
        ("m2", "with_skill"),
    }
    assert json.loads(row["conditions"][0]["pass_at_k"]) == {"1": row["conditions"][0]["pass_rate"]}


def test_torn_last_line_is_skipped(tmp_path):
    run = write_run(tmp_path / "runs", "run-torn", write_skill(tmp_path / "s"))
    good = len(read_results(run))
    with (run / RESULTS_FILE).open("a", encoding="utf-8") as fh:
        fh.write('{"run_id": "run-torn", "timest')
    assert dr.load_run_dir(run).n_results == good


def test_secrets_in_outputs_are_masked(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "my-secret-env-value-123")
    run = write_run(
        tmp_path / "runs",
        "run-secret",
        write_skill(tmp_path / "s"),
        output=f"token {HF_TOKEN_LIKE} key {OPENAI_KEY_LIKE} env my-secret-env-value-123",
    )
    table = pq.read_table(__import__("io").BytesIO(dr.results_table_bytes(dr.load_run_dir(run))))
    text = json.dumps(table.to_pylist())
    for secret in (HF_TOKEN_LIKE, OPENAI_KEY_LIKE, "my-secret-env-value-123"):
        assert secret not in text
    assert "token *** key *** env ***" in text
    # The local run folder keeps what the run recorded: push never rewrites it.
    assert HF_TOKEN_LIKE in (run / RESULTS_FILE).read_text()


def test_skill_with_a_token_is_refused(tmp_path):
    skill = load_skill(
        write_skill(tmp_path, extra={"references/creds.md": f"HF_TOKEN={HF_TOKEN_LIKE}\n".encode()})
    ).skill
    with pytest.raises(UpskillError, match="creds.md looks like it contains an access token") as exc:
        dr.check_skill_secrets(skill)
    assert HF_TOKEN_LIKE not in str(exc.value)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: p / "missing", "does not exist"),
        (lambda p: (p / "empty").mkdir() or p / "empty", "not an eval run folder"),
    ],
)
def test_bad_run_folders(tmp_path, make, message):
    with pytest.raises(UpskillError, match=message):
        dr.load_run_dir(make(tmp_path))


def test_run_with_rows_from_two_runs_is_refused(tmp_path):
    run = write_run(tmp_path / "runs", "run-a", write_skill(tmp_path / "s"))
    lines = (run / RESULTS_FILE).read_text().splitlines()
    lines[0] = lines[0].replace('"run-a"', '"run-b"')
    (run / RESULTS_FILE).write_text("\n".join(lines) + "\n")
    with pytest.raises(UpskillError, match="several runs"):
        dr.load_run_dir(run)


@pytest.mark.parametrize("run_id", ["../escape", "a/b", "", ".hidden", "x" * 200])
def test_unsafe_run_ids_are_refused(run_id):
    with pytest.raises(UpskillError, match="invalid run id"):
        dr.check_run_id(run_id)


def test_secrets_hidden_by_json_escapes_are_masked_too(tmp_path):
    run = write_run(tmp_path / "runs", "run-esc", write_skill(tmp_path / "s"))
    text = (run / RESULTS_FILE).read_text()
    escaped = HF_TOKEN_LIKE.replace("_", "\\u005f")  # valid JSON for the same string
    (run / RESULTS_FILE).write_text(text.replace('"ok 0"', f'"leak {escaped}"', 1))
    rows = dr.load_run_dir(run).load_results().to_pylist()
    assert any(r["output"] == "leak ***" for r in rows)
    assert HF_TOKEN_LIKE not in json.dumps(rows)


def test_bearer_in_any_case_is_masked(tmp_path):
    run = write_run(
        tmp_path / "runs", "run-b", write_skill(tmp_path / "s"), output="Authorization: BEARER abcdefgh12345"
    )
    rows = dr.load_run_dir(run).load_results().to_pylist()
    assert all("abcdefgh12345" not in r["output"] for r in rows)


@pytest.mark.parametrize(
    "name, text, message", [("run.json", "{not json", "run.json"), ("summary.json", "[1]", "summary")]
)
def test_corrupt_run_files_are_one_line_errors(tmp_path, name, text, message):
    run = write_run(tmp_path / "runs", "run-c", write_skill(tmp_path / "s"))
    (run / name).write_text(text)
    with pytest.raises(UpskillError, match=message) as exc:
        dr.load_run_dir(run)
    assert "\n" not in str(exc.value)


def test_token_shaped_file_name_is_refused(tmp_path):
    skill = load_skill(write_skill(tmp_path, extra={f"references/{HF_TOKEN_LIKE}.md": b"# nothing here\n"})).skill
    with pytest.raises(UpskillError, match="file name in skill 'tiny-skill' looks like an access token") as exc:
        dr.check_skill_secrets(skill)
    assert HF_TOKEN_LIKE not in str(exc.value)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_token_in_utf16_text_is_refused(tmp_path, encoding):
    data = f"HF_TOKEN={HF_TOKEN_LIKE}\n".encode(encoding)
    assert HF_TOKEN_LIKE.encode() not in data  # invisible to a UTF-8 scan
    skill = load_skill(write_skill(tmp_path, extra={"references/creds.txt": data})).skill
    with pytest.raises(UpskillError, match="creds.txt looks like it contains"):
        dr.check_skill_secrets(skill)


def test_decoded_texts_leave_plain_binary_alone():
    assert len(dr.decoded_texts(b"plain ascii text")) == 1
    png_like = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    assert not any(dr.find_secret(t) for t in dr.decoded_texts(png_like))
