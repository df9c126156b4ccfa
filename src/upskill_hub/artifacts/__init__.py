"""What an agent left in its workspace, made readable for graders.

An ``--agent`` run is judged on what it did, not only on what it said: the skills people
publish (xlsx, docx, pptx, pdf) exist to produce files. This package answers two questions
about a finished agent call's ``project/`` folder, without trusting anything in it:

* :mod:`~upskill_hub.artifacts.changes`: which files did the run create, modify or delete
  against the staged state (path, size, sha256, kind), from the snapshots the harness
  already took;
* :mod:`~upskill_hub.artifacts.render`: what do those files say, as text a judge or a
  ``file-contains`` check can read (cells with their formulas, paragraphs and tables,
  slide texts and notes, PDF text per page, image format and size), within the budgets of
  :mod:`~upskill_hub.artifacts.budgets`; binary formats are opened in a worker process
  (:mod:`~upskill_hub.artifacts.worker`) that is killed when it runs out of time.

Every failure, refusal and cut is one line of text in the result, never an exception.
"""

from __future__ import annotations

from upskill_hub.artifacts.changes import ChangedFile, ChangeSet, change_set
from upskill_hub.artifacts.render import Rendered, render_changes, render_one
from upskill_hub.artifacts.report import judge_section, write_rendered

__all__ = [
    "ChangeSet",
    "ChangedFile",
    "Rendered",
    "change_set",
    "judge_section",
    "render_changes",
    "render_one",
    "write_rendered",
]
