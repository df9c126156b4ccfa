"""The local Hub's request handlers, one module per resource (``repos``, ``commits``, ``lfs``,
``jobs``) over what they share (``request``); ``app.py`` only wires them to URLs."""
