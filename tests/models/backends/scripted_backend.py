"""A local-model backend for tests: instant scripted answers, and a crash on demand.

It is loaded by name in the real worker process (``UPSKILL_LOCAL_BACKEND=
scripted_backend:ScriptedBackend`` with this folder on ``PYTHONPATH``), so the tests drive
the same process, pipes and restart logic as the real model, minus the 15 s load.

* A prompt containing ``CRASH`` kills the worker with SIGSEGV, as a native library would,
  if the file named by ``$SCRIPTED_CRASH_MARKER`` exists; with ``$SCRIPTED_CRASH_ONCE`` set
  the marker is removed first, so only the first such call crashes.
* With ``$SCRIPTED_CRASH_ALWAYS`` set, every prompt counts as ``CRASH``.
* Otherwise the answer is ``BANANA {}`` when the system prompt holds the skill, else ``hi``.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any


class ScriptedBackend:
    def load(self, options: Any) -> dict[str, Any]:
        return {"backend": "scripted", "device": "cpu", "threads": options.threads, "pid": os.getpid()}

    def generate(self, request: dict[str, Any]) -> dict[str, Any]:
        user = request["messages"][-1]["content"]
        marker = os.environ.get("SCRIPTED_CRASH_MARKER")
        crash = "CRASH" in user or os.environ.get("SCRIPTED_CRASH_ALWAYS")
        if crash and marker and Path(marker).exists():
            if os.environ.get("SCRIPTED_CRASH_ONCE"):
                Path(marker).unlink()
            os.kill(os.getpid(), signal.SIGSEGV)
        text = "BANANA {}" if "BANANA" in (request.get("system") or "") else "hi"
        return {"text": text, "input_tokens": 10, "output_tokens": 2, "finish_reason": "stop"}
