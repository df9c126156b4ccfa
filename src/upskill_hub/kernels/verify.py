"""``kernels verify``: load a published kernel exactly as a user would, then test it.

Everything runs in fresh subprocesses: a kernel's ops register into the process's global
torch op registry and its module is cached by ``kernels``, so testing in the process that
built or pushed it would prove nothing. First a smoke check (``kernels.get_kernel`` picks
and imports a variant; its ops are registered under the metadata id), then the project's
tests (from ``--project`` or the ``tests/`` folder pushed to the repo) with
``KERNEL_REPO_ID``/``KERNEL_VERSION`` set so their ``kernel`` fixture loads the same thing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from upskill_hub._util.redact import redact
from upskill_hub.errors import UpskillError

_MARK = "@@UPSKILL-VERIFY@@"
_SMOKE = r"""
import json, sys
from pathlib import Path
import torch
import kernels
args = json.loads(sys.argv[1])
mod = kernels.get_kernel(args["repo_id"], version=args["version"], revision=args["revision"],
                         trust_remote_code=args["trust"])
loaded = next((k for k in kernels.get_loaded_kernels() if k.module is mod), None)
meta = loaded.metadata
ns = meta.id
ops = sorted(n.split("::", 1)[1] for n in torch._C._dispatch_get_all_op_names() if n.startswith(ns + "::"))
names = getattr(mod, "__all__", None) or [n for n in dir(mod) if not n.startswith("_")]
functions = sorted(n for n in names if callable(getattr(mod, n, None)) and not isinstance(getattr(mod, n), type(sys)))
print("@@MARK@@" + json.dumps({
    "variant": Path(mod.__file__).parent.name,
    "id": ns,
    "name": str(meta.name),
    "version": meta.version,
    "backend": str(meta.backend.backend_type),
    "revision": loaded.repo_info.revision if loaded.repo_info else None,
    "functions": functions,
    "ops": ops,
}))
""".replace("@@MARK@@", _MARK)
_SUMMARY = re.compile(r"(\d+) (passed|failed|error|errors|skipped)")


@dataclass
class VerifyResult:
    repo_id: str
    variant: str
    backend: str
    op_namespace: str
    functions: list[str]
    ops: list[str]
    tests_source: str | None = None
    tests: dict[str, int] = field(default_factory=dict)
    test_output: str = ""

    @property
    def ok(self) -> bool:
        return self.tests.get("failed", 0) == 0 and self.tests.get("error", 0) == 0


def _kernel_env(repo_id: str, version: int | None, revision: str | None, trust: bool) -> dict[str, str]:
    env = dict(os.environ)
    env["KERNEL_REPO_ID"] = repo_id
    env.pop("KERNEL_LOCAL_PATH", None)
    if revision:
        env["KERNEL_REVISION"] = revision
        env.pop("KERNEL_VERSION", None)
    else:
        env["KERNEL_VERSION"] = str(version)
        env.pop("KERNEL_REVISION", None)
    env["KERNEL_TRUST_REMOTE_CODE"] = "1" if trust else "0"
    return env


def _last_error_line(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.strip().splitlines() if ln.strip()]
    errors = [ln for ln in lines if re.match(r"^[A-Za-z_.]*(Error|Exception)\b", ln)]
    return (errors or lines or ["no output"])[-1]


def smoke_check(
    repo_id: str, *, version: int | None, revision: str | None, trust_remote_code: bool, timeout: int = 900
) -> dict:
    """Load the kernel with ``kernels.get_kernel`` in a fresh interpreter; return what loaded."""
    args = json.dumps(
        {"repo_id": repo_id, "version": version, "revision": revision, "trust": trust_remote_code}
    )
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _SMOKE, args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=_kernel_env(repo_id, version, revision, trust_remote_code),
        )
    except subprocess.TimeoutExpired:
        raise UpskillError(f"{repo_id}: loading the kernel took longer than {timeout}s") from None
    for line in proc.stdout.splitlines():
        if line.startswith(_MARK):
            return json.loads(line[len(_MARK) :])
    last = redact(_last_error_line(proc.stderr))
    hint = (
        " (pass --trust-remote-code to load it anyway)"
        if "trusted publisher" in last and not trust_remote_code
        else ""
    )
    raise UpskillError(f"{repo_id}: kernels.get_kernel failed: {last}{hint}")


def _download_tests(repo_id: str, revision: str, dest: Path) -> Path | None:
    from huggingface_hub import snapshot_download

    path = Path(
        snapshot_download(
            repo_id, repo_type="kernel", revision=revision, allow_patterns=["tests/**"], local_dir=dest
        )
    )
    tests = path / "tests"
    return tests if tests.is_dir() and any(tests.glob("test*.py")) else None


def run_tests(tests_dir: Path, env: dict[str, str], timeout: int = 1800) -> tuple[dict[str, int], str]:
    """Run pytest on ``tests_dir`` in a subprocess; return the summary counts and output tail."""
    if importlib.util.find_spec("pytest") is None:
        raise UpskillError(
            "pytest is not installed: pip install pytest (or use --no-tests for the smoke check only)"
        )
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        str(tests_dir),
        "-q",
        "-p",
        "no:cacheprovider",
        "--rootdir",
        str(tests_dir),
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=tests_dir)
    except subprocess.TimeoutExpired:
        raise UpskillError(f"the kernel's tests took longer than {timeout}s") from None
    out = redact(proc.stdout + proc.stderr)
    tail = [ln for ln in out.strip().splitlines() if ln.strip()]
    counts: dict[str, int] = {}
    summary = tail[-1] if tail else ""
    for num, what in _SUMMARY.findall(summary):
        counts["error" if what.startswith("error") else what] = int(num)
    if proc.returncode not in (0, 1) and not counts:
        raise UpskillError(f"running the kernel's tests failed: {_last_error_line(out)}")
    return counts, "\n".join(tail[-40:])


def verify_kernel(
    repo_id: str,
    *,
    version: int | None = None,
    revision: str | None = None,
    trust_remote_code: bool = False,
    project: Path | None = None,
    tests: bool = True,
) -> VerifyResult:
    """Load ``repo_id`` in a new process, check its ops registered, run the project's tests."""
    if version is None and revision is None:
        version = 1
    if version is not None and revision is not None:
        raise UpskillError("use --version or --revision, not both")
    info = smoke_check(repo_id, version=version, revision=revision, trust_remote_code=trust_remote_code)
    result = VerifyResult(
        repo_id=repo_id,
        variant=info["variant"],
        backend=info["backend"],
        op_namespace=info["id"],
        functions=info["functions"],
        ops=info["ops"],
    )
    if not info["ops"] and not info["variant"].startswith("torch-"):
        raise UpskillError(
            f"{repo_id}: variant {info['variant']} loaded but registered no ops under {info['id']}"
        )
    if not tests:
        return result
    env = _kernel_env(repo_id, version, revision, trust_remote_code)
    with tempfile.TemporaryDirectory(prefix="upskill-verify-") as tmp:
        if project is not None:
            tests_dir = Path(project) / "tests"
            if not tests_dir.is_dir():
                raise UpskillError(f"{project}: has no tests/ folder to run")
            result.tests_source = str(tests_dir)
        else:
            tests_dir = _download_tests(repo_id, revision or f"v{version}", Path(tmp))
            result.tests_source = f"{repo_id}@{revision or f'v{version}'}:tests/" if tests_dir else None
        if tests_dir is None:
            return result
        result.tests, result.test_output = run_tests(tests_dir, env)
    return result
