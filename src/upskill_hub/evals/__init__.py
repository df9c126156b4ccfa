"""Evaluate skills: does a skill make a model better or cheaper, and how sure are we?

Entry points (imported lazily, so ``import upskill_hub.evals`` stays cheap):

* :func:`run_eval` / :func:`run_eval_async` and :class:`RunResult` — :mod:`.api`;
* result shapes — :mod:`.schema`; statistics — :mod:`.stats`; assertions — :mod:`.assertions`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RunResult", "run_eval", "run_eval_async"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from upskill_hub.evals import api

        return getattr(api, name)
    raise AttributeError(name)
