"""Aggregates behind the browse table, the skill pages and the leaderboard, computed once.

With 1,000 skills and 100,000 result rows nothing may be recomputed per keystroke, so
everything the views show is computed here, vectorised with pandas, when a library is
loaded (and cached with it):

* per skill x model x condition: answered calls, passes, errors, pass rate with the 95%
  Wilson interval (:func:`upskill_hub.lift.figures.intervals.wilson_bounds`, the CLI's own code);
* per skill x model: lift = with-skill minus baseline pass rate, **paired over cases**
  (each case's pass rate averaged over its repeats and runs), with the 95% interval,
  p-value and ``conclusive`` flag of :func:`upskill_hub.lift.figures.intervals.paired_lift`, the
  same code the CLI and ``summary.json`` use, called once for all skill x model pairs;
* per skill: the best lift and the model it was measured on;
* per skill x model: the trigger figures (recall and false-trigger rate with their Wilson
  intervals) of the skill's newest run that measured triggering, read from the ``runs``
  table where ``eval --mode catalog`` and ``triggers`` record them.

A catalog-mode (or harness) answer is a different measurement from an injected one, so
its rows are never pooled with them: such a model is shown as ``model (catalog)`` beside
``model`` (:attr:`Aggregates.labels` maps each label back to model and mode). Rows written
before modes existed have no mode and are injected ones.

Rows are pooled across runs like :func:`upskill_hub.lift.figures.stats.independent_rows`
(cached answers dropped, as they repeat the run that paid for them), and only rows of the
skill's current version count when there are any (a changed skill is a different skill);
otherwise its older results are shown, marked as such.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from upskill_hub._util.percent import points, rate
from upskill_hub.lift.figures.intervals import effective_counts, paired_lift, wilson_bounds
from upskill_hub.space.security import security_cell, security_rank

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from upskill_hub.space.security import SkillScan

#: The browse table shows the description on one line; the skill page shows all of it.
DESCRIPTION_CHARS = 100


def _isnan(x) -> bool:
    return x is None or (isinstance(x, float) and x != x)


#: ``62% [41%, 80%]``: the CLI's formatter, so both show the same text for the same data.
fmt_rate = rate


def fmt_lift(lift, lo=None, hi=None) -> str:
    """Lift in percentage points with its interval: ``+25 pts [+5, +45]``, as the CLI's report writes it."""
    return points(lift, lo, hi)


@dataclass
class Aggregates:
    conditions: (
        pd.DataFrame
    )  # skill_name, model, condition, n, passed, errors, pass_rate, ci_low, ci_high, mean_tokens, mean_cost
    lifts: (
        pd.DataFrame
    )  # skill_name, model, lift, ci_low, ci_high, p_value, conclusive, n_cases, token_savings
    skills: pd.DataFrame  # the browse table, one row per skill (see ``browse_columns``)
    skill_index: dict[str, int] = field(default_factory=dict)
    models: list[str] = field(default_factory=list)
    #: skill_name, model, recall, recall_ci_low, recall_ci_high, false_trigger_rate, fpr_ci_low,
    #: fpr_ci_high, triggered_should, n_should, triggered_should_not, n_should_not, f1, run_id
    triggers: pd.DataFrame | None = None
    #: model label shown -> (model, mode): ``"m (catalog)"`` -> ``("m", "catalog")``.
    labels: dict[str, tuple[str, str]] = field(default_factory=dict)


def _labelled(results: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, tuple[str, str]]]:
    """``results`` with each model renamed to its label, and the labels' meaning."""
    if "mode" not in results.columns or not len(results):
        models = results["model"].astype(str).unique() if len(results) else []
        return results, {m: (m, "inject") for m in models}
    mode = results["mode"].where(results["mode"].notna(), "inject").astype(str)
    model = results["model"].astype(str)
    label = model.where(mode == "inject", model + " (" + mode + ")")
    pairs = {lb: (m, md) for lb, m, md in zip(label, model, mode, strict=True)}
    return results.assign(model=label), pairs


#: Largest ``triggers`` list read from one run row (a hostile row can hold any number).
MAX_TRIGGER_MODELS = 200


def trigger_table(runs: pd.DataFrame | None) -> pd.DataFrame:
    """Per skill x model: the trigger figures of the newest run of the skill that has some."""
    import pandas as pd

    cols = [
        "skill_name", "model", "recall", "recall_ci_low", "recall_ci_high", "false_trigger_rate", "fpr_ci_low",
        "fpr_ci_high", "triggered_should", "n_should", "triggered_should_not", "n_should_not", "f1", "run_id",
    ]  # fmt: skip
    if runs is None or not len(runs) or "triggers" not in runs.columns:
        return pd.DataFrame(columns=cols)
    have = runs[runs["triggers"].map(lambda t: t is not None and len(t) > 0)]
    if not len(have):
        return pd.DataFrame(columns=cols)
    have = have.assign(
        _ts=have["timestamp"].fillna("").astype(str), _id=have["run_id"].fillna("").astype(str)
    )
    newest = have.sort_values(["_ts", "_id"], kind="stable").groupby("skill_name", sort=True).tail(1)
    out = []
    for run in newest.itertuples(index=False):
        for t in list(run.triggers)[:MAX_TRIGGER_MODELS]:
            if isinstance(t, dict) and t.get("model") is not None:
                out.append(
                    {**{c: t.get(c) for c in cols}, "skill_name": run.skill_name, "run_id": run.run_id}
                )
    return pd.DataFrame(out, columns=cols)


def _current_rows(skills: pd.DataFrame, results: pd.DataFrame) -> pd.DataFrame:
    """Independent rows of each skill's current version (or all its rows if none match)."""
    import numpy as np

    r = results
    if "cached" in r.columns:
        r = r[~r["cached"].fillna(False).astype(bool)]
    current = dict(zip(skills["name"], skills["version"], strict=False))
    cur = r["skill_name"].map(current)
    match = (r["skill_version"] == cur).to_numpy()
    any_match = (
        pd_series(match, r.index).groupby(r["skill_name"]).transform("any").to_numpy()
        if len(r)
        else np.zeros(0, bool)
    )
    keep = match | ~any_match
    out = r[keep].copy()
    out["current_version"] = match[keep]
    return out


def pd_series(values, index):
    import pandas as pd

    return pd.Series(values, index=index)


def compute_aggregates(
    skills: pd.DataFrame,
    results: pd.DataFrame,
    runs: pd.DataFrame | None = None,
    security: dict[str, SkillScan] | None = None,
) -> Aggregates:
    """All the numbers the Space shows, from the skills table, the slim results rows and the runs.

    ``security`` (skill name -> its scan, :func:`upskill_hub.space.security.read_scans`) gives the
    Browse row its Security cell; a skill without a scan reads "not scanned".
    """
    import numpy as np
    import pandas as pd

    results, labels = _labelled(results)
    r = _current_rows(skills, results)
    answered_mask = r["passed"].notna() & r["error"].isna()
    r = r.assign(
        answered=answered_mask,
        pass_f=r["passed"].astype("float64").where(answered_mask),
        errored=r["error"].notna(),
        tokens=(
            r["input_tokens"].astype("float64").fillna(0) + r["output_tokens"].astype("float64").fillna(0)
        ).where(answered_mask & (r["input_tokens"].notna() | r["output_tokens"].notna())),
        cost=(r["cost_usd"] if "cost_usd" in r.columns else pd.Series(np.nan, index=r.index))
        .astype("float64")
        .where(answered_mask),
    )

    keys = ["skill_name", "model", "condition"]
    g = r.groupby(keys, sort=True)
    cond = g.agg(
        n=("answered", "sum"),
        passed=("pass_f", "sum"),
        errors=("errored", "sum"),
        mean_tokens=("tokens", "mean"),
        mean_cost=("cost", "mean"),
        current_version=("current_version", "all"),
    ).reset_index()
    cond["n"] = cond["n"].astype(int)
    cond["passed"] = cond["passed"].astype(int)
    cond["errors"] = cond["errors"].astype(int)
    with np.errstate(invalid="ignore", divide="ignore"):
        cond["pass_rate"] = np.where(cond["n"] > 0, cond["passed"] / cond["n"].where(cond["n"] > 0), np.nan)
    cond["ci_low"], cond["ci_high"] = wilson_bounds(cond["passed"].to_numpy(), cond["n"].to_numpy())

    # Paired lift: per case pass rate in each condition, then the difference per case.
    per_case = (
        r[r["answered"]]
        .groupby(["skill_name", "model", "case_id", "condition"], sort=False)["pass_f"]
        .agg(["mean", "size"])
        .unstack("condition")
    )
    pair_keys = ["skill_name", "model"]
    if {("mean", "baseline"), ("mean", "with_skill")} <= set(per_case.columns):
        paired_cases = per_case.dropna()
        diff = paired_cases[("mean", "with_skill")] - paired_cases[("mean", "baseline")]
        calls = paired_cases[[("size", "baseline"), ("size", "with_skill")]].min(axis=1)
    else:
        diff = pd.Series(dtype="float64", index=per_case.index[:0])
        calls = diff.copy()
    # Discordance sums per skill x model, then paired_lift once for every pair.
    lifts = pd.DataFrame(
        {
            "b": diff.clip(lower=0).groupby(level=pair_keys, sort=True).sum(),
            "c": (-diff).clip(lower=0).groupby(level=pair_keys, sort=True).sum(),
            "sq": (diff * diff).groupby(level=pair_keys, sort=True).sum(),
            "runs": calls.groupby(level=pair_keys, sort=True).min(),
            "n_cases": diff.groupby(level=pair_keys, sort=True).size(),
        }
    ).reset_index()
    eff = effective_counts(lifts["b"], lifts["c"], lifts["sq"], lifts["n_cases"], lifts["runs"])
    res = paired_lift(*eff)
    lifts["lift"], lifts["ci_low"], lifts["ci_high"] = res.lift, res.ci_low, res.ci_high
    lifts["p_value"], lifts["conclusive"] = res.p_value, res.conclusive
    lifts = lifts.drop(columns=["b", "c", "sq", "runs"])
    lifts["n_cases"] = lifts["n_cases"].astype(int)
    tok = cond.pivot_table(index=["skill_name", "model"], columns="condition", values="mean_tokens")
    if {"baseline", "with_skill"} <= set(tok.columns):
        savings = (tok["baseline"] - tok["with_skill"]).rename("token_savings").reset_index()
        lifts = lifts.merge(savings, on=["skill_name", "model"], how="left")
    else:
        lifts["token_savings"] = np.nan
    lifts["text"] = [
        fmt_lift(a, b, c) for a, b, c in zip(lifts["lift"], lifts["ci_low"], lifts["ci_high"], strict=True)
    ]

    # Browse table: one row per skill with its best lift.
    browse = skills[["name", "description", "version", "token_estimate", "n_cases"]].copy()
    if len(lifts):
        best_idx = lifts.groupby("skill_name")["lift"].idxmax().dropna()
        best = lifts.loc[best_idx.astype(int), ["skill_name", "lift", "ci_low", "ci_high", "model"]]
        best = best.rename(
            columns={
                "skill_name": "name",
                "lift": "best_lift",
                "ci_low": "best_lift_low",
                "ci_high": "best_lift_high",
                "model": "best_model",
            }
        )
        browse = browse.merge(best, on="name", how="left")
    else:
        for c in ("best_lift", "best_lift_low", "best_lift_high"):
            browse[c] = np.nan
        browse["best_model"] = None
    counts = r.groupby("skill_name").size().rename("n_results")
    browse = browse.merge(counts, left_on="name", right_index=True, how="left")
    browse["n_results"] = browse["n_results"].fillna(0).astype(int)
    # Precomputed haystack: search is a substring test on one lowercase column.
    browse["haystack"] = (browse["name"] + "\n" + browse["description"]).str.lower()
    # Display texts, formatted once (a keystroke only filters and slices).
    browse["short_description"] = [
        d if len(d) <= DESCRIPTION_CHARS else d[: DESCRIPTION_CHARS - 1] + "…" for d in browse["description"]
    ]
    browse["best_lift_text"] = [
        fmt_lift(a, b, c)
        for a, b, c in zip(
            browse["best_lift"], browse["best_lift_low"], browse["best_lift_high"], strict=True
        )
    ]
    browse["best_model_text"] = browse["best_model"].fillna("").astype(str)
    trig = trigger_table(runs)
    best_trig = dict(zip(*_best_triggers(trig).to_dict("list").values(), strict=True)) if len(trig) else {}
    browse["triggers_text"] = [best_trig.get(n, "–") for n in browse["name"]]
    scans = security or {}
    browse["security_text"] = [security_cell(scans.get(n)) for n in browse["name"]]
    browse["security_rank"] = [security_rank(scans.get(n)) for n in browse["name"]]
    browse = browse.reset_index(drop=True)
    index = {n: i for i, n in enumerate(skills["name"])}
    models = sorted(set(cond["model"])) if len(cond) else []
    return Aggregates(
        conditions=cond,
        lifts=lifts,
        skills=browse,
        skill_index=index,
        models=models,
        triggers=trig,
        labels=labels,
    )


def fmt_triggers(recall, false_rate) -> str:
    """``70% / 20%``: recall on should-trigger queries / false-trigger rate on the rest."""

    def one(x) -> str:
        return "–" if _isnan(x) else f"{float(x) * 100:.0f}%"

    return f"{one(recall)} / {one(false_rate)}"


def _best_triggers(trig: pd.DataFrame) -> pd.DataFrame:
    """Per skill, the browse cell: the model with the highest recall (then fewest false triggers)."""
    import pandas as pd

    if not len(trig):
        return pd.DataFrame({"name": pd.Series(dtype=str), "triggers_text": pd.Series(dtype=str)})
    t = trig.assign(
        _r=pd.to_numeric(trig["recall"], errors="coerce").fillna(-1),
        _f=pd.to_numeric(trig["false_trigger_rate"], errors="coerce").fillna(2),
    )
    best = (
        t.sort_values(["skill_name", "_r", "_f"], ascending=[True, False, True], kind="stable")
        .groupby("skill_name")
        .head(1)
    )
    return pd.DataFrame(
        {
            "name": best["skill_name"].to_numpy(),
            "triggers_text": [
                fmt_triggers(a, b) for a, b in zip(best["recall"], best["false_trigger_rate"], strict=True)
            ],
        }
    )
