"""Sanitised rendering of a skill's Markdown: nothing executable survives."""

from __future__ import annotations

from upskill_hub.space.render import render_markdown, render_skill_md

HOSTILE = """---
name: evil
description: tries things
---
# Title

<script>alert(1)</script>
<img src="x" onerror="alert(2)">
<a href="javascript:alert(3)">js link</a>
[md link](javascript:alert(4))
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
    html = render_skill_md(HOSTILE).lower()
    assert "<script" not in html
    assert "alert(1)" not in html and "alert(6)" not in html  # script bodies dropped with their tag
    assert "onerror" not in html and "onclick" not in html
    assert "javascript:" not in html
    assert "<iframe" not in html and "style=" not in html and "<svg" not in html


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
