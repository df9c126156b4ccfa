"""A local Hugging Face Hub-compatible server (FastAPI + uvicorn) with state on disk.

For offline work, air-gapped teams and tests: point the unmodified clients at it with
``HF_ENDPOINT=http://127.0.0.1:PORT`` and ``HF_HUB_DISABLE_XET=1``. Modules:

* ``storage``  — content-addressed blobs + per-repo refs/commits, atomic and locked (values: ``records``)
* ``auth``     — write / read-only tokens, anonymous access
* ``faults``   — fault injection and request log for tests
* ``jobs``     — Hugging Face Jobs run as local subprocesses (``JobManager``); ``joblog``: their logs
* ``hardware`` — the Job flavors listed and accepted
* ``routes``   — the HTTP handlers, one module per resource (repos and files, commits, LFS, Jobs)
* ``app``      — the HTTP API (``create_app``): wires the routes
* ``testing``  — ``running_server()`` context manager (background thread)
"""

from __future__ import annotations

from typing import Any

__all__ = ["ServerConfig", "create_app"]


def __getattr__(name: str) -> Any:
    # Lazy: importing the package (e.g. for ``testing`` constants in conftest) must not pull FastAPI.
    if name in __all__:
        from upskill_hub.localhub import app

        return getattr(app, name)
    raise AttributeError(name)
