"""Does a skill help? The lift eval: the same cases with and without the skill, N runs each.

Entry points (imported lazily, so ``import upskill_hub.lift`` stays cheap):
:func:`run_eval` / :func:`run_eval_async` and :class:`RunResult` in :mod:`.api`, which
prepares (:mod:`.prepare`), runs (:mod:`.runner`, agent CLIs in :mod:`.harness`), grades
(:mod:`.grading`: the answer, the transcript) and sums up (:mod:`.figures`: rates, intervals,
spread over repeats, weak assertions; :mod:`.report`, :mod:`.plots`); :mod:`.versus` runs a
new version against an old one; :mod:`.compare` and :mod:`.history` read runs back. The rows land in a run folder
(:mod:`upskill_hub.rundir`); the model calls go through :mod:`upskill_hub.session`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RunResult", "run_eval", "run_eval_async"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from upskill_hub.lift import api

        return getattr(api, name)
    raise AttributeError(name)
