"""The process that opens binary formats: ``python -m upskill_hub.artifacts.worker``.

Readers of xlsx, docx, pptx and PDF are large parsers fed the agent's bytes; one of them
may loop, crawl or allocate without end on a crafted file. They run here, in a child
process with an address-space limit, each file under an interval timer; the parent
(:mod:`~upskill_hub.artifacts.render`) also kills this process when a file takes too long
(a parser stuck in C code never sees the timer) and goes on with the next file.

Protocol: one JSON request on stdin (``root``, ``identity``, ``files`` as
``[{"path", "kind"}]`` and ``limits``); one JSON line per file on stdout, in order:
``{"path", "text", "note"}``, ``note`` being a one-line failure (then ``text`` is empty).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from upskill_hub.artifacts.formats import RENDERERS
from upskill_hub.artifacts.safeio import Refused, open_inside, read_all
from upskill_hub.artifacts.zipcheck import ZipRefused


class _Timeout(BaseException):
    """Raised by the interval timer; not an ``Exception``, so no reader's ``except Exception``
    (pypdf has many) can swallow it and go on."""


def _alarm(signum: int, frame: Any) -> None:
    raise _Timeout


def _limit_memory(nbytes: int) -> None:
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = nbytes if hard == resource.RLIM_INFINITY else min(nbytes, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ImportError, ValueError, OSError):
        pass


def one_line(exc: BaseException) -> str:
    """An exception as one line: its type and the first line of its message, never a traceback."""
    msg = " ".join(str(exc).split())[:300]
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


def render_file(root: Path, identity: Any, rel: str, kind: str, lim: dict[str, Any]) -> dict[str, str]:
    """Render one file under the per-file timer; every failure is a one-line ``note``."""
    try:
        opened = open_inside(root, rel, tuple(identity) if identity else None)
    except Refused as exc:
        return {"path": rel, "text": "", "note": str(exc)}
    try:
        data = read_all(opened, lim["max_file_bytes"])
    except Refused as exc:
        return {"path": rel, "text": "", "note": str(exc)}
    except OSError as exc:
        return {"path": rel, "text": "", "note": f"cannot be read ({exc.strerror or exc})"}
    finally:
        os.close(opened.fd)
    signal.setitimer(signal.ITIMER_REAL, lim["file_timeout_s"])
    try:
        text = RENDERERS[kind](data, lim)
        return {"path": rel, "text": text, "note": ""}
    except _Timeout:
        return {"path": rel, "text": "", "note": f"not rendered: took over {lim['file_timeout_s']:g} s (stopped)"}
    except ZipRefused as exc:
        return {"path": rel, "text": "", "note": str(exc)}
    except MemoryError:
        return {"path": rel, "text": "", "note": "not rendered: ran out of the worker's memory limit"}
    except ImportError as exc:  # a reader's native library that cannot be mapped under the limit
        if "failed to map segment" in str(exc) or "cannot allocate memory" in str(exc).lower():
            return {"path": rel, "text": "", "note": "not rendered: ran out of the worker's memory limit"}
        return {"path": rel, "text": "", "note": f"not rendered: {one_line(exc)}"}
    except Exception as exc:  # noqa: BLE001 - a malformed file is a note, never a traceback
        return {"path": rel, "text": "", "note": f"not readable as {kind}: {one_line(exc)}"}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def main() -> None:
    # openpyxl imports numpy when it can; no reader needs it, and numpy's BLAS reserves memory
    # per core at import (over the address-space limit on a large machine): keep it out.
    sys.modules["numpy"] = None  # type: ignore[assignment]
    req = json.loads(sys.stdin.buffer.read())
    lim = req["limits"]
    _limit_memory(int(lim["worker_memory_bytes"]))
    signal.signal(signal.SIGALRM, _alarm)
    root = Path(req["root"])
    for item in req["files"]:
        result = render_file(root, req.get("identity"), item["path"], item["kind"], lim)
        sys.stdout.write(json.dumps(result) + "\n")  # ASCII: whatever the locale
        sys.stdout.flush()


if __name__ == "__main__":
    main()
