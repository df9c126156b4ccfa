"""Any other agent: ``--agent cmd:'TEMPLATE'``, a command line with ``{prompt}`` in it.

The template is split like a shell would (``shlex``) but never run through a shell:
``{prompt}`` becomes exactly one argument holding the case's prompt (without ``{prompt}``
the prompt is written to stdin), ``{model}`` the model after the last ``@``
(``cmd:'my-agent {prompt}'@fast``). Its stdout, as plain text, is the answer; it reports no
tokens (``tokens_unavailable``) and no tool calls, so whether it loaded the skill is unknown.
The skill is installed in ``.agents/skills/``, the folder the Agent Skills standard shares.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from upskill_hub.errors import UpskillError
from upskill_hub.evals.harness.base import Adapter, ParsedRun


@dataclass(frozen=True)
class CustomCommand(Adapter):
    template: tuple[str, ...] = ()

    @property
    def prompt_on_stdin(self) -> bool:
        return not any("{prompt}" in t for t in self.template)

    def argv(self, exe: str, prompt: str, model: str | None) -> list[str]:
        out = [exe]
        for t in self.template[1:]:
            out.append(t.replace("{prompt}", prompt).replace("{model}", model or ""))
        return out

    def parse(self, stdout: str) -> ParsedRun:
        return ParsedRun(text=stdout.strip())


def custom_adapter(template: str) -> CustomCommand:
    """The adapter for ``cmd:TEMPLATE``; a template that does not split is a one-line error."""
    try:
        parts = tuple(shlex.split(template))
    except ValueError as exc:
        raise UpskillError(f"--agent cmd:{template!r}: {exc}") from None
    if not parts:
        raise UpskillError("--agent cmd: needs a command line, e.g. cmd:'my-agent --print {prompt}'")
    return CustomCommand(
        name="cmd",
        binary=parts[0],
        skills_folder=".agents/skills",
        user_skill_dirs=("~/.agents/skills",),
        env_keys=(),
        install_hint="check the command in --agent cmd:'...'",
        billing="whatever the command uses; pass its key with --agent-env",
        template=parts,
    )
