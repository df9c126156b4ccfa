"""Generate a skill with a teacher model: write it, write its tests, evaluate, refine.

The loop (what ``upskill-hub generate`` runs)::

    task (+ trace | existing skill) --teacher--> SKILL.md (+ references/)
                                    --test model--> test cases (skill_meta.json schema)
    cases --split--> train (refinement sees these)  |  holdout (never shown to the teacher)
    repeat up to N attempts:
        evaluate the skill on the train cases (with_skill vs baseline, via upskill_hub.lift)
        all pass -> stop; else the teacher revises the skill from the failing train cases
    evaluate the best skill on the holdout cases -> the honest score
    write the skill atomically to OUT/<name>/

Why a holdout: refinement optimises the skill against its failures, so the train score
goes up by construction; only cases the teacher never saw say whether the skill helps.
The refine prompt is built from train rows only, and the skill files shown to the teacher
never include ``skill_meta.json`` (which holds the holdout inputs).

Teacher output is parsed defensively (``<file path=...>`` blocks, a fenced block, or bare
frontmatter for skills; a JSON object or fenced JSON for tests) and validated with the
same code as ``skills validate``; a malformed answer is sent back with the problems for
another try, and after the retries a one-line :class:`UpskillError` says what was wrong.
Nothing is written until the end, and then atomically: never a half skill.

The teacher also fills gaps in a skill the user already has: :mod:`.cases` writes test cases
for ``eval --generate-tests``, :mod:`.queries` trigger queries (with near misses, checked for
leaks) for ``triggers --generate-queries``, one skill or a whole ``--library``.
"""

from upskill_hub.generate.loop import GenerateOptions, GenerateResult, generate_skill, generate_skill_async

__all__ = ["GenerateOptions", "GenerateResult", "generate_skill", "generate_skill_async"]
