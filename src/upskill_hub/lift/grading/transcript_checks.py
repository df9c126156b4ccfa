"""Checks on what an answer did on its way, and the judge's view of it.

``tool-called`` (optionally with text in its arguments, at a dot ``path``),
``tool-not-called``, ``skill-loaded`` and ``file-read`` grade an answer's transcript (the tool
calls an agent CLI or a catalog conversation made: :mod:`upskill_hub.session.transcript`),
not its text. They are pure functions of an :class:`Activity` and the assertion, and each
returns an :class:`~upskill_hub.lift.grading.assertions.AssertionResult` whose evidence names the
matching call, or what was called instead. An answer without a transcript (a ``cmd:``
agent, a CLI format that lists no calls) fails each of them saying why, never passes.

:func:`judge_summary` renders a transcript for the judge's prompt: one line per call (tool
name, arguments and result, each cut), within :data:`PROMPT_MAX_CHARS` in all, ending in a
"truncated" line when calls are left out.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

from upskill_hub._util import safejson
from upskill_hub._util.limits import env_int
from upskill_hub.cases.schema import TRANSCRIPT_TYPES, Assertion
from upskill_hub.lift.grading.assertions import AssertionResult
from upskill_hub.session.transcript import LUMPED, MAX_NAME_CHARS, ToolEvent, Transcript

#: Characters of the judge prompt's ``<transcript>`` section (``UPSKILL_TRANSCRIPT_PROMPT_MAX_CHARS``).
PROMPT_MAX_CHARS = env_int("UPSKILL_TRANSCRIPT_PROMPT_MAX_CHARS", 8_000)
#: Characters of one call's arguments, and of its result, on its line of that section.
LINE_ARG_CHARS = 300
LINE_RESULT_CHARS = 200
#: Characters of arguments, a path or a command quoted in evidence.
_SHOWN = 160


@dataclass(frozen=True)
class Activity:
    """What one answer did, as the transcript checks read it.

    ``loaded`` are the skills it loaded (the harness's skill tool and ``SKILL.md`` reads,
    catalog mode's ``load_skill``); ``reads`` the paths it read (read tools, and skill files
    as ``name/relative/path``); ``commands`` the shell commands it ran. ``skill`` is the
    skill under test (``skill-loaded`` without a value).
    """

    transcript: Transcript
    skill: str
    loaded: Sequence[str] = ()
    reads: Sequence[str] = ()
    commands: Sequence[str] = ()


def _clip(text: str, n: int = _SHOWN) -> str:
    one = " ".join(text[: n * 4].split())
    return one if len(one) <= n else one[: n - 1] + "…"


def _cut_note(t: Transcript) -> str:
    notes = t.notes()
    return f" (transcript cut: {'; '.join(notes)})" if notes else ""


def check_transcript(a: Assertion, activity: Activity) -> AssertionResult:
    """Grade one ``tool-called`` / ``tool-not-called`` / ``skill-loaded`` / ``file-read`` assertion."""
    if a.type not in TRANSCRIPT_TYPES:
        raise ValueError(f"{a.type!r} is not a transcript check")  # a programming error, not input
    t = activity.transcript
    extra: dict[str, object] = {}
    if a.args is not None:
        extra["args"] = a.args
    if a.path is not None:
        extra["path"] = a.path
    if t.missing:
        return AssertionResult(a.type, False, f"not graded: {t.missing}", a.value, extra)
    if a.type == "tool-called":
        ok, ev = _tool_called(a, t)
    elif a.type == "tool-not-called":
        ok, ev = _tool_not_called(a, t)
    elif a.type == "skill-loaded":
        ok, ev = _skill_loaded(a.value or activity.skill, activity)
    else:
        ok, ev = _file_read(a.value, activity)
    if not ok:
        ev += _cut_note(t)
    return AssertionResult(a.type, ok, ev, a.value, extra)


def checker(activity: Activity) -> Callable[[Assertion], AssertionResult]:
    """``check_transcript`` bound to one answer's activity (what :func:`evaluate_case` calls)."""
    return partial(_call, activity=activity)


def _call(a: Assertion, *, activity: Activity) -> AssertionResult:
    return check_transcript(a, activity)


# --------------------------------------------------------------------------- tool-called
def _names(e: ToolEvent) -> set[str]:
    """What a ``tool-called`` value may say for ``e``: its name, its kind, an MCP tool's own name."""
    low = e.name.lower()
    return {low, e.kind, low.rsplit("__", 1)[-1]}


def _args_hold(e: ToolEvent, needle: str, path: str | None = None) -> bool:
    if path is None:
        return needle in e.arguments or any(needle in v for v in e.argument_values())
    found, value = _at_path(e, path)
    if not found:
        return False
    return needle in (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))


_STEP = re.compile(r"[^.\[\]]+|\[(\d+)\]")


def _at_path(e: ToolEvent, path: str) -> tuple[bool, object]:
    """The value at ``path`` (``input.files[0]``) in a call's arguments, when they were kept whole."""
    if e.arguments_cut:
        return False, None
    try:
        cur: object = safejson.loads(e.arguments)
    except ValueError:
        return False, None
    for m in _STEP.finditer(path):
        if m.group(1) is not None:
            i = int(m.group(1))
            if not isinstance(cur, list) or i >= len(cur):
                return False, None
            cur = cur[i]
        elif isinstance(cur, dict) and m.group(0) in cur:
            cur = cur[m.group(0)]
        else:
            return False, None
    return True, cur


def _dropped_matches(want: str, t: Transcript) -> int:
    """How many calls not kept in the row surely match ``want`` (by name, MCP name or kind)."""
    key = want[:MAX_NAME_CHARS]  # names not kept are counted cut to this length
    by_name = sum(
        n
        for name, n in t.dropped
        if name != LUMPED and key in (name.lower(), name.lower().rsplit("__", 1)[-1])
    )
    by_kind = sum(n for kind, n in t.dropped_kinds if kind == want)
    return max(by_name, by_kind)  # a call may match both ways: never counted twice


def _undecided(t: Transcript) -> str | None:
    """Why calls not kept in the row may hide any given tool, or ``None`` when none can.

    A call not kept is known only by its counted name and kind; calls past the distinct-name
    cap are lumped under :data:`LUMPED`, and a row written before kinds were counted lacks them.
    """
    not_kept = t.total - len(t.events)
    if not_kept <= 0:
        return None
    lumped = sum(n for name, n in t.dropped if name == LUMPED)
    named = sum(n for name, n in t.dropped if name != LUMPED)
    kinds = sum(n for _, n in t.dropped_kinds)
    if lumped or named < not_kept:
        return f"{not_kept - named:,} of the {not_kept:,} calls not kept in the row are counted without their names"
    if kinds < not_kept:
        return f"{not_kept - kinds:,} of the {not_kept:,} calls not kept in the row are counted without their kinds"
    return None


def _tool_not_called(a: Assertion, t: Transcript) -> tuple[bool, str]:
    want = str(a.value).strip().lower()
    hits = [(i, e) for i, e in enumerate(t.events, 1) if want in _names(e)]
    if hits:
        i, e = hits[0]
        return False, f"called anyway: call {i} of {t.total}: {e.name} {_clip(e.arguments)}"
    dropped = _dropped_matches(want, t)
    if dropped:
        return False, f"called anyway: {dropped} call(s) of {a.value} among the calls not kept in the row"
    unknown = _undecided(t)
    if unknown:  # an unclear signal is reported as unclear, never as a pass
        return False, f"unclear: no kept call of {a.value!r}, but {unknown}: one of them may be it"
    return True, f"no call of {a.value!r} among {t.total} call(s){_called(t)}"


def succeeded(e: ToolEvent) -> bool:
    """Whether a call counts: its result is shown and does not say it failed (ARCHITECTURE.md:
    "a tool call counts only when its result says it succeeded")."""
    return not e.error and e.result is not None


def _tool_called(a: Assertion, t: Transcript) -> tuple[bool, str]:
    want = str(a.value).strip().lower()
    named = [(i, e) for i, e in enumerate(t.events, 1) if want in _names(e)]
    hits = [(i, e) for i, e in named if succeeded(e)]
    failed = [(i, e) for i, e in named if not succeeded(e)]
    dropped = _dropped_matches(want, t)
    needle = a.args
    if not hits and failed:
        i, e = failed[0]
        how = f"failed: {_clip(e.result or '', 120)}" if e.result is not None else "no result shown"
        more = f" ({len(failed)} attempts, none succeeded)" if len(failed) > 1 else ""
        return False, f"call {i} of {t.total}: {e.name} {_clip(e.arguments, 80)} {how}{more}"
    if needle is None:
        if hits:
            i, e = hits[0]
            return True, f"call {i} of {t.total}: {e.name} {_clip(e.arguments)}"
        if dropped:
            return (
                True,
                f"{dropped} call(s) of {a.value} among the {t.total - len(t.events):,} calls not kept in the row",
            )
        return False, f"no call of {a.value!r} among {t.total} call(s){_called(t)}"
    at = f" at {a.path!r}" if a.path else ""
    for i, e in hits:
        if _args_hold(e, needle, a.path):
            return (
                True,
                f"call {i} of {t.total}: {e.name} with {needle!r} in its arguments{at}: {_clip(e.arguments)}",
            )
    if not hits:
        more = f"; {dropped} call(s) of it were not kept, their arguments unknown" if dropped else ""
        return False, f"no call of {a.value!r} among {t.total} call(s){_called(t)}{more}"
    cut = sum(e.arguments_cut for _, e in hits)
    shown = "; ".join(f"call {i}: {_clip(e.arguments, 80)}" for i, e in hits[:3])
    why = f" ({cut} of them with arguments cut, the text may be past the cut)" if cut else ""
    more = f"; {dropped} more not kept" if dropped else ""
    return (
        False,
        f"{len(hits)} call(s) of {a.value!r}, none with {needle!r} in its arguments{at}{why}{more}: {shown}",
    )


def _called(t: Transcript) -> str:
    if not t.events:
        return ""
    counts = Counter(e.name for e in t.events)
    shown = ", ".join(f"{n}×{c}" if c > 1 else n for n, c in counts.most_common(8))
    more = f", +{len(counts) - 8} more tools" if len(counts) > 8 else ""
    return f" (called: {_clip(shown, 200)}{more})"


# --------------------------------------------------------------------------- skill-loaded
def _skill_loaded(name: str, activity: Activity) -> tuple[bool, str]:
    loaded = list(activity.loaded)
    shown = _clip(", ".join(loaded), 200) if loaded else "none"
    if name in loaded:
        return True, f"loaded {name!r} ({loaded.index(name) + 1} of {len(loaded)} loaded: {shown})"
    return False, f"did not load {name!r} (loaded: {shown})"


# --------------------------------------------------------------------------- file-read
def _norm(path: str) -> str:
    p = path.strip().replace("\\", "/")
    while p.startswith("./"):
        p = p[2:]
    return p


def _file_read(value: str, activity: Activity) -> tuple[bool, str]:
    want = _norm(value)
    for path in activity.reads:
        p = _norm(path)
        if p == want or p.endswith("/" + want.lstrip("/")):
            return True, f"read {_clip(path)}"
    named = re.compile(r"(?<![\w.\-])" + re.escape(want) + r"(?![\w/\-])")
    for cmd in activity.commands:
        m = named.search(cmd)
        if m:
            lo = max(0, m.start() - 60)
            return True, f"named by the command {_clip(('…' if lo else '') + cmd[lo:], _SHOWN)!r}"
    n_reads, n_cmds = len(activity.reads), len(activity.commands)
    seen = f"; reads: {_clip(', '.join(activity.reads[:10]), 200)}" if n_reads else ""
    return False, f"no read of {value!r} among {n_reads} read(s) and {n_cmds} command(s){seen}"


# --------------------------------------------------------------------------- for the judge
#: Every character :meth:`str.splitlines` breaks at, ``\r`` aside: a tool's result holding
#: one must not start a line of its own (a fake ``2. Bash …`` call) in the judge's section.
_BREAKS = re.compile("[\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def _line(text: str, n: int) -> str:
    one = _BREAKS.sub(r"\\n", text[: n * 2].replace("\r", ""))
    return one if len(one) <= n and len(text) <= n * 2 else one[: n - 1] + "…"


def judge_summary(transcript: Transcript, max_chars: int | None = None) -> str:
    """The transcript as the judge reads it: one line per call, within ``max_chars`` in all.

    ``N. name {arguments} -> result`` (``-> error: ...`` when the tool failed), arguments
    and result each cut to a line's share; calls past the budget, and calls the row did not
    keep, are counted on a last ``… truncated: N more calls`` line. No transcript gives its
    reason in one line; an empty one says the agent called no tools.
    """
    budget = PROMPT_MAX_CHARS if max_chars is None else max_chars
    if transcript.missing:
        return _line(f"(no transcript: {transcript.missing})", max(budget, 40))
    if not transcript.events:
        return (
            "(no tool calls)"
            if transcript.total == 0
            else f"… truncated: {transcript.total:,} calls not kept"
        )
    lines: list[str] = []
    used = 0
    reserve = 60  # room for the truncated line
    shown = 0
    for i, e in enumerate(transcript.events, 1):
        line = f"{i}. {_line(e.name, 80)} {_line(e.arguments, LINE_ARG_CHARS)}"
        if e.arguments_cut:
            line += " [arguments cut]"
        if e.result is not None:
            res = _line(e.result, LINE_RESULT_CHARS)
            line += f" -> {'error: ' if e.error else ''}{res}"
        if used + len(line) + 1 > budget - reserve:
            break
        lines.append(line)
        used += len(line) + 1
        shown = i
    left = transcript.total - shown
    if left > 0:
        lines.append(f"… truncated: {left:,} more call(s) of {transcript.total:,}")
    return "\n".join(lines)
