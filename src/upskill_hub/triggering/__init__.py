"""Does a description make a model load the skill? Trigger evals, routing and tuning.

:mod:`.triggers` asks each model, for each query, whether it loads the skill from a catalog
(:mod:`.trigger_session` runs those calls for the other entry points), :mod:`.routing` and
:mod:`.routing_run` do it for a whole library at once, :mod:`.tune` and :mod:`.tune_run`
search for a better description, and :mod:`.description_report` / :mod:`.description_runs`
print and list their runs.
"""
