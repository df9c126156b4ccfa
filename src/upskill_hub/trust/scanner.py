"""Run ``cisco-ai-skill-scanner`` in a process of its own and read its JSON reports.

The scanner cannot live in upskill-hub's environment (it pins ``openai<3``,
``anthropic<1``, ``rich<15``; we need newer ones), so it is installed apart (``pipx``,
``uv tool`` or ``bash .ci/install-skill-scanner``) and called as a program. That also
keeps a native crash of its rule engines (yara-x) out of our process. Each run:

* has a bounded time and leads its own process group, killed whole when time runs out;
* gets a scrubbed environment: no API key or token reaches it unless its LLM analyzer
  was asked for (with a model named), and then only the model providers' keys;
* uses the static analyzers only (offline: no LLM, VirusTotal, AI Defense or OSV).

Importing the scanner takes seconds and scanning a skill a fraction of one, so one
process serves many skills (:class:`ScanSession`): our driver (``scan_driver.py``, run by
the scanner's own interpreter) builds the scanner once and answers one folder per line.
The static session is shared by every scan of a process (one per command, one per test
session) and ended at exit; a scanner that hangs or dies is ended with its process group
and the next scan starts a fresh one. Where the scanner's interpreter cannot be found (a
launcher that is no Python script), each folder is one ``skill-scanner scan`` run.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from upskill_hub._util import safejson
from upskill_hub._util.limits import env_number
from upskill_hub._util.redact import redact
from upskill_hub.errors import UpskillError

#: The version upskill-hub is tested with (``.ci/install-skill-scanner`` pins it).
PINNED = "cisco-ai-skill-scanner==2.3.2"
#: Names the scanner's executable, overriding the search.
ENV_EXECUTABLE = "UPSKILL_SKILL_SCANNER"
#: Seconds one scan may take before it is killed (``UPSKILL_SKILL_SCAN_TIMEOUT_S``).
DEFAULT_TIMEOUT_S = env_number("UPSKILL_SKILL_SCAN_TIMEOUT_S", 300.0)
INSTALL_HINT = (
    f"install it with `pipx install {PINNED}` (or `uv tool install {PINNED}`; "
    f"in a clone `bash .ci/install-skill-scanner`), or set {ENV_EXECUTABLE} to its path"
)
#: Our side of the long-lived scanner process (run by the scanner's interpreter, never imported).
DRIVER = Path(__file__).with_name("scan_driver.py")
#: Longest line the driver may answer (one skill's JSON report).
_MAX_ANSWER_BYTES = 64 * 1024 * 1024
#: Variables passed through to every run (locale, temp, where the user's home is).
_KEEP = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ", "SYSTEMROOT")
#: Variables passed only to a run with the LLM analyzer: its own settings and the
#: providers' keys that litellm reads.
_LLM_PREFIXES = ("SKILL_SCANNER_LLM_", "ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_API_KEY", "AZURE_")


class ScannerMissing(UpskillError):
    """The scanner program is not installed (or ``UPSKILL_SKILL_SCANNER`` names nothing runnable)."""


class ScannerFailed(UpskillError):
    """The scanner ran but gave no report: a crash, a timeout, output that is not its JSON."""


def _checkout_copy() -> Path:
    """``.ci/skill-scanner/bin/skill-scanner`` of the clone this package runs from (src layout)."""
    return Path(__file__).resolve().parents[3] / ".ci" / "skill-scanner" / "bin" / "skill-scanner"


def find_scanner() -> Path:
    """The scanner's executable: ``$UPSKILL_SKILL_SCANNER``, else ``skill-scanner`` on PATH,
    else a clone's ``.ci/skill-scanner``; a one-line error with the install line otherwise."""
    named = os.environ.get(ENV_EXECUTABLE)
    if named:
        p = Path(named).expanduser()
        if not (p.is_file() and os.access(p, os.X_OK)):
            raise ScannerMissing(f"{ENV_EXECUTABLE}={named}: not an executable file; {INSTALL_HINT}")
        return p
    on_path = shutil.which("skill-scanner")
    if on_path:
        return Path(on_path)
    local = _checkout_copy()
    if local.is_file() and os.access(local, os.X_OK):
        return local
    raise ScannerMissing(f"the skill scanner (cisco-ai-skill-scanner) is not installed: {INSTALL_HINT}")


def scanner_env(*, with_llm: bool, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment a scan runs in: the few variables it needs, no secrets unless LLM is asked."""
    src = os.environ if base is None else base
    env = {k: src[k] for k in _KEEP if k in src}
    if with_llm:
        env.update({k: v for k, v in src.items() if k.startswith(_LLM_PREFIXES)})
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


@dataclass(frozen=True)
class ScannerRun:
    """The scanner's JSON report of one folder, and the scanner's version."""

    data: dict[str, Any]
    version: str


def _run(cmd: list[str], env: dict[str, str], timeout: float) -> tuple[int, str, str]:
    """Run ``cmd`` in its own process group; kill the group when ``timeout`` passes."""
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
            errors="replace",
            start_new_session=True,
        )
    except OSError as exc:
        raise ScannerMissing(f"{cmd[0]}: cannot run ({exc.strerror}); {INSTALL_HINT}") from None
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        proc.communicate()
        raise ScannerFailed(
            f"the skill scanner took longer than {timeout:g}s and was stopped (UPSKILL_SKILL_SCAN_TIMEOUT_S raises it)"
        ) from None
    finally:
        if proc.poll() is None:  # Ctrl-C or another exception while waiting
            _kill_group(proc.pid)
    _kill_group(proc.pid)  # helpers it left behind in its group
    return proc.returncode, out, err


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def scanner_version(exe: Path, timeout: float = 60.0) -> str:
    """``skill-scanner --version`` (``skill-scanner 2.3.2`` -> ``2.3.2``)."""
    rc, out, _ = _run([str(exe), "--version"], scanner_env(with_llm=False), timeout)
    words = out.split()
    return words[-1] if rc == 0 and words else "unknown"


def run_scanner(
    folder: Path,
    *,
    llm_model: str | None = None,
    timeout: float | None = None,
    exe: Path | None = None,
) -> ScannerRun:
    """Scan ``folder`` with the scanner's static analyzers (and its LLM one when ``llm_model`` is named).

    Raises :class:`ScannerMissing` or :class:`ScannerFailed` (one line, secrets masked).
    """
    exe = exe or find_scanner()
    limit = DEFAULT_TIMEOUT_S if timeout is None else timeout
    env = scanner_env(with_llm=bool(llm_model))
    cmd = [str(exe), "scan", str(folder), "--format", "json", "--compact", "--lenient"]
    if llm_model:
        env["SKILL_SCANNER_LLM_MODEL"] = llm_model
        cmd.append("--use-llm")
    version = scanner_version(exe, min(limit, 60.0))
    with tempfile.TemporaryDirectory(prefix="upskill-scan-out-") as tmp:
        report = Path(tmp) / "report.json"
        rc, out, err = _run([*cmd, "--output-json", str(report)], env, limit)
        text = report.read_text(encoding="utf-8", errors="replace") if report.is_file() else ""
    if not text:
        tail = (err.strip().splitlines() or out.strip().splitlines() or ["no output"])[-1]
        raise ScannerFailed(f"the skill scanner gave no report (exit {rc}): {redact(tail)[:300]}")
    try:
        data = safejson.loads(text)
    except ValueError as exc:
        raise ScannerFailed(f"the skill scanner's report is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ScannerFailed("the skill scanner's report is not a JSON object")
    return ScannerRun(data=data, version=version)


def scanner_python(exe: Path) -> Path | None:
    """The Python of the scanner's environment: its launcher's ``#!`` line, else ``python`` beside it.

    pip, pipx and ``uv tool`` write launchers whose first line names their venv's
    interpreter; None when ``exe`` is no such launcher (the caller then runs the CLI).
    """
    try:
        with exe.open("rb") as fh:
            first = fh.readline(4096)
    except OSError:
        return None
    if first.startswith(b"#!"):
        words = first[2:].decode("utf-8", "replace").split()
        if words and Path(words[0]).name.startswith("python") and Path(words[0]).is_file():
            return Path(words[0])
    beside = exe.resolve().parent / "python"
    return beside if first.startswith(b"#!") and beside.is_file() else None


class ScanSession:
    """One scanner process that scans many folders, each within its own time bound.

    Started on the first :meth:`scan`; :meth:`close` (or the ``with`` block's end) ends it
    with its process group. A timeout or a dead driver ends the process too (the error is
    one line); a later :meth:`scan` starts a new one.
    """

    def __init__(self, *, exe: Path | None = None, llm_model: str | None = None) -> None:
        self.exe = exe or find_scanner()
        self.llm_model = llm_model
        self.python = scanner_python(self.exe)
        self.version = "unknown"
        self.starts = 0  # processes started (the tests count them)
        self._proc: subprocess.Popen[bytes] | None = None
        self._err: Any = None
        self._buf = b""
        self._owner = os.getpid()
        self._lock = threading.Lock()

    def __enter__(self) -> ScanSession:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def scan(self, folder: Path, *, timeout: float | None = None) -> ScannerRun:
        """The scanner's JSON report of ``folder``; :class:`ScannerFailed` past ``timeout`` seconds."""
        limit = DEFAULT_TIMEOUT_S if timeout is None else timeout
        if self.python is None:
            return run_scanner(folder, llm_model=self.llm_model, timeout=limit, exe=self.exe)
        with self._lock:
            try:
                if self._proc is None or self._proc.poll() is not None:
                    self._start(limit)
                assert self._proc is not None and self._proc.stdin is not None
                self._proc.stdin.write(json.dumps({"folder": str(folder)}).encode() + b"\n")
                self._proc.stdin.flush()
                answer = self._answer(time.monotonic() + limit, limit)
            except BaseException:
                self._end()
                raise
        if not answer.get("ok") or not isinstance(answer.get("report"), dict):
            raise ScannerFailed(
                f"the skill scanner could not scan it: {redact(str(answer.get('error')))[:300]}"
            )
        return ScannerRun(data=answer["report"], version=self.version)

    def close(self) -> None:
        """End the scanner process (and anything it started)."""
        with self._lock:
            self._end()

    def _start(self, limit: float) -> None:
        self._end()
        env = scanner_env(with_llm=bool(self.llm_model))
        cmd = [str(self.python), "-I", str(DRIVER)]
        if self.llm_model:
            env["SKILL_SCANNER_LLM_MODEL"] = self.llm_model
            cmd.append("--use-llm")
        self._err = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the process; closed in _end
        try:
            self._proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._err,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            raise ScannerMissing(f"{self.python}: cannot run ({exc.strerror}); {INSTALL_HINT}") from None
        self.starts += 1
        hello = self._answer(time.monotonic() + limit, limit)
        if not hello.get("ready"):
            raise ScannerFailed("the skill scanner's driver did not start (no ready line)")
        self.version = str(hello.get("version") or "unknown")

    def _answer(self, deadline: float, limit: float) -> dict[str, Any]:
        """The driver's next JSON line, waiting until ``deadline`` at most."""
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        fd = proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buf:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ScannerFailed(
                        f"the skill scanner took longer than {limit:g}s and was stopped "
                        "(UPSKILL_SKILL_SCAN_TIMEOUT_S raises it)"
                    )
                if not sel.select(left):
                    continue
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    raise ScannerFailed(f"the skill scanner stopped ({self._stderr_tail()})")
                self._buf += chunk
                if len(self._buf) > _MAX_ANSWER_BYTES:
                    raise ScannerFailed("the skill scanner's answer is too long")
        line, self._buf = self._buf.split(b"\n", 1)
        try:
            data = safejson.loads(line.decode("utf-8", "replace"))
        except ValueError as exc:
            raise ScannerFailed(f"the skill scanner's answer is not JSON ({exc})") from None
        if not isinstance(data, dict):
            raise ScannerFailed("the skill scanner's answer is not a JSON object")
        return data

    def _stderr_tail(self) -> str:
        proc, err = self._proc, self._err
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=1)
        code = proc.returncode if proc is not None else None
        text = ""
        if err is not None:
            err.seek(0)
            text = err.read()[-4000:].decode("utf-8", "replace")
        tail = (text.strip().splitlines() or ["no output"])[-1]
        return f"exit {code}: {redact(tail)[:300]}"

    def _end(self) -> None:
        proc, self._proc, self._buf = self._proc, None, b""
        if proc is not None and os.getpid() == self._owner:
            with contextlib.suppress(OSError, ValueError):
                if proc.stdin is not None:
                    proc.stdin.close()
            _kill_group(proc.pid)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
            if proc.stdout is not None:
                proc.stdout.close()
        if self._err is not None:
            self._err.close()
            self._err = None


_shared: dict[tuple[str, str | None], ScanSession] = {}
_shared_lock = threading.Lock()


def shared_session(exe: Path | None = None) -> ScanSession:
    """The process's static-analyzer session for ``exe`` (found when None), ended at exit.

    Sharing it is what makes a command's (or a test session's) later skills fast: only the
    first scan pays for importing the scanner.
    """
    exe = exe or find_scanner()
    key = (str(exe), os.environ.get(ENV_EXECUTABLE))
    with _shared_lock:
        session = _shared.get(key)
        if session is None or session._owner != os.getpid():
            session = _shared[key] = ScanSession(exe=exe)
        return session


def close_sessions() -> None:
    """End every shared scanner process (at exit; tests that count processes start clean)."""
    with _shared_lock:
        sessions = list(_shared.values())
        _shared.clear()
    for session in sessions:
        session.close()


atexit.register(close_sessions)
