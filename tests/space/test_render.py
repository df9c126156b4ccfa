"""Sanitised rendering of a skill's Markdown: nothing executable survives."""

from __future__ import annotations

from html.parser import HTMLParser

from upskill_hub.space.render import render_markdown, render_skill_md


class _Collect(HTMLParser):
    """Every start tag with its attributes, as a browser would see them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, {k: v or "" for k, v in attrs}))


def _tags(html: str):
    p = _Collect()
    p.feed(html)
    return p.tags

HOSTILE = """---
name: evil
description: tries things
---
# Title

<script>alert(1)</script>
<img src="x" onerror="alert(2)">
<a href="javascript:alert(3)">js link</a>

[md link](javascript:alert(4)) and <a href=" JaVaScRiPt:alert(7)">spaced</a>
<iframe src="https://example.com"></iframe>
<div onclick="alert(5)" style="color:red">styled</div>
<svg><script>alert(6)</script></svg>

| a | b |
|---|---|
| 1 | 2 |

```python
print("<script>")
```
"""


def test_scripts_handlers_and_js_urls_are_removed():
    html = render_skill_md(HOSTILE)
    tags = _tags(html)
    names = {t for t, _ in tags}
    assert not names & {"script", "iframe", "svg", "style", "object", "embed"}
    assert "alert(1)" not in html and "alert(6)" not in html  # script bodies dropped with their tag
    for _, attrs in tags:
        assert not [k for k in attrs if k.startswith("on") or k in ("style", "srcdoc")]
        assert not [v for v in attrs.values() if "javascript:" in v.lower().replace(" ", "")]
    assert "md link" in html and "spaced" in html  # the text of neutralised links stays


def test_ordinary_markdown_survives():
    html = render_skill_md(HOSTILE)
    assert "<h1>Title</h1>" in html
    assert "<table>" in html and "<td>1</td>" in html
    # Code blocks show the text of a script tag escaped, not as markup.
    assert "&lt;script&gt;" in html
    assert 'rel="noopener noreferrer nofollow"' in render_markdown("[x](https://example.com)")
    # Frontmatter is shown as a table, escaped.
    assert "<th>name</th><td>evil</td>" in html


def test_bad_frontmatter_still_renders_sanitised():
    html = render_skill_md("no frontmatter <script>alert(1)</script> **bold**")
    assert "<strong>bold</strong>" in html and "<script" not in html


def test_finding_5_space_shows_the_whole_frontmatter_metadata_included() -> None:
    from upskill_hub.space.render import render_skill_md

    md = (
        "---\nname: trl-training\ndescription: Train. Use when training.\nlicense: Apache-2.0\n"
        "compatibility: Python 3.10+\nmetadata:\n  author: hf\n  tags: [trl, sft]\nargument-hint: [file]\n---\n\nBody\n"
    )
    html = render_skill_md(md)
    for text in ("Apache-2.0", "Python 3.10+", "<th>metadata.author</th><td>hf</td>",
                 "<th>metadata.tags</th><td>[\"trl\", \"sft\"]</td>", "argument-hint"):
        assert text in html, text
    assert "{'author'" not in html  # not a Python repr
