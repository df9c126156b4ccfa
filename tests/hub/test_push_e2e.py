"""``push`` end to end against the local Hub server, read back with the real clients.

Every check goes through unmodified ``huggingface_hub`` / ``datasets``: what we assert is
what a user of the published repo would see.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from huggingface_hub import HfApi
from test_push_support import folder_bytes, shipped_skill, write_run, write_skill

from upskill_hub.errors import UpskillError
from upskill_hub.hub.push import push
from upskill_hub.rundir import read_results

CLI = [sys.executable, "-c", "from upskill_hub.cli.app import entry; entry()"]


def _load(repo_id, config, tmp_path):
    from datasets import load_dataset

    cache = tmp_path / f"ds-cache-{config}-{len(list(tmp_path.iterdir()))}"
    return load_dataset(repo_id, config, split="train", cache_dir=str(cache)).to_list()


def _commits(repo_id):
    return HfApi().list_repo_commits(repo_id, repo_type="dataset")


def _readme(repo_id):
    from pathlib import Path

    return Path(HfApi().hf_hub_download(repo_id, "README.md", repo_type="dataset")).read_text(
        encoding="utf-8"
    )


def _skill_under_test(tmp_path):
    """The shipped skill when it is there, else a small test skill."""
    return shipped_skill() or write_skill(tmp_path / "skills")


def test_push_skill_and_run_then_load_every_config(hub_server, hub_repo_id, tmp_path):
    skill_dir = _skill_under_test(tmp_path)
    run = write_run(tmp_path / "runs", "run-20261121-a", skill_dir, models=("m1", "m2"))

    result = push([skill_dir], hub_repo_id, results=[run])
    assert result.committed and result.counts()["added"] >= 5
    assert result.url.endswith(f"/datasets/{hub_repo_id}")

    skills = _load(hub_repo_id, "skills", tmp_path)
    assert [s["name"] for s in skills] == [skill_dir.name]
    local = folder_bytes(skill_dir)
    assert {f["path"] for f in skills[0]["files"]} == set(local)

    results = _load(hub_repo_id, "results", tmp_path)
    expected = [r.to_dict() for r in read_results(run)]
    assert sorted(results, key=json.dumps) == sorted(expected, key=json.dumps)

    runs = _load(hub_repo_id, "runs", tmp_path)
    assert [r["run_id"] for r in runs] == ["run-20261121-a"]
    assert runs[0]["models"] == ["m1", "m2"] and len(runs[0]["lifts"]) == 2

    card = HfApi().dataset_info(hub_repo_id).card_data.to_dict()
    assert {"agent-skills", "upskill-hub"} <= set(card["tags"])
    assert [c["config_name"] for c in card["configs"]] == ["skills", "results", "runs"]

    # A second run adds its rows and keeps the first run's.
    run2 = write_run(tmp_path / "runs", "run-20261121-b", skill_dir, timestamp="2026-11-21T12:00:00Z")
    second = push([skill_dir], hub_repo_id, results=[run2])
    assert second.committed
    assert {c.path for c in second.changes if c.status == "added"} == {
        "data/results/run-20261121-b.parquet",
        "data/runs/run-20261121-b.parquet",
    }
    results = _load(hub_repo_id, "results", tmp_path)
    assert len(results) == len(expected) + len(read_results(run2))
    assert {r["run_id"] for r in results} == {"run-20261121-a", "run-20261121-b"}
    assert sorted(r["run_id"] for r in _load(hub_repo_id, "runs", tmp_path)) == [
        "run-20261121-a",
        "run-20261121-b",
    ]
    assert "run `run-20261121-b`" in _readme(hub_repo_id)


def test_same_push_twice_makes_one_commit(hub_server, hub_repo_id, tmp_path):
    skill_dir = write_skill(tmp_path / "skills")
    run = write_run(tmp_path / "runs", "run-1", skill_dir)

    def writes():
        log = hub_server.requests
        return [r for r in log if r.method in ("PUT", "POST") and r.bytes_in and hub_repo_id in r.path]

    hub_server.clear_requests()
    first = push([skill_dir], hub_repo_id, results=[run])
    assert any("/commit/" in r.path for r in writes()) and any("/lfs/" in r.path for r in writes())
    n = len(_commits(hub_repo_id))
    hub_server.clear_requests()
    again = push([skill_dir], hub_repo_id, results=[run])
    assert first.committed and not again.committed
    assert writes() == []  # nothing uploaded, no commit attempted
    assert again.bytes_uploaded == 0
    assert again.counts()["added"] == again.counts()["updated"] == again.counts()["deleted"] == 0
    assert len(_commits(hub_repo_id)) == n


@pytest.mark.slow
def test_two_concurrent_pushes_from_two_processes_both_land(hub_server, hub_repo_id, tmp_path):
    """Two machines publish to the same new repo at once: both create it, both commit."""
    skill_dir = write_skill(tmp_path / "skills")
    runs = [
        write_run(tmp_path / "runs", f"run-p{i}", skill_dir, timestamp=f"2026-11-2{i}T00:00:00Z")
        for i in (1, 2)
    ]
    procs = [
        subprocess.Popen(
            [*CLI, "push", str(skill_dir), "--repo", hub_repo_id, "--results", str(run)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for run in runs
    ]
    outs = [p.communicate(timeout=180) for p in procs]
    for p, (_out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
    results = _load(hub_repo_id, "results", tmp_path)
    assert {r["run_id"] for r in results} == {"run-p1", "run-p2"}
    assert len(results) == sum(len(read_results(r)) for r in runs)
    assert sorted(r["run_id"] for r in _load(hub_repo_id, "runs", tmp_path)) == ["run-p1", "run-p2"]
    assert "run `run-p2`" in _readme(hub_repo_id)  # the card was re-rendered with both runs known


def test_a_push_that_lost_the_race_replans_and_lands(hub_server, hub_repo_id, tmp_path):
    """Deterministic version of the race: another push lands between our plan and our commit."""
    skill_dir = write_skill(tmp_path / "skills")
    push([skill_dir], hub_repo_id)
    ours = write_run(tmp_path / "runs", "run-ours", skill_dir, timestamp="2026-11-21T01:00:00Z")
    theirs = write_run(tmp_path / "runs", "run-theirs", skill_dir, timestamp="2026-11-21T02:00:00Z")
    sneaked = []

    def other_push_lands_first(msg):
        if msg.startswith("Committing") and not sneaked:
            sneaked.append(push([skill_dir], hub_repo_id, results=[theirs]))

    n = len(_commits(hub_repo_id))
    result = push([skill_dir], hub_repo_id, results=[ours], on_status=other_push_lands_first)
    assert sneaked and sneaked[0].committed
    assert result.committed and result.attempts == 2
    assert any(r.status == 412 and "/commit/" in r.path for r in hub_server.requests)
    assert len(_commits(hub_repo_id)) == n + 2
    assert {r["run_id"] for r in _load(hub_repo_id, "results", tmp_path)} == {"run-ours", "run-theirs"}
    card = _readme(hub_repo_id)
    assert "run `run-theirs`" in card  # newest run of the skill, kept by the replanned card


@pytest.mark.parametrize(
    "method, path_regex, status",
    [
        ("POST", r"/commit/", 500),
        ("POST", r"/commit/", 429),
        ("PUT", r"/info/lfs/objects/upload/", 500),  # the LFS object upload
        ("POST", r"info/lfs/objects/batch", 429),
    ],
)
def test_transient_faults_are_retried_and_land_once(
    hub_server, hub_repo_id, tmp_path, method, path_regex, status
):
    skill_dir = write_skill(tmp_path / "skills")
    push([skill_dir], hub_repo_id)
    n = len(_commits(hub_repo_id))
    # Unique content: the server stores LFS objects once, and a known object is not re-sent.
    run = write_run(tmp_path / "runs", "run-fault", skill_dir, output=hub_repo_id)
    rule = hub_server.inject_faults(
        method=method, path_regex=path_regex, status=status, count=2, retry_after=0.1
    )
    result = push([skill_dir], hub_repo_id, results=[run])
    assert result.committed
    assert rule.hits == 2  # the faults were really met, and survived
    assert len(_commits(hub_repo_id)) == n + 1
    results = _load(hub_repo_id, "results", tmp_path)
    assert len(results) == len(read_results(run))


def test_push_interrupted_before_commit_changes_nothing(hub_server, hub_repo_id, tmp_path):
    skill_dir = write_skill(tmp_path / "skills")
    push([skill_dir], hub_repo_id)
    api = HfApi()
    before_commits = len(_commits(hub_repo_id))
    before_files = sorted(api.list_repo_files(hub_repo_id, repo_type="dataset"))
    run = write_run(tmp_path / "runs", "run-cut", skill_dir)
    local_before = folder_bytes(run)

    # The Hub keeps failing: the push gives up with one line, nothing lands.
    rule = hub_server.inject_faults(method="POST", path_regex=r"/commit/", status=500, count=2)
    with pytest.raises(UpskillError, match="cannot push"):
        push([skill_dir], hub_repo_id, results=[run], max_attempts=2)
    assert rule.hits == 2

    # The process is interrupted right before committing.
    def interrupt(msg):
        if msg.startswith("Committing"):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        push([skill_dir], hub_repo_id, results=[run], on_status=interrupt)

    assert len(_commits(hub_repo_id)) == before_commits
    assert sorted(api.list_repo_files(hub_repo_id, repo_type="dataset")) == before_files
    assert folder_bytes(run) == local_before
    # The intact local results push fine afterwards.
    assert push([skill_dir], hub_repo_id, results=[run]).committed
    assert len(_load(hub_repo_id, "results", tmp_path)) == len(read_results(run))


def test_private_push_and_branch(hub_server, hub_repo_id, tmp_path):
    skill_dir = write_skill(tmp_path / "skills")
    result = push([skill_dir], hub_repo_id, private=True, revision="experiments", message="try a branch")
    assert result.committed
    api = HfApi()
    assert api.dataset_info(hub_repo_id).private
    assert "skills/tiny-skill/SKILL.md" in api.list_repo_files(
        hub_repo_id, repo_type="dataset", revision="experiments"
    )
    assert "skills/tiny-skill/SKILL.md" not in api.list_repo_files(hub_repo_id, repo_type="dataset")
    assert (
        api.list_repo_commits(hub_repo_id, repo_type="dataset", revision="experiments")[0].title
        == "try a branch"
    )


def test_create_pr_opens_a_pull_request(hub_server, hub_repo_id, tmp_path):
    skill_dir = write_skill(tmp_path / "skills")
    push([skill_dir], hub_repo_id)
    (skill_dir / "SKILL.md").write_text((skill_dir / "SKILL.md").read_text() + "One more line.\n")
    result = push([skill_dir], hub_repo_id, create_pr=True)
    assert result.pr_url


# --------------------------------------------------------------------------- bad input
def _run_cli(args, env=None, cwd=None):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120)


@pytest.mark.slow
def test_cli_push_prints_url_and_changes_never_the_token(hub_server, hub_repo_id, tmp_path):
    token = os.environ.get("HF_TOKEN") or ""
    skill_dir = write_skill(tmp_path / "skills")
    secret = "hf_" + "SuperSecretTokenValue1234567"
    run = write_run(tmp_path / "runs", "run-cli", skill_dir, output=f"the key is {secret}")
    proc = _run_cli(["push", str(skill_dir), "--repo", hub_repo_id, "--results", str(run)])
    assert proc.returncode == 0, proc.stderr
    assert f"/datasets/{hub_repo_id}" in proc.stdout
    assert "added" in proc.stdout
    again = _run_cli(["push", str(skill_dir), "--repo", hub_repo_id, "--results", str(run)])
    assert again.returncode == 0 and "Nothing changed" in again.stdout and "0 bytes uploaded" in again.stdout
    for text in (proc.stdout, proc.stderr, again.stdout, again.stderr):
        assert secret not in text
        if token:
            assert token not in text
    _assert_repo_has_no_secret(hub_repo_id, [secret] + ([token] if len(token) >= 8 else []), tmp_path)


def _assert_repo_has_no_secret(repo_id, secrets, tmp_path):
    """Download every file of the repo; decode parquet to text; no secret may appear."""
    import pyarrow.parquet as pq
    from huggingface_hub import snapshot_download

    local = snapshot_download(repo_id, repo_type="dataset", cache_dir=str(tmp_path / "snap"))
    from pathlib import Path

    for path in Path(local).rglob("*"):
        if not path.is_file():
            continue
        data = path.read_bytes()
        texts = [data.decode("utf-8", errors="replace")]
        if path.suffix == ".parquet":
            texts.append(json.dumps(pq.read_table(path).to_pylist(), default=str))
        for text in texts:
            for s in secrets:
                assert s not in text, f"{s[:5]}... found in {path.name}"


@pytest.mark.slow
def test_push_without_token_says_how_to_log_in(hub_server, hub_repo_id, tmp_path):
    skill_dir = write_skill(tmp_path / "skills")
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")}
    env["HF_HOME"] = str(tmp_path / "empty-hf-home")  # no stored `hf auth login` token either
    proc = _run_cli(["push", str(skill_dir), "--repo", hub_repo_id], env=env)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "hf auth login" in lines[0] and "HF_TOKEN" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "case, message",
    [
        ("invalid-skill", "description"),
        ("bad-repo-id", "invalid repo id"),
        ("missing-run", "does not exist"),
    ],
)
def test_bad_input_commits_nothing(hub_server, hub_repo_id, tmp_path, case, message):
    skill_dir = write_skill(tmp_path / "skills")
    push([skill_dir], hub_repo_id)
    n = len(_commits(hub_repo_id))
    repo, skills, runs = hub_repo_id, [skill_dir], []
    if case == "invalid-skill":
        bad = tmp_path / "bad" / "broken-skill"
        bad.mkdir(parents=True)
        (bad / "SKILL.md").write_text("---\nname: broken-skill\n---\nno description\n")
        skills = [skill_dir, bad]
    elif case == "bad-repo-id":
        repo = "not a/repo id"
    else:
        runs = [tmp_path / "no-such-run"]
    with pytest.raises(UpskillError, match=message) as exc:
        push(skills, repo, results=runs)
    assert "\n" not in str(exc.value)
    assert len(_commits(hub_repo_id)) == n


@pytest.mark.slow
def test_cli_bad_input_is_one_line(hub_server, hub_repo_id, tmp_path):
    proc = _run_cli(["push", str(tmp_path / "nope"), "--repo", hub_repo_id])
    assert proc.returncode == 1
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("Error:")
    assert not HfApi().repo_exists(hub_repo_id, repo_type="dataset")


@pytest.mark.slow
def test_push_a_run_made_by_the_real_eval_runner(hub_server, hub_repo_id, tmp_path):
    """The shipped skill, evaluated by the eval engine through the OpenAI SDK, then pushed."""
    from upskill_hub.lift.api import run_eval
    from upskill_hub.lift.prepare import EvalOptions
    from upskill_hub.testing.llm_server import running_llm_server

    leaked = "hf_" + "LeakedByTheModel0123456789"

    def script(system, messages, params):
        return f"Here you go (token {leaked})."

    skill_dir = _skill_under_test(tmp_path)
    with running_llm_server(script) as srv:
        ran = run_eval(
            skill_dir,
            [f"openai-compatible:scripted-model@{srv.openai_base_url}"],
            EvalOptions(
                output_dir=tmp_path / "runs",
                plots=False,
                use_cache=False,
            ),
        )
    before = folder_bytes(ran.run_dir)
    result = push([skill_dir], hub_repo_id, results=[ran.run_dir])
    assert result.committed
    assert folder_bytes(ran.run_dir) == before  # push only reads the run folder
    results = _load(hub_repo_id, "results", tmp_path)
    assert len(results) == len(ran.rows) > 0
    assert {r["run_id"] for r in results} == {ran.summary.run_id}
    assert all(leaked not in r["output"] and "***" in r["output"] for r in results)
    runs = _load(hub_repo_id, "runs", tmp_path)
    assert runs[0]["run_id"] == ran.summary.run_id and runs[0]["n_results"] == len(ran.rows)
    assert "scripted-model" in _readme(hub_repo_id)
    _assert_repo_has_no_secret(hub_repo_id, [leaked], tmp_path)


def test_skills_pushed_separately_all_stay_listed(hub_server, hub_repo_id, tmp_path):
    a = write_skill(tmp_path / "skills", "skill-a")
    b = write_skill(tmp_path / "skills", "skill-b")
    push([a], hub_repo_id, results=[write_run(tmp_path / "runs", "run-a", a)])
    push([b], hub_repo_id)
    assert sorted(s["name"] for s in _load(hub_repo_id, "skills", tmp_path)) == ["skill-a", "skill-b"]
    card = _readme(hub_repo_id)
    assert "### skill-a" in card and "### skill-b" in card
    assert "run `run-a`" in card  # skill-a's results survive a push that did not include them
    assert card.count("No eval results yet.") == 1


@pytest.mark.slow
def test_push_process_killed_mid_upload_changes_nothing(hub_server, hub_repo_id, tmp_path):
    """SIGKILL while the LFS upload is failing and being retried: no commit, run intact, re-push lands."""
    import time

    skill_dir = write_skill(tmp_path / "skills")
    push([skill_dir], hub_repo_id)
    api = HfApi()
    before = (len(_commits(hub_repo_id)), sorted(api.list_repo_files(hub_repo_id, repo_type="dataset")))
    run = write_run(tmp_path / "runs", "run-killed", skill_dir, output=f"unique {hub_repo_id}")
    local_before = folder_bytes(run)
    rule = hub_server.inject_faults(
        method="PUT", path_regex=r"/info/lfs/objects/upload/", status=503, count=1000
    )
    proc = subprocess.Popen([*CLI, "push", str(skill_dir), "--repo", hub_repo_id, "--results", str(run)])
    try:
        deadline = time.monotonic() + 60
        while rule.hits == 0 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert rule.hits > 0, "the push never reached its upload"
    finally:
        proc.kill()
        proc.wait(10)
    hub_server.clear_faults()
    assert (
        len(_commits(hub_repo_id)),
        sorted(api.list_repo_files(hub_repo_id, repo_type="dataset")),
    ) == before
    assert folder_bytes(run) == local_before
    assert push([skill_dir], hub_repo_id, results=[run]).committed
    assert {r["run_id"] for r in _load(hub_repo_id, "results", tmp_path)} == {"run-killed"}


@pytest.mark.slow
def test_unreachable_hub_is_one_line(tmp_path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, HF_ENDPOINT=f"http://127.0.0.1:{port}")
    skill_dir = write_skill(tmp_path / "skills")
    for args in (["push", str(skill_dir), "--repo", "user/x"], ["pull", "user/x", "-o", str(tmp_path / "o")]):
        proc = _run_cli(args, env=env)
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.startswith("Error:") and "cannot reach the Hub" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "o").exists()
