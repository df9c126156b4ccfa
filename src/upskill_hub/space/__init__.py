"""The library side of the Gradio Space.

Everything the Space does lives here so it can be tested without a browser: loading a
skills+results dataset from the Hub (:mod:`.data`), precomputed aggregates
(:mod:`.aggregate`), search (:mod:`.search`), sanitised Markdown (:mod:`.render`), the
evaluation session with its key handling (:mod:`.session`, :mod:`.safety`), and deploying
the app as a Space repo (:mod:`.deploy`). :mod:`.ui` only lays the pieces out with Gradio.
"""
