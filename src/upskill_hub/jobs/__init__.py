"""Scale-out on Hugging Face Jobs: one eval run sharded over several Jobs.

One module per step: :mod:`.assign` (which shard owns which call), :mod:`.bundle` (what a
Job downloads: plan, cases, skill), :mod:`.launch` (the Job specs and the launcher),
:mod:`.run` (plan here, launch, wait, gather the shards, record the run), :mod:`.shard`
(what runs inside one Job) and :mod:`.status` (a run's Jobs, found by label: ls, logs,
cancel). The CLI calls this package; it builds on :mod:`upskill_hub.hub` (dataset repos)
:mod:`upskill_hub.lift` (planning, running) and :mod:`upskill_hub.rundir` (the run folder).
"""
