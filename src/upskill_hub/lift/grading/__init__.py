"""Did this answer pass? A case's assertions on the final answer, with a judge for rubrics
(:mod:`.assertions`), and on the tool calls made on the way (:mod:`.transcript_checks`).
The workspace checks of agent runs live with the harness (:mod:`upskill_hub.lift.harness.grading`).
"""
