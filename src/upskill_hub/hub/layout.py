"""Where things live in a skills-and-results dataset repo: the one home of its paths and globs.

Push writes these paths, pull and the card's ``configs`` read them, and the Space
downloads and reads them (``space/data.py``, ``space/intake.py``): they all import them
from here, so the layout is written once. See ARCHITECTURE.md, "Hub dataset repo for
skills and results"::

    README.md                      dataset card; YAML configs skills / results / runs
    skills/<name>/...              the skill's files, verbatim, installable
    data/skills/<name>.parquet     one row per skill
    data/results/<run_id>.parquet  append-only: one shard per eval run
    data/results/<run_id>/shard-<i>.parquet   or, for a run on Hugging Face Jobs, one per Job
    data/runs/<run_id>.parquet     the run's summary
    data/triggers/<run_id>.parquet trigger queries (catalog mode), one row per call
    data/routing/<run_id>.parquet  library routing (triggers --library)
    data/security/<name>.parquet   the skill's scan (skills scan): one row per skill, replaced with it
    jobs/<run_id>/...              what a run's Jobs need (plan, cases, skill); not a table
"""

from __future__ import annotations

import re

SKILLS_DIR = "skills"
SKILLS_TABLE_DIR = "data/skills"
RESULTS_TABLE_DIR = "data/results"
RUNS_TABLE_DIR = "data/runs"
TRIGGERS_TABLE_DIR = "data/triggers"
ROUTING_TABLE_DIR = "data/routing"
SECURITY_TABLE_DIR = "data/security"
CARD_PATH = "README.md"

#: Config name -> data_files glob (the card's YAML ``configs``).
CONFIG_GLOBS = {
    "skills": f"{SKILLS_TABLE_DIR}/*.parquet",
    "results": f"{RESULTS_TABLE_DIR}/*.parquet",
    "runs": f"{RUNS_TABLE_DIR}/*.parquet",
    "triggers": f"{TRIGGERS_TABLE_DIR}/*.parquet",
    "routing": f"{ROUTING_TABLE_DIR}/*.parquet",
    "security": f"{SECURITY_TABLE_DIR}/*.parquet",
}
SKILLS_GLOB = CONFIG_GLOBS["skills"]
RESULTS_GLOB = CONFIG_GLOBS["results"]
RUNS_GLOB = CONFIG_GLOBS["runs"]
TRIGGERS_GLOB = CONFIG_GLOBS["triggers"]
#: Library routing runs (``triggers --library``): one row per model x query skill x skill loaded.
ROUTING_GLOB = CONFIG_GLOBS["routing"]
#: Each skill's scan for prompt injection, exfiltration and malicious code (upskill_hub.trust):
#: one row per skill (see SECURITY_COLUMNS), written by push beside data/skills/<name>.parquet.
SECURITY_GLOB = CONFIG_GLOBS["security"]
#: The ``security`` table's columns, in order. ``max_severity`` is the worst unacknowledged
#: finding's level ("" when none); the five counts are unacknowledged findings per level;
#: ``findings`` is a JSON list of finding dicts (trust.Finding.to_dict()), worst first.
SECURITY_COLUMNS = (
    "name", "version", "scanner", "scanner_version", "scanned_at", "max_severity",
    "critical", "high", "medium", "low", "info", "acknowledged", "findings",
)  # fmt: skip

#: The ``results`` files of runs sharded over Hugging Face Jobs (one folder per run).
SHARDED_RESULTS_GLOB = f"{RESULTS_TABLE_DIR}/*/*.parquet"
#: What a run's Jobs read (plan, cases, skill); outside ``data/`` so no config reads it.
JOBS_DIR = "jobs"
SHARD_FILE_RE = re.compile(r"^shard-(\d{1,5})\.parquet$")

RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]{0,127}$")
