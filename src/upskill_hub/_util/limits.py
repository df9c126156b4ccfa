"""Budgets for input that comes from strangers, in one place.

Skills, test cases, assertions and dataset repos are written by other people: a pasted
regex can backtrack for hours, a JSON Schema can point at itself, a JSON file can nest a
hundred thousand levels. Each of those checks runs under one of the budgets below, so a
hostile input costs its own row a failure and nobody else anything. SECURITY.md lists
them; an operator changes one with the environment variable named beside it.
"""

from __future__ import annotations

import os


def env_number(name: str, default: float) -> float:
    """``$name`` as a positive number, else ``default`` (a typo must not lift a limit)."""
    raw = os.environ.get(name, "").strip()
    try:
        value = float(raw)
    except ValueError:
        return default
    return value if value > 0 else default


def env_int(name: str, default: int) -> int:
    """``$name`` as a positive whole number, else ``default``."""
    return int(env_number(name, default))


#: Seconds one ``regex`` assertion may run on one answer before it counts as failed.
REGEX_TIMEOUT_S = env_number("UPSKILL_REGEX_TIMEOUT_S", 1.0)
#: Longest pattern a ``regex`` assertion may have (characters).
REGEX_MAX_PATTERN = env_int("UPSKILL_REGEX_MAX_PATTERN", 2000)

#: Seconds one ``json-schema`` assertion may spend validating one answer.
SCHEMA_TIMEOUT_S = env_number("UPSKILL_SCHEMA_TIMEOUT_S", 1.0)
#: Keyword evaluations one schema validation may make (``$ref`` loops end here).
SCHEMA_MAX_STEPS = env_int("UPSKILL_SCHEMA_MAX_STEPS", 200_000)
#: How deep schema keywords may nest while validating (``{"$ref": "#"}`` ends here).
SCHEMA_MAX_DEPTH = env_int("UPSKILL_SCHEMA_MAX_DEPTH", 48)

#: How deep any JSON we parse from others (skill_meta.json, answers, payloads) may nest.
JSON_MAX_DEPTH = env_int("UPSKILL_JSON_MAX_DEPTH", 64)

#: ``regex`` / ``json-schema`` checks running at once in one process (half the cores, at least 1).
CHECK_THREADS = env_int("UPSKILL_CHECK_THREADS", max(1, (os.cpu_count() or 2) // 2))

#: Largest single file read from a skill, a run folder or a kernel project, and installed,
#: pushed or pulled (MB). A sparse 1 GiB file is refused before a byte of it is read.
MAX_FILE_BYTES = int(env_number("UPSKILL_MAX_FILE_MB", 50) * 1_000_000)
#: Largest skill file a model may read in catalog mode (``read_skill_file``; bytes): a bigger
#: one is refused to the model, counted in the eval report, and ``skills validate`` warns of it.
SKILL_FILE_MAX_BYTES = env_int("UPSKILL_SKILL_FILE_MAX_BYTES", 64_000)
#: Largest config file (``build.toml``, ``metadata.json``, ``run.json``, install markers) parsed (MB).
MAX_CONFIG_BYTES = int(env_number("UPSKILL_MAX_CONFIG_MB", 4) * 1_000_000)
#: Largest ``results.jsonl`` read back from a run folder (MB): rows are small, this is a guard.
MAX_RESULTS_BYTES = int(env_number("UPSKILL_MAX_RESULTS_MB", 1024) * 1_000_000)
#: Most tokens one model call may report (input, output or cached); more is an error row.
MAX_TOKENS_PER_CALL = env_int("UPSKILL_MAX_TOKENS_PER_CALL", 100_000_000)
#: Highest cost one agent CLI run may report (USD); more, or NaN/Infinity, is an error row.
MAX_COST_PER_CALL_USD = env_number("UPSKILL_MAX_COST_PER_CALL_USD", 1000.0)
#: Largest TOML file parsed (``build.toml``; KB). tomlkit's parser is slower than linear:
#: 1 MB of one string takes ~20 s, so the cap sits far above real files (a few KB) and
#: far below that.
MAX_TOML_BYTES = int(env_number("UPSKILL_MAX_TOML_KB", 64) * 1000)
#: Longest SKILL.md frontmatter parsed (KB of text): a few keys in practice; PyYAML is slow.
MAX_FRONTMATTER_CHARS = int(env_number("UPSKILL_MAX_FRONTMATTER_KB", 64) * 1000)
