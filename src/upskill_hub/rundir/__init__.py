"""What is in a run folder? Its types and every read and write of ``<output>/<run_id>/``.

A run folder holds:

* ``run.json``         the :class:`RunPlan` (run id, skill, models, conditions, fingerprint);
* ``results.jsonl``    one :class:`ResultRow` per line, appended as each call finishes;
* ``summary.json``     the :class:`RunSummary` (written when the run ends);
* ``results.parquet``  the rows as the Hub's ``results`` shard (written when the run ends);
* ``.results.parquet.check``  what that parquet was built from and checked for (local only);
* plots (``pass_rate.png``, ``tokens.png``, ``report.html``) and a ``.lock``;
* for trigger runs, ``triggers.jsonl`` (:mod:`.trigger_rows`) and ``routing.json``
  (:mod:`.routing_rows`).

The runner writes it, ``runs`` and the Space read it, push turns it into parquet shards
and pull turns those back into the same types; hub/, the Space and jobs/ read run folders
through this package only. One module a job: :mod:`.schema` (the types), :mod:`.files`
(the files and the lock), :mod:`.columns` (parquet columns derived from the types),
:mod:`.shard` (the ``results`` shard and its masking), :mod:`.shardcheck` (the record that
lets push trust the shard) and :mod:`.upskill_runs` (upskill's own run folders, read).
Callers use the names below: ``from upskill_hub import rundir``.
"""

from __future__ import annotations

from upskill_hub.rundir.columns import (
    arrow_schema,
    result_arrow_schema,
    rows_from_table,
    runs_arrow_schema,
    summary_from_record,
    summary_record,
)
from upskill_hub.rundir.files import (
    BENCHMARK_JSON,
    BENCHMARK_MD,
    LOCK_FILE,
    RESULTS_CHECK,
    RESULTS_FILE,
    RESULTS_PARQUET,
    RUN_FILE,
    SUMMARY_FILE,
    ResultsWriter,
    check_run_files,
    compact_results,
    create_run,
    find_resumable,
    has_results,
    read_plan,
    read_results,
    read_run_file,
    read_run_json,
    read_summary,
    row_line,
    run_lock,
    write_benchmark,
    write_plan,
    write_results,
    write_summary,
)
from upskill_hub.rundir.shard import (
    ROW_GROUP_SIZE,
    RunnerShard,
    may_hold_secret,
    read_results_raw,
    read_results_shard,
    read_results_table,
    redact_table,
    results_table_problem,
    rows_table,
    shard_run_ids,
    table_parquet_bytes,
    write_results_parquet,
)

__all__ = [
    "BENCHMARK_JSON", "BENCHMARK_MD", "LOCK_FILE", "RESULTS_CHECK", "RESULTS_FILE", "RESULTS_PARQUET", "ROW_GROUP_SIZE", "RUN_FILE", "SUMMARY_FILE",
    "ResultsWriter", "RunnerShard", "arrow_schema", "check_run_files", "compact_results", "create_run", "find_resumable", "has_results", "may_hold_secret",
    "read_plan", "read_results", "read_results_raw", "read_results_shard", "read_results_table", "read_run_file",
    "read_run_json", "read_summary", "redact_table", "results_table_problem", "row_line", "rows_from_table", "rows_table", "run_lock", "runs_arrow_schema", "shard_run_ids",
    "result_arrow_schema", "summary_from_record", "summary_record", "table_parquet_bytes", "write_benchmark", "write_plan",
    "write_results", "write_results_parquet", "write_summary",
]  # fmt: skip
