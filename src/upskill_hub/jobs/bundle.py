"""A sharded run's bundle: what every shard Job reads to rebuild the launcher's plan.

The launcher uploads it once, in one commit, under ``jobs/<run_id>/`` of the results repo
(outside ``data/``, so no ``load_dataset`` config reads it)::

    jobs/<run_id>/plan.json        the run plan, shard count and rule, model specs, options
    jobs/<run_id>/cases.json       the cases, in the skill_meta.json shape
    jobs/<run_id>/skill/<name>/... the skill's files, verbatim
    jobs/<run_id>/<wheel>.whl      the launcher's own upskill-hub, which every shard installs
    jobs/<run_id>/shards.json      written when the run is recorded: each shard's Jobs

A Job then needs nothing from the launcher's machine but the repo: it installs the bundled
wheel (so launcher and shards run the same code, published or not), downloads the
bundle, rebuilds the plan with :func:`rebuild` and runs its calls. The plan's fingerprint
travels with it, so a Job whose rebuilt plan differs (another upskill-hub version, a
changed base prompt) refuses to run rather than answer a different experiment. A bundle
never holds a secret: keys travel as Job secrets; anything token-shaped is refused.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from upskill_hub._util import safejson
from upskill_hub._util.redact import secret_values
from upskill_hub.cases import Case
from upskill_hub.errors import UpskillError
from upskill_hub.hub import dataset_repo as dr
from upskill_hub.jobs.assign import ASSIGNMENT, ShardTarget
from upskill_hub.lift.prepare import EvalOptions
from upskill_hub.models.spec import ModelSpec
from upskill_hub.rundir.schema import RunPlan
from upskill_hub.skill import Skill, require_skill

FORMAT = 1
PLAN_FILE = "plan.json"
CASES_FILE = "cases.json"
SKILL_DIR = "skill"
SHARDS_FILE = "shards.json"


class BundledWheel(NamedTuple):
    """The upskill-hub wheel in a run's bundle: what every shard installs and must report back."""

    filename: str
    sha256: str
    version: str

    def repo_path(self, run_id: str) -> str:
        return f"{dr.jobs_dir(run_id)}/{self.filename}"


@dataclass
class JobBundle:
    """The parsed ``plan.json`` of a sharded run."""

    run: RunPlan
    shards: int
    models: list[ModelSpec]
    judge: str | None
    options: dict[str, Any]
    skill_name: str
    wheel: BundledWheel | None = None  # None: launched with --image, or before bundles had one

    def shard(self, index: int) -> ShardTarget:
        """Shard ``index``'s part of this run."""
        return ShardTarget(self.run.run_id, self.run.created, self.run.fingerprint, index, self.shards)


def spec_record(spec: ModelSpec) -> dict[str, Any]:
    return {"provider": spec.provider, "model": spec.model, "base_url": spec.base_url, "raw": spec.raw}


def bundle_files(
    run: RunPlan,
    shards: int,
    models: list[ModelSpec],
    skill: Skill,
    cases: list[Case],
    options: EvalOptions,
    wheel: tuple[BundledWheel, bytes] | None = None,
) -> dict[str, bytes]:
    """Repo path -> bytes of the bundle (refused when anything in it looks like a secret).

    ``wheel``: the launcher's upskill-hub wheel and its bytes, for Jobs without ``--image``.
    """
    if options.judge is not None and not isinstance(options.judge, str):
        raise UpskillError("--jobs needs the judge as a model spec, not a client object")
    plan = {
        "format": FORMAT,
        "run": run.to_dict(),
        "shards": shards,
        "assignment": ASSIGNMENT,
        "skill": skill.name,
        "models": [spec_record(m) for m in models],
        "judge": options.judge,
        "options": options.to_dict(),
    }
    if wheel is not None:
        plan["wheel"] = wheel[0]._asdict()
    plan_text = json.dumps(plan, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    cases_text = json.dumps(
        {"schema_version": 1, "cases": [c.to_dict() for c in cases]}, indent=2, ensure_ascii=False
    )
    for what, text in (
        ("the run plan (model specs, endpoints, options)", plan_text),
        ("the test cases", cases_text),
    ):
        if dr.find_secret(text):
            raise UpskillError(
                f"{what} hold something that looks like an access token or API key; Jobs read them from the "
                "results repo, so remove it (keys travel as Job secrets)"
            )
    dr.check_skill_secrets(skill)
    root = dr.jobs_dir(run.run_id)
    files = {f"{root}/{PLAN_FILE}": plan_text.encode(), f"{root}/{CASES_FILE}": (cases_text + "\n").encode()}
    for rel, data in sorted(skill.files.items()):
        files[f"{root}/{SKILL_DIR}/{skill.name}/{rel}"] = data
    if wheel is not None:
        _check_wheel_secrets(wheel[1])
        files[wheel[0].repo_path(run.run_id)] = wheel[1]
    return files


def _documented_values(archive: zipfile.ZipFile) -> list[str]:
    """Secret variables' current values that the package's own README shows as examples.

    The README (the wheel's ``METADATA`` description) tells offline users to set e.g.
    ``OPENAI_API_KEY=sk-local``; a user who does so has not leaked a key into the wheel.
    """
    meta = next((n for n in archive.namelist() if n.endswith(".dist-info/METADATA")), None)
    readme = archive.read(meta).decode("utf-8", "replace") if meta else ""
    return [v for v in secret_values() if v in readme]


def _check_wheel_secrets(data: bytes) -> None:
    """The wheel is the launcher's own code, but it lands in the repo too: same rule as the rest.

    Token-shaped text and the current keys' values are refused, except a value that the
    project's own documentation shows as an example (then it is public, not a secret).
    """
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            examples = _documented_values(archive)
            for name in archive.namelist():
                text = archive.read(name).decode("utf-8", "replace")
                for value in examples:
                    text = text.replace(value, "")
                if dr.find_secret(text):
                    raise UpskillError(
                        f"upskill-hub's own wheel holds something that looks like an access token or API key "
                        f"({name}); Jobs would publish it in the results repo. Install upskill-hub from a "
                        "clean release, or launch with --image"
                    )
    except zipfile.BadZipFile:
        raise UpskillError("upskill-hub's own wheel is not a readable zip archive; delete the wheel cache") from None


def read_bundle(folder: Path) -> JobBundle:
    """The bundle's ``plan.json`` under ``folder`` (a downloaded ``jobs/<run_id>/``); one-line errors."""
    path = folder / PLAN_FILE
    try:
        data = safejson.loads(path.read_text(encoding="utf-8"))  # read from the repo: bounded nesting
    except (OSError, ValueError) as exc:
        raise UpskillError(
            f"the run's Job bundle has no readable {PLAN_FILE} ({type(exc).__name__})"
        ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise UpskillError(
            f"the run's Job bundle is not in a format this upskill-hub reads (format {FORMAT})"
        )
    if data.get("assignment") != ASSIGNMENT:
        raise UpskillError(
            f"the run's shards were assigned by {data.get('assignment')!r}; this upskill-hub uses {ASSIGNMENT!r}"
        )
    try:
        return JobBundle(
            run=RunPlan.from_dict(data["run"]),
            shards=int(data["shards"]),
            models=[
                ModelSpec(m["provider"], m["model"], m.get("base_url"), m.get("raw") or "")
                for m in data["models"]
            ],
            judge=data.get("judge"),
            options=dict(data["options"]),
            skill_name=str(data["skill"]),
            wheel=_read_wheel(data.get("wheel")),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise UpskillError(
            f"the run's Job bundle has a damaged {PLAN_FILE} ({type(exc).__name__}: {exc})"
        ) from None


def _read_wheel(record: Any) -> BundledWheel | None:
    if record is None:
        return None
    wheel = BundledWheel(str(record["filename"]), str(record["sha256"]), str(record["version"]))
    if "/" in wheel.filename or not wheel.filename.endswith(".whl"):
        raise ValueError(f"wheel file name {wheel.filename!r}")
    return wheel


def rebuild(folder: Path, bundle: JobBundle, **overrides: Any) -> tuple[Skill, list[ModelSpec], EvalOptions]:
    """The skill, model specs and :class:`EvalOptions` that plan the launcher's run again.

    ``overrides`` set further options (output folder, hooks, the shard to run).
    """
    skill = require_skill(folder / SKILL_DIR / bundle.skill_name)
    options = EvalOptions.from_dict(
        bundle.options, cases=folder / CASES_FILE, judge=bundle.judge, plots=False, **overrides
    )
    return skill, list(bundle.models), options


def download_bundle(api: Any, repo_id: str, run_id: str, dest: Path, revision: str | None = None) -> Path:
    """Fetch ``jobs/<run_id>/`` of ``repo_id`` into ``dest``; return the bundle folder."""
    root = dr.jobs_dir(run_id)
    if api.file_exists(repo_id, f"{root}/{PLAN_FILE}", repo_type="dataset", revision=revision):
        api.snapshot_download(
            repo_id, repo_type="dataset", revision=revision, allow_patterns=[f"{root}/*"],
            ignore_patterns=["*.whl"],  # the Job installed it already; resume does not need it
            local_dir=str(dest),
        )  # fmt: skip
    folder = dest / root
    if not (folder / PLAN_FILE).is_file():
        raise UpskillError(
            f"run {run_id} has no Job bundle in {repo_id} ({root}/{PLAN_FILE}); was it launched with --jobs?"
        )
    return folder
