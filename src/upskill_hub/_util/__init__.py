"""The private helpers floor: small tools every part of upskill-hub shares.

Atomic file writes (:mod:`.fsutil`), bounded parsing of untrusted JSON and YAML
(:mod:`.safejson`, :mod:`.safeyaml`), guarded regex/schema checks (:mod:`.guarded`) and
their limits (:mod:`.limits`), secret masking (:mod:`.redact`), hashing, timestamps,
rate, lift and count formatting, retries, problem lists and free ports. Nothing here knows about
skills, evals or the Hub; the floors contract in ``.importlinter`` keeps it that way.
Not a public API: import from here inside upskill_hub only.
"""
