"""MkDocs hook: one page per ``upskill-hub`` command, generated from the Typer app at build time.

The pages are never written by hand, so ``--help`` and the docs cannot drift apart:
``commands/<name>.md`` shows a command's usage, help text, arguments and options (a
command group's page has one section per subcommand). ``tests/docs/test_docs_pages.py``
checks that each page lists exactly the options its ``--help`` shows.

The hook also keeps the nav tolerant of new pages: any ``docs/**/*.md`` page that
``mkdocs.yml``'s nav does not mention is appended under "More", so a page added by a
feature branch is built (and checked by ``--strict``) before anyone edits the nav.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

SECTION = "Commands"
MORE = "More"
#: The generated page that carries the repository's SECURITY.md.
SECURITY_PAGE = "security.md"


def _app():  # the Typer app, imported lazily: MkDocs loads hooks before it needs them
    from upskill_hub.cli.app import app

    return app


def _plain(text: str | None) -> str:
    """Help text as plain Markdown: Rich markup removed, as ``--help`` renders it."""
    if not text:
        return ""
    from rich.text import Text

    try:
        return Text.from_markup(text).plain.strip()
    except Exception:  # not valid markup: show it as written
        return text.strip()


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _root():
    import typer.main

    return typer.main.get_command(_app())


def walk() -> list[tuple[list[str], Any]]:
    """``(path, command)`` for every visible command, depth first, in ``--help`` order."""
    out: list[tuple[list[str], Any]] = []

    def visit(cmd: Any, path: list[str]) -> None:
        if path:
            out.append((path, cmd))
        for name in getattr(cmd, "list_commands", lambda _ctx: [])(None) or []:
            sub = cmd.commands[name]
            if not getattr(sub, "hidden", False):
                visit(sub, [*path, name])

    visit(_root(), [])
    return out


def _context(path: list[str], cmd: Any) -> Any:
    return cmd.make_context(" ".join(["upskill-hub", *path]), [], resilient_parsing=True)


def option_names(path: list[str], cmd: Any) -> set[str]:
    """Every visible option string of ``cmd`` (``--model``, ``-m``, ``--help``...)."""
    ctx = _context(path, cmd)
    names: set[str] = set()
    for p in cmd.get_params(ctx):
        if getattr(p, "param_type_name", "") == "option" and not getattr(p, "hidden", False):
            names.update(p.opts)
            names.update(p.secondary_opts)
    return names


def _params_md(path: list[str], cmd: Any, level: str) -> list[str]:
    ctx = _context(path, cmd)
    args, opts = [], []
    for p in cmd.get_params(ctx):
        if getattr(p, "hidden", False):
            continue
        help_text = _cell(_plain(getattr(p, "help", None) or ""))
        if p.param_type_name == "argument":
            need = "required" if p.required else "optional"
            args.append(f"| `{(p.name or '').upper()}` | {need} | {help_text} |")
        else:
            flags = ", ".join(f"`{o}`" for o in [*p.opts, *p.secondary_opts])
            default = ""
            if p.show_default and p.default not in (None, False, (), []) and not callable(p.default):
                default = f"`{p.default}`"
            opts.append(f"| {flags} | {default} | {help_text} |")
    md: list[str] = []
    if args:
        md += [f"{level} Arguments", "", "| Argument | | Description |", "|---|---|---|", *args, ""]
    if opts:
        md += [f"{level} Options", "", "| Option | Default | Description |", "|---|---|---|", *opts, ""]
    return md


def _command_md(path: list[str], cmd: Any, level: str) -> list[str]:
    ctx = _context(path, cmd)
    usage = " ".join(["Usage:", ctx.command_path, *cmd.collect_usage_pieces(ctx)])
    md = [f"{level} `upskill-hub {' '.join(path)}`", ""]
    if cmd.help:
        md += [_plain(cmd.help), ""]
    md += ["```text", usage, "```", ""]
    return md + _params_md(path, cmd, level + "#")


def command_pages() -> dict[str, str]:
    """``commands/<name>.md`` -> Markdown, one page per top-level command."""
    pages: dict[str, str] = {}
    commands = walk()
    for path, cmd in commands:
        if len(path) != 1:
            continue
        md = _command_md(path, cmd, "#")
        subs = [(p, c) for p, c in commands if len(p) > 1 and p[0] == path[0]]
        for sub_path, sub in subs:
            md += _command_md(sub_path, sub, "##")
        md.append("*Generated from the command's `--help` when the site is built.*")
        pages[f"commands/{path[0]}.md"] = "\n".join(md) + "\n"
    return pages


# ----------------------------------------------------------------------------- MkDocs hooks
def _mentioned(nav: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(nav, str):
        found.add(nav)
    elif isinstance(nav, list):
        for item in nav:
            found |= _mentioned(item)
    elif isinstance(nav, dict):
        for value in nav.values():
            found |= _mentioned(value)
    return found


def on_config(config: Any) -> Any:
    nav = config.get("nav")
    if not nav:
        return config
    pages = command_pages()
    command_nav = [{"Overview": "commands/index.md"}] + [
        {f"upskill-hub {Path(p).stem}": p} for p in pages
    ]
    nav = [item for item in nav if not (isinstance(item, dict) and SECTION in item)]
    insert_at = next((i for i, item in enumerate(nav) if isinstance(item, dict) and "Guides" in item), 1) + 1
    nav.insert(insert_at, {SECTION: command_nav})
    docs = Path(config["docs_dir"])
    known = _mentioned(nav)
    extra = sorted(
        p.relative_to(docs).as_posix()
        for p in docs.rglob("*.md")
        if p.relative_to(docs).as_posix() not in known and "hooks" not in p.relative_to(docs).parts
    )
    if extra:
        nav.append({MORE: extra})
    config["nav"] = nav
    return config


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for path, content in command_pages().items():
        files.append(File.generated(config, path, content=content))
    # SECURITY.md stays at the repository's root (where GitHub looks for it); the site shows
    # the same text as security.md, so pages can link to its limits table.
    security = Path(config["docs_dir"]).parent / "SECURITY.md"
    files.append(File.generated(config, SECURITY_PAGE, content=security.read_text(encoding="utf-8")))
    return files
