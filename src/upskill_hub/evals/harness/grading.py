"""Workspace assertions: ``file-exists``, ``file-contains`` and ``command``, after the agent ran.

File checks look only inside the workspace's ``project/`` folder (a path is relative, has no
``..``, and a symlink that leads outside fails the check) and pass only on a file the agent
created or changed: an input file left as it was is evidence of nothing. ``command`` runs
a shell command in the workspace, as its own process group under a timeout, with the same
allow-listed environment as the agent; its exit status is the verdict. Commands come from
the tests file, so they run only where the user runs the eval: the Space refuses them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from upskill_hub.cases import COMMAND_TIMEOUT_DEFAULT, Assertion
from upskill_hub.evals.assertions import AssertionResult
from upskill_hub.evals.harness.process import run_process
from upskill_hub.evals.harness.workspace import Workspace

#: A file-contains check reads at most this much of the file.
MAX_READ_BYTES = 8 * 1024 * 1024
_SHOWN = 400


class WorkspaceChecker:
    """Grades workspace assertions against one finished call's workspace."""

    def __init__(
        self, ws: Workspace, changed: set[str], env: Mapping[str, str], *, allow_commands: bool = True
    ) -> None:
        self.ws = ws
        self.changed = changed
        self.env = dict(env)
        self.allow_commands = allow_commands

    async def __call__(self, a: Assertion) -> AssertionResult:
        if a.type == "command":
            return await self._command(a)
        return self._file(a)

    def _locate(self, rel: str) -> tuple[Path | None, str]:
        p = self.ws.project / rel
        try:
            real = p.resolve()
        except (OSError, RuntimeError):
            return None, f"{rel}: cannot be resolved"
        if not real.is_relative_to(self.ws.project):
            return None, f"{rel}: points outside the workspace"
        if not real.is_file():
            return None, f"{rel}: not found in the workspace" if not p.exists() else f"{rel}: not a file"
        if rel not in self.changed and real.relative_to(self.ws.project).as_posix() not in self.changed:
            return None, f"{rel}: existed before the agent ran and was not changed by it"
        return real, ""

    def _file(self, a: Assertion) -> AssertionResult:
        assert a.path is not None  # cases.py requires it for file checks
        real, why = self._locate(a.path)
        extra = {"path": a.path}
        if real is None:
            return AssertionResult(a.type, False, why, a.value, extra)
        if a.type == "file-exists":
            return AssertionResult(a.type, True, f"{a.path}: written by the agent", a.value, extra)
        with open(real, "rb") as fh:
            text = fh.read(MAX_READ_BYTES).decode("utf-8", "replace")
        wanted = [a.value] if isinstance(a.value, str) else list(a.value)
        missing = [w for w in wanted if w not in text]
        if missing:
            return AssertionResult(
                a.type, False, f"{a.path}: missing " + ", ".join(repr(m) for m in missing), a.value, extra
            )
        return AssertionResult(
            a.type, True, f"{a.path}: contains " + ", ".join(repr(w) for w in wanted), a.value, extra
        )

    async def _command(self, a: Assertion) -> AssertionResult:
        if not self.allow_commands:
            return AssertionResult(a.type, False, "command checks are refused here", a.value)
        timeout = a.timeout or COMMAND_TIMEOUT_DEFAULT
        res = await run_process(
            ["/bin/sh", "-c", a.value], cwd=self.ws.project, env=self.env, timeout=timeout
        )
        out = (res.stdout_tail + b"\n" + res.stderr_tail).decode("utf-8", "replace").strip()[-_SHOWN:]
        extra = {"exit_code": res.returncode, "output_tail": out}
        if res.timed_out:
            return AssertionResult(a.type, False, f"timed out after {timeout:g} s (killed)", a.value, extra)
        ok = res.returncode == 0
        return AssertionResult(a.type, ok, f"exit status {res.returncode}", a.value, extra)
