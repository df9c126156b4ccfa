"""Run ``cisco-ai-skill-scanner`` in a process of its own and read its JSON report.

The scanner cannot live in upskill-hub's environment (it pins ``openai<3``,
``anthropic<1``, ``rich<15``; we need newer ones), so it is installed apart (``pipx``,
``uv tool`` or ``bash .ci/install-skill-scanner``) and called as a program. That also
keeps a native crash of its rule engines (yara-x) out of our process. Each run:

* has a bounded time and leads its own process group, killed whole when time runs out;
* gets a scrubbed environment: no API key or token reaches it unless its LLM analyzer
  was asked for (with a model named), and then only the model providers' keys;
* uses the static analyzers only (offline: no LLM, VirusTotal, AI Defense or OSV).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
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
