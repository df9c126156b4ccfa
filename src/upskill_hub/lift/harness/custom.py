"""Any other agent: ``--agent cmd:'TEMPLATE'``, a command line with ``{prompt}`` in it.

The template is split like a shell would (``shlex``) but never run through a shell:
``{prompt}`` becomes exactly one argument holding the case's prompt (without ``{prompt}``
the prompt is written to stdin), ``{model}`` the model after the last ``@``
(``cmd:'my-agent {prompt}'@fast``). Placeholders are filled in one pass (text inside the
prompt is never substituted), and a prompt that would begin an argument with ``-`` where
the command could read it as an option is refused: write ``cmd:'my-agent -- {prompt}'``. Its stdout, as plain text, is the answer; it reports no
tokens (``tokens_unavailable``) and no tool calls, so whether it loaded the skill is unknown.
The skill is installed in ``.agents/skills/``, the folder the Agent Skills standard shares.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from upskill_hub.errors import UpskillError
from upskill_hub.lift.harness.base import (
    Adapter,
    Invocation,
    ParsedRun,
    PromptRefused,
    clean_text,
    pass_untrusted,
)

#: The placeholders a template may hold; each is replaced once, left to right, never in text
#: a replacement brought in (a prompt holding ``{model}`` stays as written).
_PLACEHOLDER_RE = re.compile(r"\{(prompt|model)\}")


def fill(token: str, values: dict[str, str]) -> str:
    """``token`` with its placeholders replaced in a single pass."""
    return _PLACEHOLDER_RE.sub(lambda m: values[m.group(1)], token)


@dataclass(frozen=True)
class CustomCommand(Adapter):
    template: tuple[str, ...] = ()

    @property
    def prompt_on_stdin(self) -> bool:
        return not any("{prompt}" in t for t in self.template)

    def options(self, exe: str, model: str | None) -> list[str]:
        return [exe, *(fill(t, {"prompt": "{prompt}", "model": model or ""}) for t in self.template[1:])]

    def invocation(self, exe: str, prompt: str, model: str | None) -> Invocation:
        """The template filled in; a prompt that would start an argument with ``-`` is refused.

        The template is the user's, so only they know whether their command takes ``--``: a
        ``{prompt}`` after a ``--`` argument, or inside an argument (``--task={prompt}``), is
        safe; one standing where an option may stand is refused for a text starting with
        ``-``, as is a NUL character. Without ``{prompt}`` the text goes to stdin.
        """
        if self.prompt_on_stdin:
            return pass_untrusted(self.options(exe, model), prompt, "stdin")
        text = clean_text(prompt)
        if "\0" in text:
            raise PromptRefused("the case's text holds a NUL character, which no command line can carry")
        values = {"prompt": text, "model": model or ""}
        out, ended = [exe], False
        for t in self.template[1:]:
            arg = fill(t, values)
            if not ended and t.startswith("{prompt}") and arg.startswith("-"):
                raise PromptRefused(
                    f"the case's text starts with {text[:40]!r}, which `{Path(self.binary).name}` would read "
                    "as an option: put -- before {prompt} in the cmd: template (if the command accepts it), "
                    "or leave {prompt} out to pass the text on stdin"
                )
            ended = ended or t == "--"
            out.append(arg)
        return Invocation(out)

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
