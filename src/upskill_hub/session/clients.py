"""The models of one eval session: their clients, their prices and the catalog's other skills.

Both eval kinds (the lift eval and the trigger eval) open their models here, so a spec is
parsed, preflighted and priced the same way whichever question is asked, and every front
end (eval, triggers, tune) resolves the catalog's distractor skills the same way.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from upskill_hub.errors import OptionError, PathError, UpskillError
from upskill_hub.models.base import GenerationParams, ModelClient
from upskill_hub.models.spec import ModelSpec
from upskill_hub.session.catalog import Catalog
from upskill_hub.skill import Skill, find_skills, require_skill


def generation_params(params: GenerationParams | dict[str, Any] | None) -> GenerationParams:
    if params is None:
        return GenerationParams()
    if isinstance(params, GenerationParams):
        return params
    d = dict(params)
    if "stop" in d and d["stop"] is not None:
        d["stop"] = tuple(d["stop"])
    try:
        p = GenerationParams(**{k: v for k, v in d.items() if v is not None})
    except TypeError as exc:
        raise UpskillError(f"bad generation parameters: {exc}") from None
    if not 0 <= p.temperature <= 2:
        raise OptionError("temperature", p.temperature, f"must be between 0 and 2, got {p.temperature}")
    if p.max_tokens < 1:
        raise OptionError("max_tokens", p.max_tokens, f"must be at least 1, got {p.max_tokens}")
    return p


def open_clients(
    specs: Sequence[str | ModelSpec | ModelClient],
    base_url: str | None,
    *,
    timeout: float,
    max_retries: int,
    connections: int | None = None,
) -> list[ModelClient]:
    """Parse every spec, then preflight each (key, endpoint, local install), then build clients.

    All specs parse before any preflight touches the network, and every check passes
    before any client exists, so bad input never costs a call.
    """
    from upskill_hub import models

    parsed = [models.parse_model_spec(s, base_url) if isinstance(s, str) else s for s in specs]
    checked = [p if isinstance(p, ModelClient) else models.preflight(p) for p in parsed]
    clients = [
        p
        if isinstance(p, ModelClient)
        else models.create_client(p, timeout=timeout, max_retries=max_retries, connections=connections)
        for p in checked
    ]
    seen: set[str] = set()
    for c in clients:
        if c.model in seen:
            raise UpskillError(f"model {c.model!r} given twice")
        seen.add(c.model)
    return clients


class RunPrices:
    """Each model's :class:`~upskill_hub.models.pricing.Price`, looked up once per run.

    Looking a price up checks the user's price file (so edits apply at once); at hundreds
    of calls per second that check was a visible share of the runner's CPU. A run takes one
    snapshot instead, and a broken price file fails before the first call, as one line.
    """

    def __init__(self) -> None:
        self._prices: dict[tuple[str, str], Any] = {}

    def price(self, provider: str, model: str):  # -> Price | None
        key = (provider, model)
        if key not in self._prices:
            from upskill_hub.models.pricing import price_for

            self._prices[key] = price_for(model, provider=provider)
        return self._prices[key]

    def __call__(self, provider: str, model: str, usage: Any) -> float | None:
        from upskill_hub.models.pricing import FREE

        price = self.price(provider, model)
        if price is FREE:
            return 0.0
        return None if price is None else price.cost(usage)


def client_label(c: ModelClient) -> str:
    return f"{c.provider}:{c.model}"


async def close_all(clients: list[ModelClient]) -> None:
    for c in clients:
        with contextlib.suppress(Exception):  # closing must not hide the run's outcome
            await c.aclose()


def shipped_skills_dir() -> Path | None:
    """The skills that ship with upskill-hub (package data, or the clone's ``skills/``), if present."""
    from upskill_hub.shipped import shipped_path

    try:
        return shipped_path("skills")
    except UpskillError:
        return None


def load_distractors(distractors: str | Path | None, skill_name: str) -> list[Skill]:
    """The catalog's other skills: every skill under ``distractors`` (default: the shipped
    ones; ``"none"``: no others), minus any named like the skill under test.

    An empty value is refused rather than read as ``Path("")``, the current folder (a
    script's unset variable must not put whatever lies there in the catalog), and so are
    two distractors of one name: the model loads skills by name, so one of them could never
    be loaded. Every front end (eval, triggers, tune) resolves distractors here.
    """
    if isinstance(distractors, str) and distractors.strip().lower() == "none":
        return []
    if isinstance(distractors, str) and not distractors.strip():
        raise OptionError(
            "distractors", distractors, "must name a folder of skills or 'none', not an empty value"
        )
    root = Path(distractors) if distractors is not None else shipped_skills_dir()
    if root is None:
        return []
    if not root.exists():
        raise PathError(root, "does not exist", kind="distractors folder")
    folders = find_skills(root)
    found = [require_skill(p) for p in folders]
    if distractors is not None and not found:
        raise PathError(root, "holds no skill folders (pass a folder of skills, or --distractors none)",
                        kind="distractors folder")  # fmt: skip
    seen: dict[str, Path] = {}
    for folder, s in zip(folders, found, strict=True):
        if s.name == skill_name:
            continue
        if s.name in seen:
            first, again = (f.relative_to(root).as_posix() or "." for f in (seen[s.name], folder))
            raise PathError(
                root, f"two skills named {s.name!r} ({first} and {again}): a model loads skills by name, "
                "so catalog names must be unique; remove or rename one", kind="distractors folder",
            )  # fmt: skip
        seen[s.name] = folder
    return [s for s in found if s.name != skill_name]


@dataclass(frozen=True)
class ConditionCatalogs:
    """catalog mode's catalog per condition, and the system prompt each conversation opens with.

    With the skill: the skill under test first, then the distractors; the baseline: the same
    catalog without it, so the two conditions differ by the skill alone.
    """

    catalogs: dict[str, Catalog]
    systems: dict[str, str]


def build_catalogs(skill: Skill, distractors: str | Path | None, base_system: str) -> ConditionCatalogs:
    """Both conditions' catalogs, built once before the run (the runner only reads them)."""
    full = Catalog.of([skill, *load_distractors(distractors, skill.name)])
    catalogs = {"with_skill": full, "baseline": full.without(skill.name)}
    return ConditionCatalogs(catalogs, {c: cat.system_prompt(base_system) for c, cat in catalogs.items()})
