"""What do a run's rows say? Pass rates and their Wilson intervals, the lift with its paired
interval and p-value (:mod:`.stats`, :mod:`.intervals`), the spread over repeats in
skill-creator's ``benchmark.json`` (:mod:`.benchmark`) and the assertions that measure
nothing (:mod:`.assertion_audit`). Pure functions of rows: nothing here calls a model or
writes a file.
"""
