"""The Gradio layout of the Space. Presentation only: every handler calls the library.

Event handlers carry ``api_name`` s so the app can be driven with ``gradio_client``
(``/load``, ``/search``, ``/open_skill``, ``/leaderboard``, ``/run_eval``,
``/push_results``), which is how the tests exercise it end to end.
"""

# No ``from __future__ import annotations``: Gradio reads the handlers' annotations
# (gr.SelectData, gr.OAuthToken) at runtime to decide what to inject.
import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from upskill_hub._util.percent import count
from upskill_hub._util.redact import redact
from upskill_hub.errors import UpskillError

#: Where the default skills repo comes from: env first, then the file ``space deploy`` writes.
SKILLS_REPO_ENV = "SKILLS_REPO"
CONFIG_FILE = "upskill_space.json"
BROWSE_LIMIT = 50
PAGE_REFRESH_S = 30.0
LIVE_ROWS = 200

INTRO = (
    "# upskill-hub\n"
    "Agent skills and how much each one helps which model: pass rate **with** the skill vs the "
    "same model **without** it (baseline), measured on the skill's own test cases. "
    "Browse the library, compare on the leaderboard, or run an evaluation with your own model keys."
)
PICK_SKILL = (
    "Click a skill in the **Browse** table to open its page here: results, answers, SKILL.md, tests, security, "
    "files."
)
NO_RESULTS = "No results yet: the lift by model (with its 95% interval) appears here once the skill has been evaluated."
NO_ANSWERS = (
    "Baseline and with-skill answers appear here side by side, per test case, once the skill has results."
)
NO_RUN = "Nothing is running. Pick a skill and models, then press Run evaluation: progress and the latest calls show here."
RUN_CHARTS = "When the run finishes, its lift by model and pass rates per condition appear here."
NO_SECURITY = "The skill's security scan (findings, worst first) appears here."
FILE_HEADERS = ["path", "size"]
CASE_HEADERS = ["id", "split", "input", "assertions"]
EVAL_CASE_HEADERS = ["id", "input", "assertions"]
#: Column widths of the two Test cases tables: the input and the assertions get the room.
CASE_WIDTHS = ["12%", "8%", "45%", "35%"]
EVAL_CASE_WIDTHS = ["14%", "48%", "38%"]
FILE_HINT = "Nothing picked yet: choose a file in “Show file” above to read it here."
FILE_PICK_INFO = "The open skill's files (the table above); pick one to read it below."
EVAL_CASES_IDLE = "Pick a library skill above, or paste a SKILL.md, to list its test cases here."
KEYS_NOTE = (
    "Keys are used for this evaluation only: they are sent to the provider you chose, never stored, "
    "logged or pushed. This Space never uses its own keys for your runs."
)


def eval_case_rows(read_skill: Callable[[], Any]) -> list[list[str]]:
    """The Evaluate tab's Test cases rows for the skill ``read_skill`` returns.

    Why a function: a skill not chosen yet is the tab's idle state, not an error; it and a
    real error (an invalid paste) are one row under the table's own headers, never a table
    whose only header is "error".
    """
    try:
        skill = read_skill()
    except UpskillError as exc:
        return [["–", f"Error: {redact(str(exc))}", ""]]
    if skill is None:
        return [["–", EVAL_CASES_IDLE, ""]]
    from upskill_hub.space.views import case_rows

    return case_rows([c.to_dict() for c in skill.meta.cases], split=False)


def default_repo(app_dir: Path | None = None) -> str:
    """``SKILLS_REPO``, else the repo recorded by ``space deploy`` next to the app, else ''."""
    env = os.environ.get(SKILLS_REPO_ENV, "").strip()
    if env:
        return env
    for folder in (app_dir, Path.cwd()):
        if folder is None:
            continue
        cfg = folder / CONFIG_FILE
        if cfg.is_file():
            try:
                return str(json.loads(cfg.read_text(encoding="utf-8")).get("skills_repo") or "")
            except (json.JSONDecodeError, OSError):
                return ""
    return ""


def build_app(repo: str | None = None, *, app_dir: str | Path | None = None):
    """The whole Space as a ``gr.Blocks``; ``repo`` overrides ``SKILLS_REPO``."""
    import gradio as gr
    import pandas as pd

    from upskill_hub.space import (
        answers,
        charts,
        data,
        render,
        routing_view,
        security,
        serving,
        session,
        views,
    )

    operator_repo = (repo or default_repo(Path(app_dir) if app_dir else None)).strip()

    def get_lib(source: str, refresh: bool = False, max_age_s: float = 0.0) -> data.Library:
        source = (source or "").strip()
        # Only the operator's own source may be a local folder; visitors name Hub repos. The Space's
        # own token reads only the operator's repo (token None); visitor-typed repos go anonymous.
        operator = source == operator_repo
        return data.load_library(
            source,
            token=None if operator else False,
            refresh=refresh,
            allow_local=operator,
            max_age_s=max_age_s,
        )

    def error_md(exc: Exception) -> str:
        return f"**Error:** {render.markdown_text(redact(str(exc)))}"

    def browse_frame(lib: data.Library, query="", min_tests=0, with_results=False, sort="best lift"):
        rows = views.search_skills(
            lib.aggregates, query, min_tests=int(min_tests or 0), with_results=bool(with_results), sort=sort
        )
        n = len(rows)
        shown = views.browse_table(rows.head(BROWSE_LIMIT))
        note = f"{n:,} of {count(len(lib.skills), 'skill')} match{'es' if n == 1 else ''}" + (
            f"; showing the first {BROWSE_LIMIT}" if n > BROWSE_LIMIT else ""
        )
        if shown:
            note += " · click a row to open the skill"
        return pd.DataFrame(shown, columns=views.BROWSE_HEADERS), note, [r[0] for r in shown]

    def leaderboard_views(lib: data.Library, sort_by: str = "best", query: str = ""):
        key = ("leaderboard", sort_by or "best", (query or "").strip().lower())
        headers, rows = lib.cached(
            key, lambda: views.leaderboard(lib.aggregates, sort_by=key[1], query=key[2])
        )
        heat = lib.cached(
            ("heatmap", *key[1:]),
            lambda: views.leaderboard_heatmap(lib.aggregates, sort_by=key[1], query=key[2]),
        )
        headers, rows = views.with_security(lib.aggregates, headers, rows)
        return heat, pd.DataFrame(rows, columns=headers)

    # ------------------------------------------------------------------ handlers
    def on_load(source: str, max_age_s: float = 0.0):
        try:
            lib = get_lib(source, refresh=True, max_age_s=max_age_s)
        except UpskillError as exc:
            empty = pd.DataFrame([], columns=views.BROWSE_HEADERS)
            return (error_md(exc), empty, gr.update(choices=[], value=None),
                    gr.update(choices=["best", "name"], value="best"))  # fmt: skip
        table, note, names = browse_frame(lib)
        status = views.library_status(lib, note)
        # The dropdown lists the skills shown (not all 1,000: that payload slows the page); any
        # name can still be typed. No value yet: choosing one loads that skill's cases, work a
        # page view should not do for a tab the visitor may never open.
        return (
            status,
            table,
            gr.update(choices=names, value=None),
            gr.update(choices=["best", "name", *lib.aggregates.models], value="best"),
        )

    def on_search(source: str, query: str, min_tests: float, with_results: bool, sort: str):
        try:
            lib = get_lib(source)
        except UpskillError as exc:
            return pd.DataFrame([], columns=views.BROWSE_HEADERS), error_md(exc)
        table, note, _names = browse_frame(lib, query, min_tests, with_results, sort)
        return table, note

    no_skill = (
        PICK_SKILL, charts.empty("The skill's rendered SKILL.md appears here."),
        pd.DataFrame([], columns=FILE_HEADERS), pd.DataFrame([], columns=CASE_HEADERS),
        pd.DataFrame([], columns=views.RESULT_HEADERS), charts.empty(NO_RESULTS), "",
        gr.update(choices=[], value=None), gr.update(choices=[], value=None), charts.empty(NO_ANSWERS),
    )  # fmt: skip

    def skill_page(lib: data.Library, name: str) -> tuple:
        """What the skill page shows, but the dropdowns' updates: once per skill and library commit."""
        header = views.skill_summary_markdown(lib, name)
        html = render.render_skill_md(data.skill_md_text(lib, name))
        files = pd.DataFrame(data.skill_files(lib, name), columns=FILE_HEADERS)
        cases = data.skill_cases(lib, name)
        cases_df = pd.DataFrame(views.case_rows(cases), columns=CASE_HEADERS)
        table = views.skill_results_table(lib.aggregates, name)
        results = pd.DataFrame(views.results_rows(table), columns=views.RESULT_HEADERS)
        lift_svg, pass_svg = lib.cached(("charts", name), lambda: views.skill_charts(lib.aggregates, name))
        models = [r["model"] for r in table]
        best = lib.aggregates.skills.iloc[lib.aggregates.skill_index[name]]["best_model"]
        model = best if isinstance(best, str) and best in models else (models[0] if models else None)
        answers_view = answers_for(lib, name, model, cases) if model else charts.empty(NO_ANSWERS)
        if not table:
            header += "\n\n_No results for this skill yet: run an evaluation in the **Evaluate** tab._"
        return header, html, files, cases_df, results, lift_svg, pass_svg, tuple(models), model, answers_view

    def on_open(source: str, name: str):
        if not name:
            return no_skill
        try:
            lib = get_lib(source)
            # The data cannot change under a commit: a skill opened again (by anyone) costs a lookup.
            # An unknown name raises, so nothing is kept for it.
            page = lib.cached(("page", name), lambda: skill_page(lib, name))
        except UpskillError as exc:
            return (error_md(exc), *no_skill[1:])
        header, html, files, cases_df, results, lift_svg, pass_svg, models, model, answers_view = page
        return (
            header, html, files, cases_df, results, lift_svg, pass_svg,
            gr.update(choices=list(files["path"]), value=None),
            gr.update(choices=list(models), value=model), answers_view,
        )  # fmt: skip

    def on_security(source: str, name: str):
        """The Security tab (its own event, so ``/open_skill`` keeps its outputs for API callers)."""
        if not name:
            return charts.empty(NO_SECURITY)
        try:
            lib = get_lib(source)
            lib.skill_row(name)  # an unknown name is an error, not "not scanned"
            return security.security_html(lib.security.get(name))
        except UpskillError as exc:
            return charts.empty(f"Error: {redact(str(exc))}")

    def answers_for(lib: data.Library, name: str, model: str, cases: list | None = None) -> str:
        def build() -> str:
            return answers.answers_html(
                cases if cases is not None else data.skill_cases(lib, name),
                answers.answer_rows(lib, name, model),
                model,
            )

        return lib.cached(("answers", name, model), build)

    def on_answers_model(source: str, name: str, model: str):
        if not (name and model):
            return charts.empty(NO_ANSWERS)
        try:
            return answers_for(get_lib(source), name, model)
        except UpskillError as exc:
            return charts.empty(f"Error: {redact(str(exc))}")

    def on_select_row(evt: gr.SelectData):
        row = evt.row_value or []
        name = row[0] if row else None
        if not name:
            return gr.update(), gr.update()
        return gr.update(value=name), gr.Tabs(selected="skill")

    def on_file(source: str, name: str, rel: str):
        if not (name and rel):
            return ""
        try:
            return data.read_skill_file(get_lib(source), name, rel)
        except UpskillError as exc:
            return f"Error: {redact(str(exc))}"

    def on_routing_tab(source: str):
        try:
            lib = get_lib(source)
        except UpskillError as exc:
            return gr.update(choices=[], value=None), charts.empty(f"Error: {redact(str(exc))}")
        models = routing_view.routing_models(lib)
        model = models[0] if models else None
        return gr.update(choices=models, value=model), on_routing(source, model)

    def on_routing(source: str, model: str | None):
        try:
            lib = get_lib(source)
            return lib.cached(("routing", model), lambda: routing_view.routing_html(lib, model))
        except UpskillError as exc:
            return charts.empty(f"Error: {redact(str(exc))}")

    def on_leaderboard(source: str, sort_by: str, query: str):
        try:
            return leaderboard_views(get_lib(source), sort_by, query)
        except UpskillError as exc:
            return charts.empty(f"Error: {redact(str(exc))}"), pd.DataFrame([[str(exc)]], columns=["error"])

    def on_eval_cases(source: str, mode: str, name: str, pasted: str, meta: str):
        def read():
            chosen = (pasted or "").strip() if mode == "paste" else name
            return _eval_skill(source, mode, name, pasted, meta, workdir=None) if chosen else None

        return pd.DataFrame(eval_case_rows(read), columns=EVAL_CASE_HEADERS)

    def _eval_skill(source, mode, name, pasted, meta, workdir):
        import tempfile

        def scratch(prefix: str):
            """``workdir``, else a temporary folder removed once the skill is read."""
            if workdir:
                return contextlib.nullcontext(workdir)
            return tempfile.TemporaryDirectory(prefix=prefix, ignore_cleanup_errors=True)

        if mode == "paste":
            if not (pasted or "").strip():
                raise UpskillError("paste a SKILL.md (or upload one) first")
            with scratch("upskill-paste-") as wd:
                return session.skill_from_text(pasted, meta, Path(wd))
        if not name:
            raise UpskillError("pick a skill from the library first")
        lib = get_lib(source)
        with scratch("upskill-lib-") as wd:
            skill = data.load_library_skill(lib, name, Path(wd) / "library")
        if (meta or "").strip():
            from upskill_hub.cases import CasesError, load_meta_text

            if len(meta.encode("utf-8")) > session.MAX_SKILL_BYTES:
                raise UpskillError(f"skill_meta.json is larger than {session.MAX_SKILL_BYTES // 1000} kB")
            try:
                skill.meta = load_meta_text(meta)
            except CasesError as exc:
                raise UpskillError(f"test cases: {exc}") from None
        return skill

    def on_upload(file):
        if file is None:
            return gr.update()
        path = Path(file if isinstance(file, str) else file.name)
        if path.stat().st_size > session.MAX_SKILL_BYTES:
            return gr.update(value=f"(file larger than {session.MAX_SKILL_BYTES // 1000} kB)")
        return gr.update(value=path.read_text(encoding="utf-8", errors="replace"))

    def on_run(
        source, mode, name, pasted, meta, models_text, base_url, hf_token, openai_key, anthropic_key,
        endpoint_key, runs, oauth_token: gr.OAuthToken | None = None,
    ):  # fmt: skip
        # Inference Providers: a pasted token wins, else the signed-in visitor's own OAuth token.
        hf = (hf_token or "").strip() or (oauth_token.token if oauth_token is not None else "")
        keys = session.SessionKeys(
            hf_token=hf,
            openai_key=(openai_key or "").strip(),
            anthropic_key=(anthropic_key or "").strip(),
            endpoint_key=(endpoint_key or "").strip(),
        )
        secrets = keys.secrets()
        live_cols = session.ROW_HEADERS
        empty_sum = gr.update(value=pd.DataFrame([], columns=session.SUMMARY_HEADERS), visible=False)
        no_charts = (charts.empty(RUN_CHARTS), "")
        try:
            wd = session.new_workdir()
            skill = _eval_skill(source, mode, name, pasted, meta, workdir=wd)
            clients = session.build_clients(session.split_specs(models_text), keys, base_url=base_url or "")
            ev = session.EvalSession(skill, clients, runs=int(runs or 1), secrets=secrets, workdir=wd).start()
        except UpskillError as exc:
            yield (f"**Error:** {render.escape(redact(str(exc), secrets))}", charts.empty(NO_RUN),
                   gr.update(value=pd.DataFrame([], columns=live_cols), visible=False), empty_sum, *no_charts, "")  # fmt: skip
            return
        for upd in ev.updates():
            # The newest LIVE_ROWS calls: re-sending thousands of rows on every update would be quadratic.
            live = gr.update(
                value=pd.DataFrame([session.row_cells(r, secrets)
                                    for r in reversed(upd.rows[-LIVE_ROWS:])], columns=live_cols),
                visible=bool(upd.rows),
            )  # fmt: skip
            bar = charts.progress_bar(upd.done, upd.total)
            if not upd.finished:
                yield (f"Running **{render.escape(skill.name)}**: {upd.done}/{upd.total} calls done",
                       bar, live, empty_sum, *no_charts, "")  # fmt: skip
                continue
            if upd.error:
                yield f"**Error:** {render.escape(upd.error)}", bar, live, empty_sum, *no_charts, ""
                return
            result = upd.result
            frame = session.summary_frame(result.summary)
            lifts = pd.DataFrame(
                [(x.model, x.lift, x.ci_low, x.ci_high) for x in result.summary.lifts],
                columns=["model", "lift", "ci_low", "ci_high"],
            )
            summary = pd.DataFrame(session.summary_rows(result.summary), columns=session.SUMMARY_HEADERS)
            run_id = result.summary.run_id
            yield (
                f"Finished **{render.escape(skill.name)}**: {count(upd.done, 'call')} · run `{run_id}`",
                bar,
                live,
                gr.update(value=summary, visible=True),
                views.lift_chart_for(lifts),
                views.pass_chart_for(frame),
                session.remember_run(result.run_dir),
            )

    def on_push(source: str, run_handle: str, oauth_token: gr.OAuthToken | None = None):
        # ``run_handle`` is what on_run gave this visitor: a handle, never a path.
        if not run_handle:
            return "Run an evaluation first."
        token = oauth_token.token if oauth_token is not None else None
        try:
            return session.push_run(session.run_for(run_handle), (source or "").strip(), token)
        except UpskillError as exc:
            return f"Error: {redact(str(exc), [token] if token else [])}"

    # ------------------------------------------------------------------ layout
    # Closing the Blocks builds its server app (a second time at launch): both quiet.
    blocks = gr.Blocks(
        title="upskill-hub: skills and their lift", analytics_enabled=serving.analytics_enabled()
    )
    with serving.quiet_mocked_sign_in(), blocks as demo:
        gr.Markdown(INTRO)
        with gr.Row():
            repo_box = gr.Textbox(
                value=operator_repo, label="Skills dataset (Hub repo OWNER/NAME)", scale=4, elem_id="repo-box"
            )
            load_btn = gr.Button("Load", scale=1, elem_id="load-btn")
        status = gr.Markdown("Loading…", elem_id="status")
        # The open skill's name: set by clicking a row (or by API callers of /open_skill).
        skill_pick = gr.Textbox(visible=False, elem_id="skill-pick")
        with gr.Tabs() as tabs:
            with gr.Tab("Browse", id="browse"):
                with gr.Row():
                    query = gr.Textbox(
                        label="Search skills",
                        placeholder="name or description",
                        scale=3,
                        elem_id="search-box",
                    )
                    min_tests = gr.Number(label="Min. tests", value=0, precision=0, minimum=0, scale=1)
                    with_results = gr.Checkbox(label="With results only", value=False, scale=1)
                    sort = gr.Dropdown(list(views.SORTS), value="best lift", label="Sort by", scale=1)
                match_note = gr.Markdown("", elem_id="match-note")
                skills_table = gr.Dataframe(
                    headers=views.BROWSE_HEADERS, interactive=False, wrap=False, elem_id="skills-table",
                    max_height=460, column_widths=views.BROWSE_WIDTHS, show_label=False,
                )  # fmt: skip
            with gr.Tab("Skill", id="skill"):
                with gr.Row(equal_height=False):
                    skill_header = gr.Markdown(PICK_SKILL, elem_id="skill-header")
                    eval_this = gr.Button(
                        "Evaluate this skill", elem_id="eval-this", size="sm", scale=0, min_width=160
                    )
                with gr.Tabs():
                    with gr.Tab("Results"):
                        with gr.Row():
                            lift_chart = gr.HTML(charts.empty(NO_RESULTS), elem_id="lift-chart")
                            pass_chart = gr.HTML("", elem_id="pass-chart")
                        results_table = gr.Dataframe(
                            headers=views.RESULT_HEADERS, interactive=False, elem_id="skill-results", show_label=False,
                            wrap=True,
                        )  # fmt: skip
                    with gr.Tab("Answers", id="answers"):
                        # Choices set per skill; any value accepted (the handler checks it), so a
                        # session Gradio has dropped (serving.session_capacity) still works.
                        answers_model = gr.Dropdown(
                            [], label="Model", elem_id="answers-model", allow_custom_value=True
                        )
                        answers_html = gr.HTML(charts.empty(NO_ANSWERS), elem_id="answers")
                    with gr.Tab("SKILL.md"):
                        skill_html = gr.HTML(
                            charts.empty("The skill's rendered SKILL.md appears here."), elem_id="skill-md"
                        )
                    with gr.Tab("Test cases"):
                        cases_table = gr.Dataframe(
                            headers=CASE_HEADERS, interactive=False, wrap=True, elem_id="skill-cases",
                            column_widths=CASE_WIDTHS, show_label=False,
                        )  # fmt: skip
                    with gr.Tab("Security", id="security"):
                        security_view = gr.HTML(charts.empty(NO_SECURITY), elem_id="skill-security")
                    with gr.Tab("Files"):
                        files_table = gr.Dataframe(
                            headers=FILE_HEADERS, interactive=False, elem_id="skill-files"
                        )
                        file_pick = gr.Dropdown(
                            [], label="Show file", elem_id="file-pick", allow_custom_value=True,
                            info=FILE_PICK_INFO,
                        )  # fmt: skip
                        # Plain textboxes, not gr.Code: the code editor roughly doubles the page's load time.
                        file_view = gr.Textbox(
                            label="File", interactive=False, lines=12, max_lines=40, placeholder=FILE_HINT,
                            elem_id="file-view",
                        )  # fmt: skip
            with gr.Tab("Leaderboard", id="leaderboard") as lb_tab:
                with gr.Row():
                    lb_sort = gr.Dropdown(
                        ["best", "name"], value="best", label="Sort by lift of", allow_custom_value=True
                    )  # the models are added per library; the handler checks the value
                    lb_query = gr.Textbox(label="Filter skills")
                lb_heat = gr.HTML(
                    charts.empty("The heat map of lift (skills x models) appears here."), elem_id="heatmap"
                )
                lb_table = gr.Dataframe(
                    headers=["skill", "best lift"],
                    interactive=False,
                    elem_id="leaderboard-table",
                    max_height=600,
                )
                gr.Markdown(
                    "Lift = with-skill minus baseline pass rate in percentage points, paired over test cases, "
                    "with a 95% interval (Tango's paired score interval, as in the CLI); `–` = not measured."
                )
            with gr.Tab("Routing", id="routing") as routing_tab:
                routing_model = gr.Dropdown(
                    [], label="Model", elem_id="routing-model", allow_custom_value=True
                )
                routing_view_html = gr.HTML(charts.empty(routing_view.NO_ROUTING), elem_id="routing")
            with gr.Tab("Evaluate", id="evaluate"):
                with gr.Row():
                    mode = gr.Radio(
                        [("Skill from the library", "library"), ("Paste / upload a SKILL.md", "paste")],
                        value="library", label="Skill",
                    )  # fmt: skip
                    eval_skill = gr.Dropdown(
                        [], label="Library skill", elem_id="eval-skill", allow_custom_value=True
                    )
                with gr.Accordion("Paste or upload a skill", open=False):
                    pasted = gr.Textbox(label="SKILL.md", lines=10, max_lines=40, elem_id="pasted-skill")
                    upload = gr.UploadButton(
                        "Upload SKILL.md",
                        file_types=[".md"],
                        type="filepath",
                        size="sm",
                        elem_id="upload-skill",
                    )
                    meta = gr.Textbox(
                        label="skill_meta.json (test cases; optional for library skills)",
                        lines=6,
                        max_lines=30,
                    )
                cases_view = gr.Dataframe(
                    headers=EVAL_CASE_HEADERS, interactive=False, wrap=True, label="Test cases and assertions",
                    elem_id="eval-cases", column_widths=EVAL_CASE_WIDTHS,
                )  # fmt: skip
                models_text = gr.Textbox(
                    label="Models (one per line)",
                    placeholder="hf:Qwen/Qwen2.5-7B-Instruct\nopenai:gpt-4.1-mini\nanthropic:claude-haiku-4-5\nmy-model  (with a base URL)",
                    lines=3,
                    elem_id="models-box",
                )
                gr.Markdown(KEYS_NOTE)
                with gr.Row():
                    hf_token = gr.Textbox(
                        label="Hugging Face token (Inference Providers; empty = your sign-in)",
                        type="password",
                    )
                    openai_key = gr.Textbox(label="OpenAI key", type="password")
                    anthropic_key = gr.Textbox(label="Anthropic key", type="password")
                with gr.Row():
                    base_url = gr.Textbox(label="OpenAI-compatible base URL (optional)", elem_id="base-url")
                    endpoint_key = gr.Textbox(label="Key for that endpoint (optional)", type="password")
                    runs = gr.Number(
                        1, minimum=1, maximum=session.MAX_RUNS, precision=0, label="Runs per case"
                    )
                run_btn = gr.Button("Run evaluation", variant="primary", elem_id="run-btn")
                run_status = gr.Markdown("", elem_id="run-status")
                run_progress = gr.HTML(charts.empty(NO_RUN), elem_id="run-progress")
                live_table = gr.Dataframe(
                    headers=session.ROW_HEADERS, interactive=False, label="Latest calls (newest first)",
                    elem_id="live-table", max_height=300, visible=False,
                )  # fmt: skip
                summary_table = gr.Dataframe(
                    headers=session.SUMMARY_HEADERS, interactive=False, label="Result", elem_id="summary-table",
                    visible=False,
                )  # fmt: skip
                with gr.Row():
                    run_lift = gr.HTML(charts.empty(RUN_CHARTS), elem_id="run-lift-chart")
                    run_pass = gr.HTML("", elem_id="run-pass-chart")
                run_handle = gr.Textbox(visible=False)  # a handle from session.remember_run, never a path
                with gr.Row():
                    if serving.sign_in_available():
                        gr.LoginButton()  # needs gradio[oauth] (the space extra); real sign-in on a Space
                    else:
                        gr.Markdown(
                            "Sign-in (to push results) works on a Space, or locally after `hf auth login`."
                        )
                    push_btn = gr.Button("Push results to the dataset", elem_id="push-btn")
                push_status = gr.Markdown("")

        # Events that only read the (cached, shared) library run concurrently, in one bounded pool
        # sized for the machine; the evaluation and the push keep their own limits below.
        read = {"concurrency_limit": serving.read_concurrency(), "concurrency_id": serving.READ_GROUP}
        load_outputs = [status, skills_table, eval_skill, lb_sort]
        load_btn.click(on_load, [repo_box], load_outputs, api_name="load", **read)
        repo_box.submit(on_load, [repo_box], load_outputs, api_name=False, **read)
        # A page view re-checks the dataset's commit at most every PAGE_REFRESH_S; "Load" always does.
        # Unqueued: the page's first data comes in one request (no queue join + stream); the work is a cache hit.
        demo.load(
            lambda src: on_load(src, PAGE_REFRESH_S), [repo_box], load_outputs, api_name=False, queue=False
        )

        search_inputs = [repo_box, query, min_tests, with_results, sort]
        # Search skips the queue: a keystroke is a filter over precomputed rows (no slow work).
        query.change(on_search, search_inputs, [skills_table, match_note], api_name="search",
                     trigger_mode="always_last", show_progress="hidden", queue=False)  # fmt: skip
        for comp in (min_tests, with_results, sort):
            comp.change(on_search, search_inputs, [skills_table, match_note], api_name=False,
                        show_progress="hidden", **read)  # fmt: skip

        page_outputs = [skill_header, skill_html, files_table, cases_table, results_table, lift_chart, pass_chart,
                        file_pick, answers_model, answers_html]  # fmt: skip
        skill_pick.change(on_open, [repo_box, skill_pick], page_outputs, api_name="open_skill", **read)
        skill_pick.change(
            on_security, [repo_box, skill_pick], [security_view], api_name="skill_security", **read
        )
        # A click on a row opens that skill on the Skill tab.
        skills_table.select(on_select_row, None, [skill_pick, tabs], api_name=False, queue=False,
                            show_progress="hidden")  # fmt: skip
        answers_model.input(on_answers_model, [repo_box, skill_pick, answers_model], [answers_html],
                            api_name="answers", **read)  # fmt: skip
        file_pick.change(
            on_file, [repo_box, skill_pick, file_pick], [file_view], api_name="skill_file", **read
        )

        def go_eval(name):
            return gr.update(value=name), gr.update(value="library"), gr.Tabs(selected="evaluate")

        eval_this.click(go_eval, [skill_pick], [eval_skill, mode, tabs], api_name=False, **read)
        case_inputs = [repo_box, mode, eval_skill, pasted, meta]
        for comp in (eval_skill, mode, meta):
            comp.change(
                on_eval_cases, case_inputs, [cases_view], api_name=False, show_progress="hidden", **read
            )
        pasted.blur(on_eval_cases, case_inputs, [cases_view], api_name=False, **read)
        upload.upload(on_upload, [upload], [pasted], api_name=False, **read)

        run_btn.click(
            on_run,
            [
                repo_box,
                mode,
                eval_skill,
                pasted,
                meta,
                models_text,
                base_url,
                hf_token,
                openai_key,
                anthropic_key,
                endpoint_key,
                runs,
            ],  # fmt: skip
            [run_status, run_progress, live_table, summary_table, run_lift, run_pass, run_handle],
            api_name="run_eval",
            # Room for the evaluations that run and as many again, so a visitor past
            # session.MAX_EVALS reaches the handler and is refused at once (SECURITY.md)
            # instead of waiting, unannounced, in Gradio's queue.
            concurrency_limit=2 * session.MAX_EVALS,
            show_progress="hidden",  # the bar in run_progress says how far it is
        )
        # A push writes to the Hub: one at a time, as before.
        push_btn.click(
            on_push, [repo_box, run_handle], [push_status], api_name="push_results", concurrency_limit=1
        )
        lb_inputs = [repo_box, lb_sort, lb_query]
        lb_sort.change(on_leaderboard, lb_inputs, [lb_heat, lb_table], api_name="leaderboard", **read)
        lb_tab.select(
            on_leaderboard, lb_inputs, [lb_heat, lb_table], api_name=False, **read
        )  # built when first shown
        lb_query.change(on_leaderboard, lb_inputs, [lb_heat, lb_table], api_name=False, trigger_mode="always_last",
                        **read)  # fmt: skip
        routing_tab.select(
            on_routing_tab, [repo_box], [routing_model, routing_view_html], api_name=False, **read
        )
        routing_model.input(
            on_routing, [repo_box, routing_model], [routing_view_html], api_name="routing", **read
        )
    serving.launch_defaults(demo)
    return demo


def launch(
    repo: str | None = None,
    *,
    host: str | None = None,
    port: int | None = None,
    echo: Callable[[str], None] = print,
    **kwargs: Any,
):
    """Build and launch, then serve until Ctrl-C; ``host``/``port`` fall back to Gradio's env.

    Gradio's own start-up lines are replaced by one: where the Space runs. Its "To create
    a public link, set `share=True` in `launch()`" speaks to someone editing the code, not
    to a user of ``space run`` (which has no such option, and works offline).
    """
    demo = build_app(repo)
    kwargs.setdefault("quiet", True)
    block = not kwargs.pop("prevent_thread_lock", False)
    demo.launch(server_name=host, server_port=port, prevent_thread_lock=True, **kwargs)
    echo(f"The Space runs at {demo.local_url} (Ctrl-C stops it)")
    if block:
        demo.block_thread()
    return demo
