"""What ``tune``'s teacher is shown: the request text, its budgets, and the answer parsed back.

Each iteration the teacher gets one user message (:func:`tune_request`), in this order:

1. the last description scored (the one the loop rewrites, as skill-creator's run_loop
   rewrites its current description), inside ``<description>`` tags;
2. the whole SKILL.md, up to :data:`SKILL_MD_BUDGET` characters (a longer file is cut,
   and the request says how much is not shown);
3. the train queries that description fails *at the threshold* (run_eval's verdict: a
   should-trigger request loaded in fewer than ``threshold`` of its runs, a should-not one
   in at least that share), each with how often it loaded the skill, and the rule itself;
4. every earlier attempt, in the order tried (:class:`Attempt`): each scored candidate
   with its **train** figures (queries passed, as improve_description's ``train=P/T``, and
   the pooled decisions) and its own train failures, each rejected proposal with the
   reason. The section is kept under :data:`HISTORY_BUDGET` characters: the newest
   attempts keep their failure lists (within half the budget), older ones lose them, and
   the oldest are left out when even that is too long (the request says how many);
5. the rules of the answer.

Nothing held out is ever in it: the loop passes train failures and train figures only,
and the request never names held-out queries, their count or their scores.

This module imports nothing from the loop (:mod:`upskill_hub.triggering.tune` imports it),
so the teacher's text can be read and tested on its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: Characters of SKILL.md shown to the teacher (the rest is cut, and the request says so).
SKILL_MD_BUDGET = 24_000
#: Characters of the earlier-attempts section, at most.
HISTORY_BUDGET = 40_000
#: Failing queries listed per kind for the current best, and per earlier attempt.
MAX_LISTED = 40
MAX_LISTED_PER_ATTEMPT = 12
#: Characters of one query or one rejected proposal as shown.
MAX_QUERY_CHARS = 300

TEACHER_SYSTEM = (
    "You improve the descriptions of agent skills. An agent decides whether to load a skill from its "
    "description alone, so a description must say what the skill does and when to use it."
)


@dataclass
class Failure:
    """A train query whose verdict at the threshold is a fail, for the teacher."""

    query: str
    should_trigger: bool
    triggered: int  # repeats that loaded the skill
    runs: int


@dataclass(frozen=True)
class Attempt:
    """One earlier attempt as the teacher sees it: train figures only, never held-out ones.

    A scored candidate has ``index`` (0 = the description the loop started from) and its
    train counts; a rejected proposal has ``rejected`` (why) and no counts.
    """

    iteration: int
    description: str
    index: int | None = None
    right: int = 0  # right decisions on train, over ``calls``
    calls: int = 0
    loaded_should: tuple[int, int] = (0, 0)  # (loaded, asked) on should-trigger queries
    loaded_should_not: tuple[int, int] = (0, 0)
    wrong: tuple[Failure, ...] = field(default_factory=tuple)
    rejected: str | None = None
    passed: tuple[int, int] = (0, 0)  # (queries passed at the threshold, queries with a verdict)


def _short(text: str, limit: int = MAX_QUERY_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _listed(items: list[Failure], limit: int) -> list[str]:
    lines = [f"- {_short(f.query)} (loaded {f.triggered}/{f.runs} times)" for f in items[:limit]]
    if len(items) > limit:
        lines.append(f"({len(items) - limit} more not listed)")
    return lines


def _skill_md_lines(skill_md: str) -> list[str]:
    text = skill_md.strip()
    if not text:
        return []
    if len(text) <= SKILL_MD_BUDGET:
        head = "The skill's whole SKILL.md (what the agent reads after it loads the skill):"
        shown = text
    else:
        head = (
            f"The skill's SKILL.md (what the agent reads after it loads the skill), its first "
            f"{SKILL_MD_BUDGET:,} of {len(text):,} characters:"
        )
        shown = (
            text[:SKILL_MD_BUDGET]
            + f"\n[… the last {len(text) - SKILL_MD_BUDGET:,} characters are not shown]"
        )
    return [head, "", "<skill_md>", shown, "</skill_md>", ""]


def _share(pair: tuple[int, int]) -> str:
    return f"{pair[0]}/{pair[1]}"


def _attempt_text(a: Attempt, *, with_failures: bool) -> str:
    if a.rejected is not None:
        return (
            f'<rejected iteration="{a.iteration}">{_short(a.description)}</rejected> '
            f"(not scored: {_short(a.rejected, 200)})"
        )
    origin = "the starting description" if a.index == 0 else f"iteration {a.iteration}"
    pct = f"{a.right / a.calls:.0%}" if a.calls else "–"
    lines = [
        f'<attempt number="{a.index}" from="{origin}">',
        f"<text>{a.description}</text>",
        f"train score: {pct} right ({a.right}/{a.calls} decisions), {_share(a.passed)} requests passed; "
        f"loaded for should-trigger requests {_share(a.loaded_should)}, for should-not requests "
        f"{_share(a.loaded_should_not)}",
    ]
    if with_failures and a.wrong:
        missed = [f for f in a.wrong if f.should_trigger]
        caught = [f for f in a.wrong if not f.should_trigger]
        shown = (missed + caught)[:MAX_LISTED_PER_ATTEMPT]
        lines.append("its wrong decisions:")
        lines += [
            f"  * {'missed' if f.should_trigger else 'wrongly loaded'}: {_short(f.query)} ({f.triggered}/{f.runs})"
            for f in shown
        ]
        if len(a.wrong) > len(shown):
            lines.append(f"  ({len(a.wrong) - len(shown)} more not listed)")
    lines.append("</attempt>")
    return "\n".join(lines)


def history_section(history: list[Attempt], budget: int = HISTORY_BUDGET) -> list[str]:
    """The earlier attempts, oldest first, within ``budget`` characters (see the module docstring)."""
    if not history:
        return []
    blocks: list[str] = []
    used, full = 0, True
    for attempt in reversed(history):  # the newest first, each with as much as still fits
        block = _attempt_text(attempt, with_failures=full)
        if full and used + len(block) > budget // 2:
            full = False  # failure lists take half the budget at most; from here on back, none
            block = _attempt_text(attempt, with_failures=False)
        if used + len(block) > budget:
            break  # this one and every older one are not shown
        blocks.append(block)
        used += len(block) + 1
    blocks.reverse()
    head = [
        "Every description tried so far, in the order tried, with its score on the train requests "
        "(the requests these lists come from). Do not propose any of them again: learn from what "
        "scored well and what did not, and try something different.",
        "",
    ]
    if len(blocks) < len(history):
        head.append(f"({len(history) - len(blocks)} earliest attempt(s) not shown)")
    return [*head, *blocks, ""]


def tune_request(
    name: str,
    description: str,
    wrong: list[Failure],
    skill_md: str = "",
    history: list[Attempt] | None = None,
    *,
    threshold: float | None = None,
) -> str:
    """The message to the teacher: the last description, SKILL.md, its train failures, the history.

    With ``threshold`` the request says what a failure is: the share of runs a request must
    load the skill in (should-trigger) or stay under (should-not).
    """
    missed = [f for f in wrong if f.should_trigger]
    false = [f for f in wrong if not f.should_trigger]
    lines = [
        f"An AI agent sees only this description of the skill {name!r} when it decides whether to load it:",
        "",
        f"<description>{description}</description>",
        "",
        *_skill_md_lines(skill_md),
    ]
    if missed:
        lines.append("The agent did NOT load it for these requests, but should have:")
        lines += [*_listed(missed, MAX_LISTED), ""]
    if false:
        lines.append("The agent loaded it for these requests, but should not have:")
        lines += [*_listed(false, MAX_LISTED), ""]
    if threshold is not None and wrong:
        lines += [
            f"(A request counts as passed when the agent loaded the skill in at least {threshold:.0%} of its "
            f"runs if it should, and in fewer than {threshold:.0%} if it should not.)",
            "",
        ]
    lines += history_section(history or [])
    lines += [
        "Write a better description: what the skill does and when to use it, in general terms "
        "(do not list these requests). At most 1024 characters. Answer with the description only, "
        "inside <description></description>.",
    ]
    return "\n".join(lines)


def parse_proposal(answer: str) -> str:
    """The description in a teacher answer (inside ``<description>`` tags, else the whole answer)."""
    m = re.search(r"<description>(.*?)</description>", answer or "", re.DOTALL | re.IGNORECASE)
    text = (m.group(1) if m else answer or "").strip()
    return " ".join(text.split())
