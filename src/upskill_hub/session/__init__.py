"""How an eval talks to models, for both eval kinds (the lift and the trigger eval).

:mod:`.clients` opens one client per model spec with its prices and loads the distractor
skills, :mod:`.cache` keeps responses so a repeated call costs nothing, and
:mod:`.catalog` is the skill catalog a model browses with tools (the way agents find skills).
"""
