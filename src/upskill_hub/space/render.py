"""Render a skill's Markdown to HTML that cannot run anything in the visitor's browser.

A SKILL.md comes from whoever pushed it, so it is untrusted HTML as much as Markdown:
``<script>``, ``onerror=`` handlers, ``javascript:`` links and ``<iframe>`` s must not
survive. Markdown is turned into HTML by ``markdown-it-py`` (CommonMark + tables, raw
HTML allowed so harmless inline HTML still shows) and the result goes through ``nh3``
(the Ammonia sanitiser): an allow-list of tags and attributes, ``http``/``https``/
``mailto`` links only, and ``<script>``/``<style>`` removed together with their content.
"""

from __future__ import annotations

import html
import re
from functools import lru_cache

#: Tags a rendered skill may use; everything else is dropped (its text kept).
ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt",
    "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "kbd", "li", "ol", "p",
    "pre", "s", "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "th",
    "thead", "tr", "ul",
}  # fmt: skip
#: Attributes allowed per tag ("*" = any tag). No ``on*``, no ``style``, no ``srcdoc``.
ALLOWED_ATTRIBUTES = {
    "*": {"title", "lang"},
    "a": {"href"},
    "img": {"src", "alt", "width", "height"},
    "code": {"class"},
    "td": {"align"},
    "th": {"align"},
    "ol": {"start"},
}
URL_SCHEMES = {"http", "https", "mailto"}
#: Elements dropped with everything inside them.
DROP_WITH_CONTENT = {"script", "style", "iframe", "object", "embed", "template", "noscript", "svg", "math"}


@lru_cache(maxsize=1)
def _markdown():
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": True, "linkify": False}).enable("table").enable("strikethrough")


def sanitize_html(raw_html: str) -> str:
    """Return ``raw_html`` reduced to the allow-list above (nothing executable survives)."""
    import nh3

    return nh3.clean(
        raw_html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes=URL_SCHEMES,
        clean_content_tags=DROP_WITH_CONTENT,
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )


#: Characters of Markdown rendered per page; the rest is cut (a visitor's repo can hold any size).
MAX_RENDER_CHARS = 200_000


def render_markdown(text: str) -> str:
    """Markdown (possibly containing raw HTML) -> sanitised HTML, at most ``MAX_RENDER_CHARS`` of input."""
    text = text or ""
    note = ""
    if len(text) > MAX_RENDER_CHARS:
        text, note = text[:MAX_RENDER_CHARS], f"<p><em>(cut at {MAX_RENDER_CHARS:,} characters)</em></p>"
    return sanitize_html(_markdown().render(text)) + note


def frontmatter_rows(fm: dict) -> list[tuple[str, str]]:
    """Every frontmatter key as (label, text): ``metadata`` one row per entry, and values
    that are not strings (a list read leniently, a number) as JSON rather than Python repr."""
    import json

    def text(v: object) -> str:
        return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)

    out: list[tuple[str, str]] = []
    for k, v in fm.items():
        if k == "metadata" and isinstance(v, dict) and v:
            out += [(f"metadata.{mk}", text(mv)) for mk, mv in v.items()]
        else:
            out.append((str(k), text(v)))
    return out


def render_skill_md(skill_md: str) -> str:
    """The SKILL.md body as safe HTML, with its frontmatter shown as a small table first.

    The frontmatter is split off with the skill model's own parser; a file whose
    frontmatter cannot be read is shown as plain Markdown (it is still sanitised).
    """
    from upskill_hub.skill import FrontmatterError, split_frontmatter

    skill_md = (skill_md or "")[: MAX_RENDER_CHARS + 1]  # render_markdown cuts (and says so) beyond that
    try:
        fm, body = split_frontmatter(skill_md)
    except FrontmatterError:
        return f'<div class="skill-md">{render_markdown(skill_md)}</div>'
    rows = "".join(
        f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in frontmatter_rows(fm)
    )
    head = f'<table class="skill-frontmatter">{rows}</table>' if rows else ""
    return f'<div class="skill-md">{sanitize_html(head)}{render_markdown(body)}</div>'


def escape(text: str) -> str:
    """HTML-escape plain text (file listings, case inputs) before it goes into HTML."""
    return html.escape(text or "", quote=True)


#: Characters Markdown reads as syntax anywhere in a line (``\\(`` is an escaped ``(``, ``*x*``
#: emphasis, ``[a](b)`` a link, ``~~x~~`` strikethrough, ``$$x$$`` maths in Gradio): each is
#: backslash-escaped, which CommonMark turns back into the character itself.
_MARKDOWN_PUNCT = frozenset("\\`*_[]~$")
#: What makes a line a heading, list item or rule when it comes first (``# x``, ``- x``, ``1. x``).
_LINE_START = re.compile(r"^(\s*)([#+=-]|\d+(?=[.)]))")


def _escape_line_start(m: re.Match[str]) -> str:
    """``# x`` -> ``\\# x``; ``1. x`` -> ``1\\. x`` (the escape goes on the character that makes the block)."""
    lead, mark = m.group(1), m.group(2)
    return lead + (mark + "\\" if mark.isdigit() else "\\" + mark)


def markdown_text(text: str) -> str:
    """Plain text (a description, an assertion, a model id) for a Markdown view, shown exactly as written.

    Why: Markdown eats what it reads as syntax (``load_dataset\\(\\s*`` shows as
    ``load_dataset(\\s*``, ``*x*`` turns italic), so user text dropped into Markdown changes.
    HTML specials become entities (no raw HTML), ``|`` an entity (a table cell stays one cell),
    newlines spaces (a line break cannot end a table row or start a heading), the characters
    Markdown reads as inline syntax are backslash-escaped, and so is what would start a block.
    Not for code spans, where backslashes are literal (use :func:`escape` there).
    """
    text = " ".join((text or "").splitlines())
    text = "".join("\\" + ch if ch in _MARKDOWN_PUNCT else ch for ch in text)
    text = _LINE_START.sub(_escape_line_start, text, count=1)
    return html.escape(text, quote=True).replace("|", "&#124;")
