"""A local-model backend for tests: instant scripted answers, and a crash on demand.

It is loaded by name in the real worker process (``UPSKILL_LOCAL_BACKEND=
scripted_backend:ScriptedBackend`` with this folder on ``PYTHONPATH``), so the tests drive
the same process, pipes and restart logic as the real model, minus the 15 s load.

* A prompt containing ``CRASH`` kills the worker with SIGSEGV, as a native library would,
  if the file named by ``$SCRIPTED_CRASH_MARKER`` exists; with ``$SCRIPTED_CRASH_ONCE`` set
  the marker is removed first, so only the first such call crashes.
* With ``$SCRIPTED_CRASH_ALWAYS`` set, every prompt counts as ``CRASH``.
* A prompt containing ``WAIT`` blocks until the file named by ``$SCRIPTED_RELEASE`` exists,
  so a test can queue requests behind it and know they will form one batch.
* With tools offered as text (``CALL <tool>`` in the system prompt), a prompt containing
  ``LOADME:<name>`` and no tool result yet gets ``CALL load_skill {"name": "<name>"}``.
* Otherwise the answer is ``BANANA {}`` when the system prompt (or a tool result) holds the
  skill, else ``hi``.

It batches like the transformers backend does (``generate_batch`` with ``on_answer``): a
batch holding a ``CRASH`` prompt dies before any of its answers is out, as one batched
native generation would; otherwise each answer is handed over as soon as it is made.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path
from typing import Any


class ScriptedBackend:
    def load(self, options: Any) -> dict[str, Any]:
        return {"backend": "scripted", "device": "cpu", "threads": options.threads, "pid": os.getpid()}

    def generate_batch(self, requests: list[dict[str, Any]], on_answer: Any = None) -> list[dict[str, Any]]:
        if any(self._crashes(r) for r in requests):
            os.kill(os.getpid(), signal.SIGSEGV)
        answers = []
        for index, request in enumerate(requests):
            answers.append(self.generate(request))
            if on_answer is not None:
                on_answer(index, answers[-1])
        return answers

    @staticmethod
    def _crashes(request: dict[str, Any]) -> bool:
        """Whether this request kills the worker (spending the marker when it is a one-off)."""
        marker = os.environ.get("SCRIPTED_CRASH_MARKER")
        crash = "CRASH" in request["messages"][-1]["content"] or os.environ.get("SCRIPTED_CRASH_ALWAYS")
        if crash and marker and Path(marker).exists():
            if os.environ.get("SCRIPTED_CRASH_ONCE"):
                Path(marker).unlink()
            return True
        return False

    def generate(self, request: dict[str, Any]) -> dict[str, Any]:
        user = request["messages"][-1]["content"]
        if "WAIT" in user:
            release = Path(os.environ.get("SCRIPTED_RELEASE", "/nonexistent"))
            deadline = time.monotonic() + 60
            while not release.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
        if self._crashes(request):
            os.kill(os.getpid(), signal.SIGSEGV)
        system = request.get("system") or ""
        results = [m["content"] for m in request["messages"] if m["content"].startswith("RESULT of ")]
        wanted = re.search(r"LOADME:([\w-]+)", user)
        if "CALL <tool>" in system and wanted and not results:
            text = "CALL load_skill " + json.dumps({"name": wanted.group(1)})
            return {"text": text, "input_tokens": 10, "output_tokens": 4, "finish_reason": "stop"}
        text = "BANANA {}" if "BANANA" in system or any("BANANA" in r for r in results) else "hi"
        return {"text": text, "input_tokens": 10, "output_tokens": 2, "finish_reason": "stop"}
