"""Evaluate a skill inside real agent CLIs (Claude Code, Codex, Gemini CLI, OpenCode, any command).

The third way a skill reaches a model (ARCHITECTURE.md): the agent's own system prompt,
skill discovery, tools and permissions, in a throwaway workspace per call. Modules:

* :mod:`.spec`: ``--agent`` values, preflight (executable, version, shadowing skills);
* :mod:`.claude_code`, :mod:`.codex`, :mod:`.gemini`, :mod:`.opencode`, :mod:`.custom`:
  one adapter per CLI (command line, skills folder, output reader);
* :mod:`.workspace`: the workspace, its environment and its snapshots;
* :mod:`.process`: a process group that never outlives its call;
* :mod:`.grading`: ``file-exists``, ``file-contains`` and ``command`` checks;
* :mod:`.run`: one call from workspace to graded outcome.
"""

from upskill_hub.lift.harness.run import HarnessCache, HarnessOutcome, run_agent_call
from upskill_hub.lift.harness.spec import AgentClient, HarnessOptions, parse_agent_spec, prepare_agents

__all__ = [
    "AgentClient",
    "HarnessCache",
    "HarnessOptions",
    "HarnessOutcome",
    "parse_agent_spec",
    "prepare_agents",
    "run_agent_call",
]
