"""28 skills named as anthropics/skills and huggingface/skills name theirs, none shipping queries.

The descriptions are short ones written for these tests in the published form ("What it does.
Use when ..."); ``claude-api``'s is 1,068 characters, over the spec's 1,024, as the real one
was: the library's one invalid skill. The scripted teacher (:func:`library_teacher`) writes
each skill's queries from its description's words, with one leaking query per set.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from upskill_hub.generate.queries import QUERIES_SYSTEM_PROMPT
from upskill_hub.skill import Skill

ANTHROPICS = {
    "algorithmic-art": "Creating generative art with p5.js, seeded randomness and flow fields. Use when asked for generative artwork or creative coding.",
    "brand-guidelines": "Applies the official brand colours and typography to artifacts. Use when brand styling or corporate look is requested.",
    "canvas-design": "Design posters and static visuals as PNG or PDF with a design philosophy. Use when a poster or visual composition is wanted.",
    "doc-coauthoring": "Guides users through co-writing documentation, proposals and specs in stages. Use when drafting a technical proposal together.",
    "docx": "Word document creation, editing and tracked changes with comments. Use when working with .docx documents.",
    "frontend-design": "Distinctive production-grade frontend interfaces with bold aesthetics. Use when building landing pages or React components.",
    "internal-comms": "Writes internal communications: status reports, newsletters, incident updates. Use when composing company announcements.",
    "mcp-builder": "Builds MCP servers that expose tools to language models, in Python or TypeScript. Use when creating a Model Context Protocol server.",
    "pdf": "Extract text and tables from PDF files, merge, split and fill forms. Use when processing PDF documents.",
    "pptx": "Presentation creation and editing of slides, layouts and speaker notes. Use when working with .pptx decks.",
    "skill-creator": "Guide for creating effective skills that extend the agent with knowledge. Use when authoring or updating a skill package.",
    "slack-gif-creator": "Animated GIFs optimised for Slack size limits and emoji. Use when making an animated reaction GIF.",
    "theme-factory": "Themes for artifacts: ten preset palettes and font pairings. Use when applying a colour theme to slides or pages.",
    "web-artifacts-builder": "Elaborate multi-component HTML artifacts with React, Tailwind and shadcn. Use when a complex interactive artifact is needed.",
    "webapp-testing": "Tests local web applications with Playwright: screenshots, browser logs, clicks. Use when verifying a running webapp.",
    "xlsx": "Spreadsheet creation and analysis with formulas, charts and formatting. Use when working with .xlsx workbooks.",
}
HUGGINGFACE = {
    "hf-cli": "Hugging Face Hub command line: download, upload, repos, cache and auth with hf. Use when managing Hub repositories from a terminal.",
    "hugging-face-datasets": "Create and edit Hub datasets: configs, splits, parquet conversion and SQL queries. Use when publishing a dataset.",
    "hugging-face-dataset-viewer": "Query the Dataset Viewer API for rows, search, filters and statistics. Use when exploring a dataset without downloading it.",
    "hugging-face-evaluation": "Adds evaluation results to model cards and runs benchmark evals with lighteval. Use when reporting model scores.",
    "hugging-face-jobs": "Run compute jobs on Hugging Face infrastructure with uv scripts and Docker images. Use when launching a GPU job.",
    "hugging-face-model-trainer": "Fine-tune language models with TRL on Jobs: SFT, DPO, GRPO and GGUF export. Use when training or fine-tuning a model.",
    "hugging-face-paper-publisher": "Publish research papers on the Hub: paper pages, linking models and authors. Use when indexing an arXiv paper.",
    "hugging-face-tool-builder": "Builds reusable scripts that chain Hub API calls for data fetching. Use when automating repeated Hub lookups.",
    "hugging-face-trackio": "Track training experiments with Trackio: metrics logging, dashboards and alerts. Use when monitoring a training run.",
    "gradio-apps": "Build Gradio web demos with Blocks, components and event listeners. Use when creating a machine learning demo interface.",
    "transformers-js": "Run transformer models in the browser or Node with Transformers.js and ONNX. Use when doing inference in JavaScript.",
}
#: The invalid one: over 1,024 characters, as anthropics/skills' claude-api was (1,068).
CLAUDE_API = ("Build apps with the Claude API or Anthropic SDK. " * 30)[:1068]
INVALID = "claude-api"


def write_library(root: Path) -> Path:
    """The 28 skills in two collections, as a merged checkout of both repositories; no skill_meta.json."""
    for collection, skills in (("anthropics", ANTHROPICS), ("huggingface", HUGGINGFACE)):
        for name, description in skills.items():
            Skill.create(name, description, f"# {name}\n\nFollow the {name} workflow.\n").write(root / collection / name)
    bad = root / "anthropics" / INVALID
    bad.mkdir(parents=True)
    (bad / "SKILL.md").write_text(f"---\nname: {INVALID}\ndescription: {CLAUDE_API}\n---\n# Claude API\n\nCall it.\n")
    return root


_PLAIN = {"about", "asked", "users", "files", "skills", "being", "needs", "using", "wanted", "working", "creating", "building", "builds"}


def _words(description: str) -> list[str]:
    return [w for w in dict.fromkeys(re.findall(r"[a-z]{5,}", description.lower())) if w not in _PLAIN]


def library_teacher(request: str) -> str:
    """Two should-trigger queries and one that names the skill (a leak), two near-miss negatives."""
    name = re.search(r'<skill name="([^"]+)">', request).group(1)
    description = re.search(r"<description>(.*?)</description>", request, re.S).group(1)
    w = _words(description)
    queries = [
        {"query": f"I need {w[0]} done for my {w[1]} today", "should_trigger": True},
        {"query": f"Use the {name} skill on this, please", "should_trigger": True},  # leaks: dropped
        {"query": f"Could you sort out the {w[1]} and {w[0]} part?", "should_trigger": True},
        {"query": f"What is the etymology of the word {w[0]}?", "should_trigger": False},
        {"query": f"Write a short poem that mentions {w[1]}", "should_trigger": False},
    ]
    return "```json\n" + json.dumps({"queries": queries}) + "\n```"


def script(system: str, messages: list, params: dict) -> str:
    """The scripted server's answers: the teacher for query requests, else a plain reply."""
    if system == QUERIES_SYSTEM_PROMPT:
        return library_teacher(messages[-1]["content"])
    return "done"
