"""``--agent`` values, and the agents they name, checked before any call.

``claude-code``, ``codex``, ``gemini``, ``opencode`` (optionally ``:MODEL``, e.g.
``claude-code:sonnet``, ``opencode:anthropic/claude-sonnet-4-5``) or ``cmd:'TEMPLATE'``.

:func:`prepare_agents` finds each executable on PATH (a missing one is a one-line error
that says how to install it), asks it for its version (part of every cache key, so a CLI
update never serves an old answer), resolves ``--agent-env`` and, when the user's real HOME
is to be used, refuses while a user-level skill of the same name would shadow the candidate.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from upskill_hub._util import limits
from upskill_hub._util.redact import secret_name
from upskill_hub.errors import OptionError, UpskillError
from upskill_hub.lift.harness import claude_code, codex, gemini, opencode
from upskill_hub.lift.harness.base import Adapter, CallSetup
from upskill_hub.lift.harness.custom import custom_adapter
from upskill_hub.lift.harness.process import run_probe
from upskill_hub.lift.harness.tree import remove_tree
from upskill_hub.lift.harness.workspace import CONTROLLED_ENV
from upskill_hub.models.base import Completion, GenerationParams, Message, ModelCallError
from upskill_hub.skill import Skill

ADAPTERS: dict[str, Adapter] = {
    a.name: a for a in (claude_code.ADAPTER, codex.ADAPTER, gemini.ADAPTER, opencode.ADAPTER)
}
#: Other names people type for the same CLIs.
ALIASES = {"claude": "claude-code", "gemini-cli": "gemini", "codex-cli": "codex"}
#: Seconds an agent call may run before its process group is killed.
DEFAULT_TIMEOUT_S = 600.0
#: Concurrent calls per agent unless --concurrency says otherwise (agents are heavy processes).
DEFAULT_CONCURRENCY = 2
VERSION_TIMEOUT_S = 30.0
#: ``--version`` output read at most (a version is one short line).
VERSION_MAX_BYTES = 64 * 1024
#: The longest ``--agent-timeout`` accepted (a day; larger values overflow timers or mean "never").
MAX_TIMEOUT_S = limits.env_number("UPSKILL_AGENT_MAX_TIMEOUT_S", 86_400.0)


@dataclass
class HarnessOptions:
    """How agent calls run (shared by every ``--agent``)."""

    timeout: float = DEFAULT_TIMEOUT_S
    #: ``NAME`` (copied from this environment) or ``NAME=VALUE``, passed to the CLI besides its key.
    agent_env: list[str] = field(default_factory=list)
    keep_workspaces: bool = False
    #: Run with the real HOME (for a subscription login) instead of one inside the workspace.
    real_home: bool = False
    #: Where workspaces are made (default: the system temp folder).
    workspace_root: Path | None = None
    #: ``command`` checks may run (the Space sets this off: visitors' commands never run there).
    #: The CLI sets it only for the user's own ``--tests`` file or with ``--allow-commands``,
    #: and refuses a skill that brings commands without that consent before any call.
    allow_commands: bool = True


@dataclass
class AgentSpec:
    """One parsed ``--agent`` value."""

    label: str  # the row's model: "claude-code", "claude-code:sonnet", "cmd:my-agent"
    adapter: Adapter
    model: str | None = None


def parse_agent_spec(text: str) -> AgentSpec:
    """Parse one ``--agent`` value; an unknown agent is a one-line error listing the known ones."""
    raw = text.strip()
    if raw.startswith("cmd:"):
        adapter = custom_adapter(raw[4:])
        return AgentSpec(label=f"cmd:{Path(adapter.binary).name}", adapter=adapter)
    name, _, model = raw.partition(":")
    name = ALIASES.get(name, name)
    if name not in ADAPTERS:
        known = ", ".join([*ADAPTERS, "cmd:'TEMPLATE'"])
        raise UpskillError(f"unknown agent {text!r} (known: {known})")
    model = model.strip() or None
    return AgentSpec(label=name if model is None else f"{name}:{model}", adapter=ADAPTERS[name], model=model)


class AgentClient:
    """An agent CLI as one subject of an eval: its rows carry ``model = label``, ``mode = harness``.

    It sits in the plan's client list so concurrency, resume keys, statistics and push treat
    it like a model; its calls go through :func:`upskill_hub.lift.harness.run.run_agent_call`,
    never through :meth:`complete`.
    """

    def __init__(
        self,
        spec: AgentSpec,
        exe: str,
        version: str,
        skill: Skill,
        options: HarnessOptions,
        env: dict[str, str],
    ) -> None:
        self.spec = spec
        self.adapter = spec.adapter
        self.exe = exe
        self.version = version
        self.skill = skill
        self.options = options
        #: Variables passed to the CLI besides the basics (its key, --agent-env).
        self.passed_env = env
        self.provider = f"agent:{spec.adapter.name}"
        self.model = spec.label
        self.endpoint = f"cli:{spec.adapter.binary}"
        self.default_concurrency = DEFAULT_CONCURRENCY
        self._config_digest: str | None = None

    @property
    def cli_model(self) -> str | None:
        return self.spec.model

    @property
    def secrets(self) -> list[str]:
        """Values of the passed variables whose names look secret (:func:`~upskill_hub._util.redact.secret_name`),
        masked wherever the call's text is shown; other values (a base URL, a settings path)
        stay readable, so a CLI's own diagnostic keeps its cause."""
        return [v for k, v in self.passed_env.items() if v and secret_name(k)]

    def env_fingerprint(self) -> dict[str, str]:
        """Each passed variable's name with a digest of its value: what the cache key holds, so
        another base URL, key or config path makes new calls, and no value is ever stored."""
        return {
            k: hashlib.sha256(f"{k}\0{v}".encode("utf-8", "replace")).hexdigest()[:16]
            for k, v in sorted(self.passed_env.items())
        }

    def config_fingerprint(self) -> str:
        """A digest of what the adapter prepares for a call (config files, variables), with the
        throwaway paths taken out: part of the cache key, so a config change makes new calls."""
        if self._config_digest is None:
            self._config_digest = prepared_config_digest(self.adapter, self.passed_env, self.cli_model,
                                                         self.options.real_home)  # fmt: skip
        return self._config_digest

    async def complete(self, system: str, messages: list[Message], params: GenerationParams) -> Completion:
        raise ModelCallError(
            f"{self.model} is an agent CLI: it runs a whole case in a workspace, not one completion"
        )

    async def aclose(self) -> None:
        return None


@contextlib.contextmanager
def prepared_call(adapter: Adapter, passed: dict[str, str], model: str | None,
                  real_home: bool = False) -> Iterator[tuple[Path, dict[str, str]]]:  # fmt: skip
    """What ``adapter.prepare`` writes and sets for a call, in a scratch folder removed afterwards:
    ``(folder, environment)``, the folder holding ``home/`` and ``project/``."""
    root = Path(tempfile.mkdtemp(prefix="upskill-agent-config-"))
    try:
        (root / "home").mkdir()
        (root / "project").mkdir()
        env = dict(passed)
        adapter.prepare(CallSetup(home=root / "home", project=root / "project", env=env, model=model,
                                  real_home=real_home))  # fmt: skip
        yield root, env
    finally:
        remove_tree(root)


def prepared_config_digest(adapter: Adapter, passed: dict[str, str], model: str | None, real_home: bool) -> str:
    """What ``adapter.prepare`` writes and sets for a call, hashed (folder paths replaced by
    placeholders, so two calls with the same settings agree)."""
    with prepared_call(adapter, passed, model, real_home) as (root, env):
        digest = hashlib.sha256()
        for k in sorted(env):
            if passed.get(k) != env[k]:
                digest.update(f"env {k}={env[k]}\0".replace(str(root), "<root>").encode("utf-8", "replace"))
        for f in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
            data = f.read_bytes()[: 1 << 20].replace(str(root).encode(), b"<root>")
            digest.update(f"file {f.relative_to(root).as_posix()}\0".encode() + data + b"\0")
        return digest.hexdigest()[:16]


def find_executable(adapter: Adapter) -> str:
    """The CLI's path on PATH, or a one-line error saying how to install it."""
    exe = shutil.which(adapter.binary)
    if exe is None:
        raise UpskillError(
            f"{adapter.name}: `{adapter.binary}` is not on PATH; install it with `{adapter.install_hint}`"
            if adapter.name != "cmd"
            else f"--agent cmd: `{adapter.binary}` is not on PATH (or not executable)"
        )
    return exe


def cli_version(adapter: Adapter, exe: str) -> str:
    """``CLI --version``'s first line, run in a scratch HOME (it is part of the cache key).

    The probe runs in its own session with its output capped at :data:`VERSION_MAX_BYTES`
    and a :data:`VERSION_TIMEOUT_S` limit; whatever it started is killed when it ends (a
    ``--version`` that prints forever, or whose helper never exits, cannot hang the eval).
    """
    home = tempfile.mkdtemp(prefix="upskill-agent-version-")
    try:
        env = {k: os.environ[k] for k in ("PATH", "LANG") if k in os.environ}
        env.update(HOME=home, TMPDIR=home, NO_COLOR="1", TERM="dumb")
        try:
            done = run_probe([exe, "--version"], cwd=Path(home), env=env, timeout=VERSION_TIMEOUT_S,
                             max_bytes=VERSION_MAX_BYTES)  # fmt: skip
        except OSError as exc:
            if adapter.name == "cmd":
                return "unknown"
            raise UpskillError(f"{adapter.name}: `{adapter.binary} --version` failed: {exc}") from None
    finally:
        remove_tree(Path(home))  # whatever the probe left there (any depth, read-only folders)
    lines = done.stdout.decode("utf-8", "replace").strip().splitlines()
    problem = None
    if done.timed_out:
        problem = f"did not finish within {VERSION_TIMEOUT_S:g} s (killed)"
    elif done.truncated:
        problem = f"printed more than {VERSION_MAX_BYTES // 1024} KB (stopped and killed)"
    elif done.returncode != 0 or not lines:
        problem = f"exited with code {done.returncode}"
    if problem is not None:
        if adapter.name == "cmd":
            return "unknown"
        raise UpskillError(f"{adapter.name}: `{adapter.binary} --version` {problem}")
    return lines[0].strip()[:100]


def agent_env(adapter: Adapter, extra: list[str]) -> dict[str, str]:
    """The CLI's provider keys that are set here, plus ``--agent-env`` (a name not set is an error).

    Variables the workspace controls (HOME, TMPDIR, XDG folders, ...) are refused with the
    reason: passing one would silently undo the isolation every row relies on.
    """
    env = {k: os.environ[k] for k in adapter.env_keys if os.environ.get(k)}
    for item in extra:
        name, eq, value = item.partition("=")
        if not name or not name.replace("_", "a").isalnum() or name[0].isdigit():
            raise UpskillError(f"--agent-env {item!r}: expected NAME or NAME=VALUE")
        if name in CONTROLLED_ENV:
            hint = " (use --agent-real-home for your own login)" if name in ("HOME", "USERPROFILE") else ""
            raise UpskillError(
                f"--agent-env {name}: refused; the harness sets {name} itself to isolate each call in its "
                f"workspace{hint}"
            )
        if eq:
            env[name] = value
        elif name in os.environ:
            env[name] = os.environ[name]
        else:
            raise UpskillError(f"--agent-env {name}: not set in this environment")
    return env


def check_timeout(timeout: float) -> None:
    """``--agent-timeout``: a finite number of seconds, above zero, at most :data:`MAX_TIMEOUT_S`."""
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not math.isfinite(timeout):
        raise OptionError("agent_timeout", timeout, f"must be a finite number of seconds, got {timeout!r}")
    if timeout <= 0:
        raise OptionError("agent_timeout", timeout, f"must be positive, got {timeout:g}")
    if timeout > MAX_TIMEOUT_S:
        raise OptionError(
            "agent_timeout", timeout,
            f"must be at most {MAX_TIMEOUT_S:g} s (UPSKILL_AGENT_MAX_TIMEOUT_S), got {timeout:g}",
        )  # fmt: skip


def shadowing_skills(adapter: Adapter, skill_name: str, home: Path | None = None) -> list[Path]:
    """User-level skills named like the candidate, which the CLI would load instead of it."""
    base = home if home is not None else Path.home()
    found = []
    for d in adapter.user_skill_dirs:
        p = base / d.removeprefix("~/") / skill_name
        if p.exists() or p.is_symlink():
            found.append(p)
    return found


def prepare_agents(specs: list[str], skill: Skill, options: HarnessOptions) -> list[AgentClient]:
    """Check every ``--agent`` before any call; one-line errors for anything wrong."""
    check_timeout(options.timeout)
    parsed = [parse_agent_spec(s) for s in specs]
    seen: set[str] = set()
    for p in parsed:
        if p.label in seen:
            raise UpskillError(f"agent {p.label!r} given twice")
        seen.add(p.label)
    clients = []
    for p in parsed:
        exe = find_executable(p.adapter)
        if options.real_home:
            shadows = shadowing_skills(p.adapter, skill.name)
            if shadows:
                raise UpskillError(
                    f"{p.label}: the user-level skill {shadows[0]} has the name of the skill under test and would "
                    "shadow it with --agent-real-home; move it aside, or run without --agent-real-home"
                )
        env = agent_env(p.adapter, options.agent_env)
        clients.append(AgentClient(p, exe, cli_version(p.adapter, exe), skill, options, env))
    return clients
