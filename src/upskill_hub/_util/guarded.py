"""Run a stranger's regex or JSON Schema under a budget.

Assertions come from test files that anyone can paste into the public Space. Python's
``re`` cannot be interrupted, so ``^(a|aa)+$`` against a long answer would hold the
process for hours; ``jsonschema`` follows ``$ref`` anywhere (remote URLs included, with a
network fetch) and recurses forever on ``{"$ref": "#"}``. Here:

* regexes run on the ``regex`` engine, which supports a timeout and releases the GIL
  while it matches (other visitors' requests keep being served);
* schemas resolve ``$ref`` only inside the schema itself (a registry that refuses every
  retrieval: no network, no files), and every keyword evaluation counts against a step,
  depth and time budget;
* every regex a schema runs (``pattern``, ``patternProperties``, ``additionalProperties``
  and ``unevaluatedProperties`` beside them, any keyword that matches a pattern) goes
  through the same bounded matcher as the ``regex`` assertion, on the schema's own clock:
  ``jsonschema`` calls ``re.search`` from its keyword modules, and while a budgeted
  validation runs on a thread those calls are answered by :func:`search`.

Exceeding a budget raises :class:`BudgetExceeded`; the assertion layer turns it into that
row's failure with evidence.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import regex

from upskill_hub._util import limits


class BudgetExceeded(Exception):
    """A pattern or schema used more time, steps or depth than it is allowed."""


class SchemaRefError(Exception):
    """A ``$ref`` that points outside the schema (or nowhere)."""


def compile_pattern(pattern: str) -> regex.Pattern:
    """Compile an assertion's pattern (``re`` syntax, ``MULTILINE``); ``ValueError`` if unusable."""
    if len(pattern) > limits.REGEX_MAX_PATTERN:
        raise ValueError(f"pattern longer than {limits.REGEX_MAX_PATTERN} characters")
    try:
        return regex.compile(pattern, regex.MULTILINE | regex.VERSION0)
    except regex.error as exc:
        raise ValueError(str(exc)) from None
    except (RecursionError, OverflowError, MemoryError):
        raise ValueError("pattern too complex to compile") from None


def search(pattern: str, text: str, timeout_s: float | None = None) -> regex.Match | None:
    """``pattern.search(text)`` that gives up after ``timeout_s`` with :class:`BudgetExceeded`."""
    limit = limits.REGEX_TIMEOUT_S if timeout_s is None else timeout_s
    compiled = compile_pattern(pattern)
    try:
        return compiled.search(text, timeout=limit, concurrent=True)
    except TimeoutError:
        raise BudgetExceeded(f"regex gave up after {limit:g}s (catastrophic backtracking?)") from None


def _refuse_retrieval(uri: str):
    from referencing.exceptions import NoSuchResource

    raise NoSuchResource(ref=uri)


#: The schema budget of the validation running on this thread (``None`` outside one).
_ACTIVE = threading.local()


class _BoundedRe(ModuleType):
    """Stands in for ``re`` inside ``jsonschema``'s keyword modules.

    Inside a budgeted validation (this thread has a deadline) ``search`` runs on the
    ``regex`` engine with the time left (at most the regex budget), releasing the GIL;
    a pattern that times out or cannot compile ends the validation with
    :class:`BudgetExceeded`. Anywhere else it is plain ``re.search``, as before.
    """

    def __init__(self) -> None:
        super().__init__("re")

    def __getattr__(self, name: str) -> Any:
        return getattr(re, name)

    @staticmethod
    def search(pattern: Any, string: Any, flags: int = 0) -> Any:
        budget = getattr(_ACTIVE, "budget", None)
        if budget is None or not isinstance(pattern, str) or not isinstance(string, str):
            return re.search(pattern, string, flags)
        left = min(limits.REGEX_TIMEOUT_S, budget.deadline - time.monotonic())
        if left <= 0:
            raise BudgetExceeded(f"schema validation took longer than {budget.timeout_s:g}s")
        try:
            compiled = regex.compile(pattern, flags | regex.VERSION0) if len(pattern) <= limits.REGEX_MAX_PATTERN else None
        except (regex.error, RecursionError, OverflowError, MemoryError) as exc:
            raise BudgetExceeded(f"schema pattern /{pattern[:80]}/ is not a usable regex ({exc})") from None
        if compiled is None:
            raise BudgetExceeded(f"schema pattern longer than {limits.REGEX_MAX_PATTERN} characters")
        try:
            return compiled.search(string, timeout=left, concurrent=True)
        except TimeoutError:
            raise BudgetExceeded(
                f"schema pattern /{pattern[:80]}/ gave up after {left:.2g}s (catastrophic backtracking?)"
            ) from None


_PATCH_LOCK = threading.Lock()


def _route_schema_regexes() -> None:
    """Point ``re`` in ``jsonschema``'s keyword modules at :class:`_BoundedRe` (once)."""
    import jsonschema._format
    import jsonschema._keywords
    import jsonschema._legacy_keywords
    import jsonschema._utils

    with _PATCH_LOCK:
        for mod in (jsonschema._keywords, jsonschema._legacy_keywords, jsonschema._utils, jsonschema._format):
            if not isinstance(getattr(mod, "re", None), _BoundedRe):
                mod.re = _BoundedRe()  # type: ignore[attr-defined]


class _Budget:
    """Counts keyword evaluations and nesting; raises once any limit is passed."""

    def __init__(self, timeout_s: float, max_steps: int, max_depth: int) -> None:
        self.deadline = time.monotonic() + timeout_s
        self.timeout_s = timeout_s
        self.max_steps = max_steps
        self.max_depth = max_depth
        self.steps = 0
        self.depth = 0

    def wrap(self, keyword: Callable[..., Any]) -> Callable[..., Iterator[Any]]:
        def checked(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
            self.steps += 1
            if self.steps > self.max_steps:
                raise BudgetExceeded(f"schema validation passed {self.max_steps} steps")
            if self.steps % 256 == 0 and time.monotonic() > self.deadline:
                raise BudgetExceeded(f"schema validation took longer than {self.timeout_s:g}s")
            self.depth += 1
            try:
                if self.depth > self.max_depth:
                    raise BudgetExceeded(f"schema nests (or refers to itself) deeper than {self.max_depth} levels")
                errors = keyword(validator, value, instance, schema)
                if errors is not None:
                    yield from errors
            finally:
                self.depth -= 1

        return checked


def _budgeted(
    schema: dict[str, Any],
    *,
    timeout_s: float | None = None,
    max_steps: int | None = None,
    max_depth: int | None = None,
):
    """The validator and the budget it counts against (the budget also clocks its regexes)."""
    import jsonschema
    from referencing import Registry

    budget = _Budget(
        limits.SCHEMA_TIMEOUT_S if timeout_s is None else timeout_s,
        limits.SCHEMA_MAX_STEPS if max_steps is None else max_steps,
        limits.SCHEMA_MAX_DEPTH if max_depth is None else max_depth,
    )
    base = jsonschema.validators.validator_for(schema)
    guarded = jsonschema.validators.extend(base, {k: budget.wrap(f) for k, f in base.VALIDATORS.items()})
    return guarded(schema, registry=Registry(retrieve=_refuse_retrieval)), budget


def schema_errors(schema: dict[str, Any], instance: Any, **budget: Any) -> list[Any]:
    """All validation errors of ``instance`` (sorted by path), within the budget.

    Raises :class:`BudgetExceeded` or :class:`SchemaRefError`; never recurses without bound.
    """
    from jsonschema.exceptions import _RefResolutionError
    from referencing.exceptions import Unresolvable

    validator, clock = _budgeted(schema, **budget)
    _route_schema_regexes()
    _ACTIVE.budget = clock
    try:
        errors = list(validator.iter_errors(instance))
    except (Unresolvable, _RefResolutionError) as exc:
        raise SchemaRefError(f"$ref {getattr(exc, 'ref', '') or str(exc)!r} is not inside the schema") from None
    except RecursionError:
        raise BudgetExceeded("schema validation recursed too deep") from None
    finally:
        _ACTIVE.budget = None
    return sorted(errors, key=lambda e: [str(p) for p in e.absolute_path])


def check_schema(schema: dict[str, Any]) -> None:
    """Is ``schema`` a valid JSON Schema whose ``$ref``s resolve locally? ``ValueError`` if not.

    Checked against its metaschema (shipped with ``jsonschema``), then once against an
    empty object so that a ``$ref`` to a URL or to nowhere is reported when the tests file
    loads, not when the first answer arrives.
    """
    import jsonschema

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ValueError(f"invalid JSON Schema: {exc.message}") from None
    except RecursionError:
        raise ValueError("JSON Schema nests too deep") from None
    for probe in ({}, [], "", 0, None):
        try:
            schema_errors(schema, probe)
        except SchemaRefError as exc:
            raise ValueError(str(exc)) from None
        except BudgetExceeded:
            raise ValueError("JSON Schema refers to itself without end (or is too costly)") from None
