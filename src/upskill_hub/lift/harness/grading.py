"""Workspace assertions: ``file-exists``, ``file-contains`` and ``command``, after the agent ran.

File checks look only inside the workspace's ``project/`` folder (a path is relative, has no
``..``, and a symlink that leads outside fails the check) and pass only on a file the agent
created or changed: an input file left as it was is evidence of nothing, and so is a new
symlink leading to one (the file read must itself be new or changed). ``command`` runs
a shell command in the workspace, as its own process group under a timeout, with the same
allow-listed environment as the agent; its exit status is the verdict. Commands come from
the tests file, so they run only where the user runs the eval: the Space refuses them.

``file-contains`` on a spreadsheet, document, deck, PDF or image checks the file's rendered
text (:mod:`upskill_hub.artifacts`: cells as ``B10: =SUM(B2:B9)``, paragraphs and tables,
slide texts, page text), the text the judge sees; any other file is matched as raw text.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from upskill_hub._util.fsutil import FileRefused, read_capped
from upskill_hub.artifacts.render import PARSED_KINDS, Rendered
from upskill_hub.cases import COMMAND_TIMEOUT_DEFAULT, Assertion
from upskill_hub.lift.grading.assertions import AssertionResult
from upskill_hub.lift.harness.process import run_process
from upskill_hub.lift.harness.workspace import STATE_CHECKS, Workspace, state_check

_SHOWN = 400


class WorkspaceChecker:
    """Grades workspace assertions against one finished call's workspace.

    ``cut`` are the snapshot's notes on what it did not read (they go into each file
    check's evidence: a "not found" may be "not looked at"); ``broken`` says the agent made
    ``project/`` itself unusable (a symlink in its place): then every check fails with that
    reason and no command runs (its working folder would be wherever the link points).
    ``rendered`` are the changed files already rendered for the judge (by path), and
    ``render`` renders one more on demand (a ``file-contains`` target beyond those).
    """

    def __init__(
        self,
        ws: Workspace,
        changed: set[str],
        env: Mapping[str, str],
        *,
        allow_commands: bool = True,
        cut: Sequence[str] = (),
        broken: str | None = None,
        rendered: Mapping[str, Rendered] | None = None,
        render: Callable[[str], Rendered] | None = None,
    ) -> None:
        self.ws = ws
        self.rendered = dict(rendered or {})
        self.render = render
        self.changed = changed
        self.env = dict(env)
        self.allow_commands = allow_commands
        self.cut = list(dict.fromkeys(cut))
        self.broken = broken

    async def __call__(self, a: Assertion) -> AssertionResult:
        if self.broken is not None:
            return AssertionResult(a.type, False, f"not graded: {self.broken}", a.value, {"path": a.path})
        if a.type == "command":
            return await self._command(a)
        if a.type in STATE_CHECKS:  # agent-skill-eval's: on the state, whoever made it
            return await asyncio.to_thread(state_check, self.ws, a)
        result = await self._file(a)
        if self.cut:
            result.extra["snapshot_cut"] = self.cut
            result.evidence += " (workspace snapshot cut: " + "; ".join(self.cut) + ")"
        return result

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
        # The file read is the one judged: a new symlink to an input file left as it was is
        # evidence of nothing, so the target itself must be new or changed.
        target = real.relative_to(self.ws.project).as_posix()
        if target not in self.changed:
            if target != rel:
                return (
                    None,
                    f"{rel}: leads to {target}, which existed before the agent ran and was not changed by it",
                )
            return None, f"{rel}: existed before the agent ran and was not changed by it"
        return real, ""

    async def _rendering(self, target: str) -> Rendered | None:
        """The rendered text of ``target`` when it is a format read by a parser, else ``None``."""
        r = self.rendered.get(target)
        if r is None and self.render is not None:
            r = await asyncio.to_thread(self.render, target)
            self.rendered[target] = r
        return r if r is not None and r.kind in PARSED_KINDS else None

    async def _file(self, a: Assertion) -> AssertionResult:
        assert a.path is not None  # cases.py requires it for file checks
        real, why = self._locate(a.path)
        extra = {"path": a.path}
        if real is None:
            return AssertionResult(a.type, False, why, a.value, extra)
        if a.type == "file-exists":
            return AssertionResult(a.type, True, f"{a.path}: written by the agent", a.value, extra)
        where = ""
        rendered = await self._rendering(real.relative_to(self.ws.project).as_posix())
        if rendered is not None:
            if rendered.note:
                return AssertionResult(a.type, False, f"{a.path}: {rendered.note}", a.value, extra)
            text, where = rendered.text, f" (its rendered {rendered.kind} text)"
            extra["rendered"] = rendered.kind
        else:
            try:  # never blocks (a FIFO), never follows a link swapped in, never reads past the cap
                text = read_capped(real, follow_symlinks=False).decode("utf-8", "replace")
            except FileRefused as exc:
                return AssertionResult(a.type, False, f"{a.path}: {exc.problem}", a.value, extra)
        wanted = [a.value] if isinstance(a.value, str) else list(a.value)
        missing = [w for w in wanted if w not in text]
        if missing:
            why = f"{a.path}{where}: missing " + ", ".join(repr(m) for m in missing)
            return AssertionResult(a.type, False, why, a.value, extra)
        return AssertionResult(
            a.type, True, f"{a.path}{where}: contains " + ", ".join(repr(w) for w in wanted), a.value, extra
        )

    async def _command(self, a: Assertion) -> AssertionResult:
        if not self.allow_commands:
            return AssertionResult(a.type, False, "command checks are refused here", a.value)
        timeout = a.timeout or COMMAND_TIMEOUT_DEFAULT
        # Its own session; the group, and anything it daemonized, is killed when it ends.
        res = await run_process(
            ["/bin/sh", "-c", a.value], cwd=self.ws.project, env=self.env, timeout=timeout
        )
        out = (res.stdout_tail + b"\n" + res.stderr_tail).decode("utf-8", "replace").strip()[-_SHOWN:]
        extra = {"exit_code": res.returncode, "output_tail": out}
        if res.timed_out:
            return AssertionResult(a.type, False, f"timed out after {timeout:g} s (killed)", a.value, extra)
        ok = res.returncode == 0
        return AssertionResult(a.type, ok, f"exit status {res.returncode}", a.value, extra)
