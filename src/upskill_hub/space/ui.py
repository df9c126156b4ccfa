"""The Gradio layout of the Space. Presentation only: every handler calls the library.

Event handlers carry ``api_name`` s so the app can be driven with ``gradio_client``
(``/load``, ``/search``, ``/open_skill``, ``/leaderboard``, ``/run_eval``,
``/push_results``), which is how the tests exercise it end to end.
"""

# No ``from __future__ import annotations``: Gradio reads the handlers' annotations
# (gr.SelectData, gr.OAuthToken) at runtime to decide what to inject.
import json
import os
from pathlib import Path
from typing import Any

from upskill_hub.errors import UpskillError
from upskill_hub.redact import redact

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
KEYS_NOTE = (
    "Keys are used for this evaluation only: they are sent to the provider you chose, never stored, "
    "logged or pushed. This Space never uses its own keys for your runs."
)


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


def _sign_in_available() -> bool:
    """Whether Gradio's sign-in can work here.

    On a Space it is real OAuth. Locally Gradio mocks it with the machine's own Hub login
    and fails to start without one, so the button is only shown when that login works.
    """
    if os.environ.get("SPACE_ID"):
        return True
    try:
        from huggingface_hub import get_token, whoami

        return get_token() is not None and whoami().get("type") == "user"
    except Exception:  # offline, bad token, ...: browsing and evaluating still work
        return False


def build_app(repo: str | None = None, *, app_dir: str | Path | None = None):
    """The whole Space as a ``gr.Blocks``; ``repo`` overrides ``SKILLS_REPO``."""
    import gradio as gr
    import pandas as pd

    from upskill_hub.space import data, render, session, views

    operator_repo = (repo or default_repo(Path(app_dir) if app_dir else None)).strip()
    # matplotlib's first import costs seconds on a small CPU: pay it at startup, not on a click.
    import threading

    threading.Thread(target=views.warm_up_plots, daemon=True).start()

    def token_for(source: str) -> str | bool | None:
        # The Space's own token reads only the operator's repo; visitor-typed repos go anonymous.
        return None if source == operator_repo else False

    def get_lib(source: str, refresh: bool = False, max_age_s: float = 0.0) -> data.Library:
        source = (source or "").strip()
        # Only the operator's own source may be a local folder; visitors name Hub repos.
        operator = source == operator_repo
        return data.load_library(
            source, token=token_for(source), refresh=refresh, allow_local=operator, max_age_s=max_age_s
        )

    def error_md(exc: Exception) -> str:
        return f"**Error:** {render.escape(redact(str(exc)))}"

    def browse_frame(lib: data.Library, query="", min_tests=0, with_results=False, sort="best lift"):
        rows = views.search_skills(
            lib.aggregates, query, min_tests=int(min_tests or 0), with_results=bool(with_results), sort=sort
        )
        n = len(rows)
        shown = views.browse_table(rows.head(BROWSE_LIMIT))
        note = f"{n} of {len(lib.skills)} skills match" + (f"; showing the first {BROWSE_LIMIT}" if n > BROWSE_LIMIT else "")
        return pd.DataFrame(shown, columns=views.BROWSE_HEADERS), note, [r[0] for r in shown]

    def leaderboard_frame(lib: data.Library, sort_by: str = "best", query: str = ""):
        key = ("leaderboard", sort_by or "best", (query or "").strip().lower())
        headers, rows = lib.cached(
            key, lambda: views.leaderboard(lib.aggregates, sort_by=key[1], query=key[2])
        )
        return pd.DataFrame(rows, columns=headers)

    # ------------------------------------------------------------------ handlers
    def on_load(source: str, max_age_s: float = 0.0):
        try:
            lib = get_lib(source, refresh=True, max_age_s=max_age_s)
        except UpskillError as exc:
            empty = pd.DataFrame([], columns=views.BROWSE_HEADERS)
            return (error_md(exc), empty, gr.update(choices=[], value=None), gr.update(choices=[], value=None),
                    gr.update(choices=["best", "name"], value="best"))  # fmt: skip
        table, note, names = browse_frame(lib)
        agg = lib.aggregates
        status = (
            f"**{render.escape(lib.source)}**"
            + (f" @ `{lib.revision[:8]}`" if lib.revision else "")
            + f" · {len(lib.skills)} skills · {len(lib.results)} result rows · {len(agg.models)} models · {note}"
        )
        # Dropdowns list the skills shown (not all 1,000: that payload slows the page); any
        # name can still be typed, and clicking a row opens it.
        return (
            status,
            table,
            gr.update(choices=names, value=None),
            gr.update(choices=names, value=names[0] if names else None),
            gr.update(choices=["best", "name", *agg.models], value="best"),
        )

    def on_search(source: str, query: str, min_tests: float, with_results: bool, sort: str):
        try:
            lib = get_lib(source)
        except UpskillError as exc:
            return pd.DataFrame([], columns=views.BROWSE_HEADERS), error_md(exc), gr.update()
        table, note, names = browse_frame(lib, query, min_tests, with_results, sort)
        return table, note, gr.update(choices=names)

    def on_open(source: str, name: str):
        blank = pd.DataFrame()
        if not name:
            return "Pick a skill to see its page.", "", blank, blank, blank, None, None, gr.update(choices=[], value=None)
        try:
            lib = get_lib(source)
            header = views.skill_summary_markdown(lib, name)
            html = render.render_skill_md(data.skill_md_text(lib, name))
            files = pd.DataFrame(data.skill_files(lib, name), columns=["path", "size"])
            cases = data.skill_cases(lib, name)
            cases_df = pd.DataFrame(
                [
                    [c["id"], c.get("split", "train"), c["input"], json.dumps(c["assert"], ensure_ascii=False)]
                    for c in cases
                ],
                columns=["id", "split", "input", "assertions"],
            )
            table = views.skill_results_table(lib.aggregates, name)
            results = pd.DataFrame(views.results_rows(table), columns=views.RESULT_HEADERS)
            cond = lib.aggregates.conditions
            cond = cond[cond["skill_name"] == name]
            tag = f"{lib.source}@{lib.revision or lib.root}:{name}"
            fig1, fig2 = lib.cached(
                ("figures", name),
                lambda: (
                    views.figure_png(views.pass_rate_figure(cond), tag + ":pass"),
                    views.figure_png(views.tokens_figure(cond), tag + ":tokens"),
                )
                if len(cond)
                else (None, None),
            )
        except UpskillError as exc:
            return error_md(exc), "", blank, blank, blank, None, None, gr.update(choices=[], value=None)
        if not table:
            header += "\n\n_No results for this skill yet: run an evaluation in the **Evaluate** tab._"
        file_choices = gr.update(choices=list(files["path"]), value=None)
        return header, html, files, cases_df, results, fig1, fig2, file_choices

    def on_select_row(source: str, evt: gr.SelectData):
        row = evt.row_value or []
        name = row[0] if row else None
        return gr.update(value=name)

    def on_file(source: str, name: str, rel: str):
        if not (name and rel):
            return ""
        try:
            return data.read_skill_file(get_lib(source), name, rel)
        except UpskillError as exc:
            return f"Error: {redact(str(exc))}"

    def on_leaderboard(source: str, sort_by: str, query: str):
        try:
            return leaderboard_frame(get_lib(source), sort_by, query)
        except UpskillError as exc:
            return pd.DataFrame([[str(exc)]], columns=["error"])

    def on_eval_cases(source: str, mode: str, name: str, pasted: str, meta: str):
        try:
            skill = _eval_skill(source, mode, name, pasted, meta, workdir=None)
        except UpskillError as exc:
            return pd.DataFrame([[redact(str(exc))]], columns=["error"])
        return pd.DataFrame(
            [[c.id, c.input, json.dumps([a.to_dict() for a in c.asserts], ensure_ascii=False)] for c in skill.meta.cases],
            columns=["id", "input", "assertions"],
        )

    def _eval_skill(source, mode, name, pasted, meta, workdir):
        import tempfile

        if mode == "paste":
            if not (pasted or "").strip():
                raise UpskillError("paste a SKILL.md (or upload one) first")
            wd = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="upskill-paste-"))
            try:
                return session.skill_from_text(pasted, meta, wd)
            finally:
                if workdir is None:
                    import shutil

                    shutil.rmtree(wd, ignore_errors=True)
        if not name:
            raise UpskillError("pick a skill from the library first")
        lib = get_lib(source)
        wd = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="upskill-lib-"))
        try:
            skill = data.load_library_skill(lib, name, wd / "library")
        finally:
            if workdir is None:
                import shutil

                shutil.rmtree(wd, ignore_errors=True)
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
        endpoint_key, runs, oauth_token: gr.OAuthToken | None = None, progress=gr.Progress(),  # noqa: B008
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
        empty_sum = pd.DataFrame([], columns=session.SUMMARY_HEADERS)
        ev = None
        try:
            wd = session.new_workdir()
            skill = _eval_skill(source, mode, name, pasted, meta, workdir=wd)
            clients = session.build_clients(session.split_specs(models_text), keys, base_url=base_url or "")
            ev = session.EvalSession(skill, clients, runs=int(runs or 1), secrets=secrets, workdir=wd).start()
        except UpskillError as exc:
            yield (f"**Error:** {render.escape(redact(str(exc), secrets))}", pd.DataFrame([], columns=live_cols),
                   empty_sum, None, None, "")  # fmt: skip
            return
        progress((0, 1), desc="starting")
        for upd in ev.updates():
            # The newest LIVE_ROWS calls: re-sending thousands of rows on every update would be quadratic.
            live = pd.DataFrame([session.row_cells(r, secrets) for r in upd.rows[-LIVE_ROWS:]], columns=live_cols)
            if upd.total:
                progress((upd.done, upd.total), desc=f"{upd.done}/{upd.total} calls", unit="calls")
            if not upd.finished:
                yield (f"Running **{render.escape(skill.name)}**: {upd.done}/{upd.total} calls done",
                       live, empty_sum, None, None, "")  # fmt: skip
                continue
            if upd.error:
                yield f"**Error:** {render.escape(upd.error)}", live, empty_sum, None, None, ""
                return
            result = upd.result
            frame = session.summary_frame(result.summary)
            summary = pd.DataFrame(session.summary_rows(result.summary), columns=session.SUMMARY_HEADERS)
            run_id = result.summary.run_id
            yield (
                f"Finished **{render.escape(skill.name)}**: {upd.done} calls · run `{run_id}`",
                live,
                summary,
                views.figure_png(views.pass_rate_figure(frame), f"run:{result.run_dir}:pass"),
                views.figure_png(views.tokens_figure(frame), f"run:{result.run_dir}:tokens"),
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
    with gr.Blocks(title="upskill-hub: skills and their lift") as demo:
        gr.Markdown(INTRO)
        with gr.Row():
            repo_box = gr.Textbox(
                value=operator_repo, label="Skills dataset (Hub repo OWNER/NAME)", scale=4, elem_id="repo-box"
            )
            load_btn = gr.Button("Load", scale=1, elem_id="load-btn")
        status = gr.Markdown("Loading…", elem_id="status")
        with gr.Tabs() as tabs:
            with gr.Tab("Browse", id="browse"):
                with gr.Row():
                    query = gr.Textbox(label="Search skills", placeholder="name or description", scale=3, elem_id="search-box")
                    min_tests = gr.Number(label="Min. tests", value=0, precision=0, minimum=0, scale=1)
                    with_results = gr.Checkbox(label="With results only", value=False, scale=1)
                    sort = gr.Dropdown(list(views.SORTS), value="best lift", label="Sort by", scale=1)
                match_note = gr.Markdown("", elem_id="match-note")
                skills_table = gr.Dataframe(
                    headers=views.BROWSE_HEADERS, interactive=False, wrap=True, elem_id="skills-table", max_height=420
                )
                # Custom values allowed: the library checks names, and API callers need not /load first.
                skill_pick = gr.Dropdown([], label="Open skill", elem_id="skill-pick", allow_custom_value=True)
                skill_header = gr.Markdown("Pick a skill to see its page.", elem_id="skill-header")
                with gr.Tabs():
                    with gr.Tab("SKILL.md"):
                        skill_html = gr.HTML(elem_id="skill-md")
                    with gr.Tab("Results"):
                        results_table = gr.Dataframe(interactive=False, elem_id="skill-results")
                        with gr.Row():
                            pass_plot = gr.Image(label="Pass rate", type="filepath", interactive=False)
                            tokens_plot = gr.Image(label="Tokens", type="filepath", interactive=False)
                    with gr.Tab("Test cases"):
                        cases_table = gr.Dataframe(interactive=False, wrap=True, elem_id="skill-cases")
                    with gr.Tab("Files"):
                        files_table = gr.Dataframe(interactive=False, elem_id="skill-files")
                        file_pick = gr.Dropdown([], label="Show file", elem_id="file-pick", allow_custom_value=True)
                        # Plain textboxes, not gr.Code: the code editor roughly doubles the page's load time.
                        file_view = gr.Textbox(label="File", interactive=False, lines=12, max_lines=40)
                eval_this = gr.Button("Evaluate this skill", elem_id="eval-this")
            with gr.Tab("Evaluate", id="evaluate"):
                with gr.Row():
                    mode = gr.Radio(
                        [("Skill from the library", "library"), ("Paste / upload a SKILL.md", "paste")],
                        value="library", label="Skill",
                    )  # fmt: skip
                    eval_skill = gr.Dropdown([], label="Library skill", elem_id="eval-skill", allow_custom_value=True)
                with gr.Accordion("Paste or upload a skill", open=False):
                    pasted = gr.Textbox(label="SKILL.md", lines=10, max_lines=40, elem_id="pasted-skill")
                    upload = gr.UploadButton(
                        "Upload SKILL.md", file_types=[".md"], type="filepath", size="sm", elem_id="upload-skill"
                    )
                    meta = gr.Textbox(
                        label="skill_meta.json (test cases; optional for library skills)", lines=6, max_lines=30
                    )
                cases_view = gr.Dataframe(interactive=False, wrap=True, label="Test cases and assertions", elem_id="eval-cases")
                models_text = gr.Textbox(
                    label="Models (one per line)",
                    placeholder="hf:Qwen/Qwen2.5-7B-Instruct\nopenai:gpt-4.1-mini\nanthropic:claude-haiku-4-5\nmy-model  (with a base URL)",
                    lines=3,
                    elem_id="models-box",
                )
                gr.Markdown(KEYS_NOTE)
                with gr.Row():
                    hf_token = gr.Textbox(
                        label="Hugging Face token (Inference Providers; empty = your sign-in)", type="password"
                    )
                    openai_key = gr.Textbox(label="OpenAI key", type="password")
                    anthropic_key = gr.Textbox(label="Anthropic key", type="password")
                with gr.Row():
                    base_url = gr.Textbox(label="OpenAI-compatible base URL (optional)", elem_id="base-url")
                    endpoint_key = gr.Textbox(label="Key for that endpoint (optional)", type="password")
                    runs = gr.Number(1, minimum=1, maximum=session.MAX_RUNS, precision=0, label="Runs per case")
                run_btn = gr.Button("Run evaluation", variant="primary", elem_id="run-btn")
                run_status = gr.Markdown("", elem_id="run-status")
                live_table = gr.Dataframe(interactive=False, label="Calls so far", elem_id="live-table", max_height=300)
                summary_table = gr.Dataframe(interactive=False, label="Result", elem_id="summary-table")
                with gr.Row():
                    run_plot = gr.Image(label="Pass rate", type="filepath", interactive=False)
                    run_tokens = gr.Image(label="Tokens", type="filepath", interactive=False)
                run_handle = gr.Textbox(visible=False)  # a handle from session.remember_run, never a path
                with gr.Row():
                    if _sign_in_available():
                        gr.LoginButton()  # needs gradio[oauth] (the space extra); real sign-in on a Space
                    else:
                        gr.Markdown("Sign-in (to push results) works on a Space, or locally after `hf auth login`.")
                    push_btn = gr.Button("Push results to the dataset", elem_id="push-btn")
                push_status = gr.Markdown("")
            with gr.Tab("Leaderboard", id="leaderboard") as lb_tab:
                with gr.Row():
                    lb_sort = gr.Dropdown(["best", "name"], value="best", label="Sort by lift of")
                    lb_query = gr.Textbox(label="Filter skills")
                lb_table = gr.Dataframe(interactive=False, elem_id="leaderboard-table", max_height=600)
                gr.Markdown(
                    "Lift = with-skill minus baseline pass rate in percentage points, paired over test cases, "
                    "with a 95% interval (Tango's paired score interval, as in the CLI); `–` = not measured."
                )

        load_outputs = [status, skills_table, skill_pick, eval_skill, lb_sort]
        load_btn.click(on_load, [repo_box], load_outputs, api_name="load")
        repo_box.submit(on_load, [repo_box], load_outputs, api_name=False)
        # A page view re-checks the dataset's commit at most every PAGE_REFRESH_S; "Load" always does.
        demo.load(lambda src: on_load(src, PAGE_REFRESH_S), [repo_box], load_outputs, api_name=False)

        search_inputs = [repo_box, query, min_tests, with_results, sort]
        # Search skips the queue: a keystroke is a filter over precomputed rows (no slow work).
        query.change(on_search, search_inputs, [skills_table, match_note, skill_pick], api_name="search",
                     trigger_mode="always_last", show_progress="hidden", queue=False)  # fmt: skip
        for comp in (min_tests, with_results, sort):
            comp.change(on_search, search_inputs, [skills_table, match_note, skill_pick], api_name=False,
                        show_progress="hidden")  # fmt: skip

        page_outputs = [skill_header, skill_html, files_table, cases_table, results_table, pass_plot, tokens_plot,
                        file_pick]  # fmt: skip
        skill_pick.change(on_open, [repo_box, skill_pick], page_outputs, api_name="open_skill")
        skills_table.select(on_select_row, [repo_box], [skill_pick], api_name=False)
        file_pick.change(on_file, [repo_box, skill_pick, file_pick], [file_view], api_name="skill_file")

        def go_eval(name):
            return gr.update(value=name), gr.update(value="library"), gr.Tabs(selected="evaluate")

        eval_this.click(go_eval, [skill_pick], [eval_skill, mode, tabs], api_name=False)
        case_inputs = [repo_box, mode, eval_skill, pasted, meta]
        for comp in (eval_skill, mode, meta):
            comp.change(on_eval_cases, case_inputs, [cases_view], api_name=False, show_progress="hidden")
        pasted.blur(on_eval_cases, case_inputs, [cases_view], api_name=False)
        upload.upload(on_upload, [upload], [pasted], api_name=False)

        run_btn.click(
            on_run,
            [repo_box, mode, eval_skill, pasted, meta, models_text, base_url, hf_token, openai_key, anthropic_key,
             endpoint_key, runs],  # fmt: skip
            [run_status, live_table, summary_table, run_plot, run_tokens, run_handle],
            api_name="run_eval",
            concurrency_limit=4,
        )
        push_btn.click(on_push, [repo_box, run_handle], [push_status], api_name="push_results")
        lb_inputs = [repo_box, lb_sort, lb_query]
        lb_sort.change(on_leaderboard, lb_inputs, [lb_table], api_name="leaderboard")
        lb_tab.select(on_leaderboard, lb_inputs, [lb_table], api_name=False)  # built when first shown
        lb_query.change(on_leaderboard, lb_inputs, [lb_table], api_name=False, trigger_mode="always_last")
    _no_run_history(demo)
    return demo


def _no_run_history(demo) -> None:
    """Turn off Gradio's run history for this app, however it is launched.

    Gradio 6 saves each call's inputs in the visitor's browser (and optionally a Hub
    bucket) to replay later; here those inputs include API keys, which must not be
    stored anywhere. ``launch()`` reads the flag, so it is forced there as well.
    """
    import functools

    demo.run_history = False
    original = demo.launch

    @functools.wraps(original)
    def launch(*args, **kwargs):
        kwargs["run_history"] = False
        return original(*args, **kwargs)

    demo.launch = launch


def launch(repo: str | None = None, *, host: str | None = None, port: int | None = None, **kwargs: Any):
    """Build and launch; ``host``/``port`` fall back to ``GRADIO_SERVER_NAME``/``GRADIO_SERVER_PORT``."""
    demo = build_app(repo)
    return demo.launch(server_name=host, server_port=port, **kwargs)
