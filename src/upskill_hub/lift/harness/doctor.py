"""``upskill-hub doctor --agent NAME``: would an ``eval --agent NAME`` run here, and if not, why?

An agent eval that cannot work usually fails on every row with the same cause, after
minutes: the CLI is missing, it has no key, its endpoint is down, it refuses to run as
root or in an untrusted folder, or it waits on a login until the timeout. :func:`check_agent`
finds these up front, one line each with the fix, in the order they would bite, and ends
with one real call: a tiny baseline case through :func:`~upskill_hub.lift.harness.run.run_agent_call`,
the same code path an eval row takes, in a temporary run folder removed afterwards.

Everything is bounded in time (``--version`` by its own limit, the endpoint by
:data:`CONNECT_TIMEOUT_S`, the call by ``options.timeout``) and every line is masked with
the passed secrets' values (:func:`~upskill_hub._util.redact.redact`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from upskill_hub._util.redact import redact, secret_name
from upskill_hub.cases.schema import Case
from upskill_hub.errors import UpskillError
from upskill_hub.lift.harness.base import Adapter
from upskill_hub.lift.harness.diagnose import ADAPTER_PROVIDER, PROVIDERS, base_variable, cause
from upskill_hub.lift.harness.run import ARTIFACTS_DIR, run_agent_call
from upskill_hub.lift.harness.spec import (
    AgentClient,
    HarnessOptions,
    agent_env,
    check_timeout,
    cli_version,
    find_executable,
    parse_agent_spec,
    prepared_call,
)
from upskill_hub.lift.harness.tree import remove_tree
from upskill_hub.models.factory import endpoint_problem
from upskill_hub.skill.model import Skill

#: Seconds the endpoint's TCP connect (name lookup included) may take.
CONNECT_TIMEOUT_S = 5.0
PROBE_PROMPT = "Reply with the single word OK."

@dataclass(frozen=True)
class AgentCheck:
    """One finding: ``ok`` is ``None`` when the check was not made (an earlier one failed)."""

    name: str
    ok: bool | None
    detail: str


@dataclass
class AgentReport:
    """What ``doctor --agent`` found; ``ok`` is the verdict (every check made passed)."""

    agent: str
    version: str | None = None
    checks: list[AgentCheck] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok is not False for c in self.checks)

    @property
    def first_failure(self) -> AgentCheck | None:
        return next((c for c in self.checks if c.ok is False), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "version": self.version,
            "ok": self.ok,
            "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in self.checks],
        }


def check_agent(spec: str, options: HarnessOptions) -> AgentReport:
    """Run the checks for one ``--agent`` value; never raises for an agent that would fail.

    A malformed ``--agent``, ``--agent-env`` or ``--agent-timeout`` is a usage error
    (:class:`~upskill_hub.errors.UpskillError`), as in ``eval``.
    """
    check_timeout(options.timeout)
    parsed = parse_agent_spec(spec)
    adapter = parsed.adapter
    passed = agent_env(adapter, options.agent_env)
    secrets = [v for k, v in passed.items() if v and secret_name(k)]
    report = AgentReport(agent=parsed.label)

    def add(name: str, ok: bool | None, detail: str) -> None:
        report.checks.append(AgentCheck(name, ok, redact(" ".join(detail.split()), extra=secrets)))

    exe: str | None = None
    try:
        exe = find_executable(adapter)
        add("executable", True, exe)
    except UpskillError as exc:
        add("executable", False, str(exc))
    if exe is not None:
        try:
            report.version = cli_version(adapter, exe)
            add("version", True, report.version)
        except UpskillError as exc:
            add("version", False, str(exc))
    else:
        add("version", None, "not checked (no executable)")
    add("credentials", *_credentials(adapter, passed, options.real_home))
    add("endpoint", *_endpoint(adapter, parsed.model, passed))
    add("root", *_root(adapter, passed, parsed.model))
    if exe is None or report.version is None:
        add("call", None, "not made: fix the checks above first")
        return report
    if _checks_failed(report, "endpoint"):
        # A CLI retries an unreachable endpoint silently until the timeout: the call would only wait.
        add("call", None, "not made: the endpoint is unreachable (a CLI would retry it until --agent-timeout); "
                          "fix the endpoint first")  # fmt: skip
        return report
    client = AgentClient(parsed, exe, report.version, _probe_skill(), options, passed)
    add("call", *_call(client))
    return report


def _checks_failed(report: AgentReport, name: str) -> bool:
    return any(c.name == name and c.ok is False for c in report.checks)


def _credentials(adapter: Adapter, passed: dict[str, str], real_home: bool) -> tuple[bool, str]:
    """Which of the adapter's documented key variables are set (names only, never values)."""
    if adapter.name == "cmd":
        return True, f"a cmd: agent gets only what --agent-env passes ({len(passed)} variable(s))"
    keys = [k for k in adapter.env_keys if secret_name(k)]
    found = [k for k in keys if passed.get(k)]
    if found:
        return True, f"{', '.join(found)} set"
    if real_home:
        return True, "no key variable set; using your own login (--agent-real-home)"
    return False, (
        f"none of {', '.join(keys)} is set: export {keys[0]}=... "
        "(or use --agent-real-home for a subscription login)"
    )


def _targets(adapter: Adapter, model: str | None, passed: dict[str, str]) -> list[tuple[str, str | None]]:
    """``(URL, the variable it came from)`` for each endpoint the CLI would call."""
    if adapter.name == "opencode" and model and "/" in model:
        providers = [model.split("/", 1)[0]]
    elif adapter.name in ADAPTER_PROVIDER:
        providers = [ADAPTER_PROVIDER[adapter.name]]
    else:  # OpenCode without a model, cmd: agents: whatever base URLs are passed
        providers = []
    out: list[tuple[str, str | None]] = []
    for p in providers:
        var, public = PROVIDERS.get(p, (None, ""))
        if var is not None and passed.get(var):
            out.append((passed[var], var))
        elif public:
            out.append((public, None))
    if not providers:
        out = [(v, k) for k, v in sorted(passed.items()) if k.endswith("_BASE_URL") and v]
    return out


def _endpoint(adapter: Adapter, model: str | None, passed: dict[str, str]) -> tuple[bool, str]:
    """A TCP connect to each endpoint the CLI would call, :data:`CONNECT_TIMEOUT_S` at most."""
    targets = _targets(adapter, model, passed)
    if not targets:
        return True, (
            "not checked: OpenCode picks its provider from its model (name one: --agent opencode:PROVIDER/MODEL)"
            if adapter.name == "opencode"
            else "not checked: no *_BASE_URL variable passed"
        )
    shown = []
    for url, var in targets:
        where = (
            f"{url} ({var})"
            if var
            else f"{url} (the default; set {base_variable(adapter, model)} to use another)"
        )
        parts = urlsplit(url)
        try:
            host, port = parts.hostname, parts.port
        except ValueError:
            host, port = None, None
        if not host or parts.scheme not in ("http", "https"):
            return False, f"{var or 'the endpoint'}={url!r} is not an http(s) URL with a host: fix {var}"
        port = port or (443 if parts.scheme == "https" else 80)
        problem = endpoint_problem(url, CONNECT_TIMEOUT_S)
        if problem is not None:
            fix = f"start the server or fix {var}" if var else "check the network, or set a base URL"
            return False, f"cannot reach {where}: {problem}; {fix}"
        shown.append(where)
    return True, f"{', '.join(shown)} reachable"


def _root(adapter: Adapter, passed: dict[str, str], model: str | None) -> tuple[bool, str]:
    """A fact line; false only for Claude Code as root when nothing sets ``IS_SANDBOX``."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return True, "not running as root"
    if adapter.name != "claude-code":
        return True, "running as root (uid 0)"
    if passed.get("IS_SANDBOX") or _prepared_env(adapter, passed, model).get("IS_SANDBOX"):
        return True, "running as root (uid 0); IS_SANDBOX=1 lets Claude Code bypass permissions here"
    return False, (
        "running as root (uid 0): Claude Code refuses to bypass permissions as root; run as another user "
        "or pass --agent-env IS_SANDBOX=1"
    )


def _prepared_env(adapter: Adapter, passed: dict[str, str], model: str | None) -> dict[str, str]:
    """The variables the adapter sets for a call (its :meth:`~Adapter.prepare` in a scratch folder)."""
    try:
        with prepared_call(adapter, passed, model) as (_, env):
            return env
    except Exception:  # noqa: BLE001 - a fact line: the real call below shows a prepare failure
        return dict(passed)


def _probe_skill() -> Skill:
    """A stand-in skill: the probe runs the baseline condition, where no skill is installed."""
    meta = {"name": "doctor-probe", "description": "A probe used by upskill-hub doctor; never installed."}
    return Skill(name=meta["name"], description=meta["description"], body="", frontmatter=meta)


def _call(client: AgentClient) -> tuple[bool, str]:
    """One real call, the probe case in the baseline condition; its error classified."""
    case = Case(id="doctor-probe", input=PROBE_PROMPT, asserts=())
    run_dir = Path(tempfile.mkdtemp(prefix="upskill-doctor-"))
    try:
        outcome = asyncio.run(run_agent_call(client, case, "baseline", 0, run_dir))
        tails = ""
        for art in (run_dir / ARTIFACTS_DIR).glob("*"):
            for name in ("stderr.tail", "stdout.tail"):
                with contextlib.suppress(OSError):  # masked by the run; the last lines hold the CLI's words
                    tails += "\n" + "\n".join((art / name).read_text(encoding="utf-8").splitlines()[-5:])
    finally:
        remove_tree(run_dir)
    if outcome.error is None:
        answer = " ".join(outcome.output.split())[:60] or "(empty answer)"
        took = f" in {outcome.latency_s:.1f} s" if outcome.latency_s is not None else ""
        return True, f"answered{took}: {answer!r}"
    return False, classify(outcome.error, tails, client)


def classify(error: str, tails: str, client: AgentClient) -> str:
    """The call's error as one line: its kind and fix where the text tells (:mod:`.diagnose`), then the error."""
    timed_out = "timed out after" in error
    line = " ".join(error.split())[:400]
    found = cause(f"{error}\n{tails}", client.adapter, client.cli_model)
    if found is not None:
        kind, fix = found
        if fix in line:  # the row's error already names the cause and its fix
            return f"{kind}: {line}"
        if timed_out:
            return f"timeout ({kind}?): {line}; raise --agent-timeout if the model is slow, else {fix}"
        return f"{kind}: {line}; {fix}"
    if timed_out:
        return f"timeout: {line}; raise --agent-timeout if the model is slow"
    return f"failed: {line}"
