"""Rendering an agent's changed files to text, within time and size budgets.

Text files are read here (their first bytes only, decoded as UTF-8 with replacement).
Everything a parser must open (xlsx, docx, pptx, PDF, images) goes to the worker process
(:mod:`~upskill_hub.artifacts.worker`); this side watches it: a file that takes longer
than :data:`~upskill_hub.artifacts.budgets.FILE_TIMEOUT_S` gets its worker killed and a
one-line note, and a fresh worker goes on with the next file while the row's time
(:data:`~upskill_hub.artifacts.budgets.ROW_TIMEOUT_S`) lasts. Symlinks are never followed,
files over the size limit are never opened, and the rendered text is masked like answers
are (:func:`~upskill_hub._util.redact.redact`) before anyone sees it.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from upskill_hub._util.redact import redact
from upskill_hub.artifacts import budgets
from upskill_hub.artifacts.changes import ChangedFile, ChangeSet
from upskill_hub.artifacts.kinds import HEAD_BYTES, sniff
from upskill_hub.artifacts.safeio import Refused, human_size, open_inside, read_head

#: Kinds the worker renders.
PARSED_KINDS = frozenset({"xlsx", "docx", "pptx", "pdf", "image"})
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])
#: Seconds allowed, on top of the first file's own time, to start Python and import a reader.
STARTUP_S = 5.0


def worker_argv() -> list[str]:
    """The worker's command line: this Python in isolated mode (``-I``: no current folder,
    no ``PYTHONPATH``, no user site on ``sys.path``), so a module the agent planted next to
    its files (an ``openpyxl.py``) is never imported; only this package's folder is added."""
    boot = (
        f"import sys; sys.path.insert(0, {_PACKAGE_PARENT!r}); "
        "from upskill_hub.artifacts.worker import main; main()"
    )
    return [sys.executable, "-I", "-c", boot]


def _worker_env() -> dict[str, str]:
    """Only what a Python needs: the worker gets none of the user's keys or tokens."""
    env = {k: os.environ[k] for k in ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ") if k in os.environ}
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")  # one thread, if loaded
    return env


@dataclass(frozen=True)
class Rendered:
    """One changed file as graders see it: ``text`` (may end with truncation notes), or a
    one-line ``note`` saying why there is none."""

    path: str
    kind: str
    text: str = ""
    note: str = ""

    @property
    def shown(self) -> str:
        """What a grader reads for this file: the text, or the note."""
        return self.text if not self.note else f"({self.note})"


def _render_text(root: Path, rel: str, identity: tuple[int, int] | None) -> Rendered:
    cap = budgets.MAX_FILE_CHARS
    try:
        opened = open_inside(root, rel, identity)
    except Refused as exc:
        return Rendered(rel, "text", note=str(exc))
    try:
        raw = os.pread(opened.fd, cap * 4 + 4, 0)  # at most 4 bytes a character in UTF-8
    except OSError as exc:
        return Rendered(rel, "text", note=f"cannot be read ({exc.strerror or exc})")
    finally:
        os.close(opened.fd)
    text = raw.decode("utf-8", "replace")
    if len(text) > cap or opened.size > len(raw):
        shown = text[:cap]
        left = max(opened.size - len(shown.encode("utf-8", "replace")), 0)
        return Rendered(rel, "text", shown + f"\n… truncated: {left} more bytes (file is {human_size(opened.size)})")
    return Rendered(rel, "text", text)


def _direct_note(f: ChangedFile) -> Rendered | None:
    """The files no reader opens: symlinks, other binaries, files over the size limit, gone ones."""
    if f.kind == "symlink":
        return Rendered(f.path, f.kind, note=f.note or "symlink; not followed")
    if f.status == "deleted":
        return Rendered(f.path, f.kind, note="deleted by the run")
    if f.size is None:
        return Rendered(f.path, f.kind, note=f.note or "not readable")
    if f.kind == "binary":
        return Rendered(f.path, f.kind, note=f"binary file, {human_size(f.size)}: not rendered")
    if f.kind in PARSED_KINDS and f.size > budgets.MAX_FILE_BYTES:
        return Rendered(
            f.path, f.kind,
            note=f"{human_size(f.size)}, over the {human_size(budgets.MAX_FILE_BYTES)} rendering limit; not read",
        )  # fmt: skip
    return None


def _kill(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    proc.wait()


def _run_worker(
    root: Path, identity: tuple[int, int] | None, todo: list[ChangedFile], deadline: float
) -> dict[str, Rendered]:
    """Render ``todo`` in worker processes; a file that overruns its time is a note."""
    done: dict[str, Rendered] = {}
    lim = budgets.as_dict()
    env = _worker_env()
    left = list(todo)
    while left:
        if time.monotonic() >= deadline:
            for f in left:
                done[f.path] = Rendered(
                    f.path, f.kind, note=f"not rendered: the row's {budgets.ROW_TIMEOUT_S:g} s for rendering ran out"
                )
            break
        request = {
            "root": str(root),
            "identity": list(identity) if identity else None,
            "files": [{"path": f.path, "kind": f.kind} for f in left],
            "limits": lim,
        }
        try:
            proc = subprocess.Popen(
                worker_argv(),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                cwd="/", env=env, start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            for f in left:
                done[f.path] = Rendered(f.path, f.kind, note=f"not rendered: worker did not start ({exc})")
            break
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(request).encode())
            proc.stdin.close()
        except OSError:
            pass
        buf = b""
        # Starting Python and importing a reader counts against the first file.
        file_deadline = min(time.monotonic() + budgets.FILE_TIMEOUT_S + STARTUP_S, deadline)
        fd = proc.stdout.fileno()
        while left:
            wait = file_deadline - time.monotonic()
            ready = select.select([fd], [], [], max(wait, 0))[0] if wait > 0 else []
            if not ready:
                current = left.pop(0)
                why = (
                    f"not rendered: took over {budgets.FILE_TIMEOUT_S:g} s (stopped)"
                    if time.monotonic() < deadline
                    else f"not rendered: the row's {budgets.ROW_TIMEOUT_S:g} s for rendering ran out"
                )
                done[current.path] = Rendered(current.path, current.kind, note=why)
                _kill(proc)
                break
            chunk = os.read(fd, 1 << 16)
            if not chunk:  # the worker died (memory limit, a crash in C): this file is a note
                current = left.pop(0)
                proc.wait()
                done[current.path] = Rendered(
                    current.path, current.kind, note=f"not rendered: the reader crashed (exit {proc.returncode})"
                )
                break
            buf += chunk
            while b"\n" in buf and left:
                line, buf = buf.split(b"\n", 1)
                current = left.pop(0)
                try:
                    got = json.loads(line)
                    done[current.path] = Rendered(current.path, current.kind, got.get("text", ""), got.get("note", ""))
                except ValueError:
                    done[current.path] = Rendered(current.path, current.kind, note="not rendered: unreadable reply")
                file_deadline = min(time.monotonic() + budgets.FILE_TIMEOUT_S + 1.0, deadline)
        else:
            proc.stdout.close()
            proc.wait()
            continue
        proc.stdout.close()
        if proc.poll() is None:
            _kill(proc)
    return done


def _clean(r: Rendered, secrets: Sequence[str]) -> Rendered:
    return Rendered(r.path, r.kind, redact(r.text, extra=list(secrets)), redact(r.note, extra=list(secrets)))


def render_changes(
    root: Path,
    changes: ChangeSet,
    *,
    identity: tuple[int, int] | None = None,
    secrets: Sequence[str] = (),
    limit: int | None = None,
) -> list[Rendered]:
    """The first ``limit`` (:data:`~upskill_hub.artifacts.budgets.MAX_RENDERED`) changed files
    as text, in the change set's order; blocking (run it in a thread from async code)."""
    limit = budgets.MAX_RENDERED if limit is None else limit
    chosen = changes.files[:limit]
    out: dict[str, Rendered] = {}
    parsed: list[ChangedFile] = []
    for f in chosen:
        direct = _direct_note(f)
        if direct is not None:
            out[f.path] = direct
        elif f.kind == "text":
            out[f.path] = _render_text(root, f.path, identity)
        else:
            parsed.append(f)
    if parsed:
        out.update(_run_worker(root, identity, parsed, time.monotonic() + budgets.ROW_TIMEOUT_S))
    return [_clean(out[f.path], secrets) for f in chosen]


def render_one(
    root: Path, rel: str, *, identity: tuple[int, int] | None = None, secrets: Sequence[str] = ()
) -> Rendered:
    """One file by path (a ``file-contains`` target beyond the rendered ones)."""
    try:
        opened = open_inside(root, rel, identity)
    except Refused as exc:
        return Rendered(rel, "binary", note=str(exc))
    try:
        kind, size = sniff(rel, read_head(opened, HEAD_BYTES)), opened.size
    except OSError as exc:
        return Rendered(rel, "binary", note=f"cannot be read ({exc.strerror or exc})")
    finally:
        os.close(opened.fd)
    f = ChangedFile(rel, "modified", kind, size, None)
    return render_changes(root, ChangeSet([f]), identity=identity, secrets=secrets, limit=1)[0]
