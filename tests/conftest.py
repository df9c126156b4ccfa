"""Shared pytest fixtures: a local Hugging Face Hub for every Hub feature.

The HF clients (huggingface_hub, datasets, kernels) read ``HF_ENDPOINT`` and friends when
they are imported, so :func:`pytest_configure` sets them before any test module is
collected:

* ``HF_ENDPOINT=http://127.0.0.1:<port>`` — a free port bound now; the server starts on
  that socket lazily, the first time a test asks for ``hub_server``.
* ``HF_HUB_DISABLE_XET=1`` (LFS files go through the Git LFS batch API of the local server),
  ``HF_HUB_OFFLINE`` unset.
* ``HF_HUB_DISABLE_TELEMETRY`` is deliberately UNSET: with it, kernels 0.17.2 sends the user
  agent ``"kernels/…; python/3.11.7; "`` (trailing space) and httpx2 refuses the header, so
  every ``kernels`` Hub call fails. Telemetry only goes to ``HF_ENDPOINT``, i.e. the local Hub.
* ``HF_HOME``, ``HF_HUB_CACHE``, ``HF_DATASETS_CACHE`` in a fresh temporary folder.
* ``HF_TOKEN`` = ``TEST_WRITE_TOKEN`` (a token the server accepts for writes).
* ``UPSKILL_HUB_CACHE``, ``UPSKILL_HUB_TABLE_CACHE`` and ``UPSKILL_WHEEL_CACHE`` in the same
  temporary folder, so no test sees the user's eval cache, push's copies of Hub tables or
  the wheels Jobs carry.

Fixtures:

* ``hub_server`` (session): the running local Hub, a
  :class:`upskill_hub.localhub.testing.ServerHandle` with ``.url``, ``.root``,
  ``.inject_faults(method=, path_regex=, status=, count=, retry_after=)``, ``.clear_faults()``,
  ``.requests`` (log of method/path/status/bytes_in) and ``.clear_requests()``.
  Write token: ``TEST_WRITE_TOKEN`` (also in ``HF_TOKEN``); read-only token:
  ``TEST_READ_TOKEN``; trusted kernel publisher org: ``TEST_TRUSTED_ORG``. Import them from
  ``upskill_hub.localhub.testing``.
* ``hub_repo_id`` (function): a fresh unique repo id ``user/test-<uuid8>`` (not created).

Tests that arm faults should clear them (``hub_server.clear_faults()``) when done; the
fixture also clears them after each test that used it.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

#: Folders of input files in other projects' shapes (agent-skill-eval's examples ship a
#: failing test suite for the agent to fix): data for tests, never tests themselves.
collect_ignore = ["dialect_fixtures", "generate_fixtures"]

_STATE: dict[str, Any] = {}


def pytest_configure(config: pytest.Config) -> None:
    from upskill_hub.localhub.testing import TEST_WRITE_TOKEN, bound_socket

    tmp = tempfile.mkdtemp(prefix="upskill-hub-tests-")
    # Bound now, served later: the port is published in HF_ENDPOINT at once, and no other
    # program (an outgoing connection's ephemeral port included) can take it in between.
    sock = bound_socket("127.0.0.1")
    port = sock.getsockname()[1]
    _STATE.update(tmp=tmp, port=port, sock=sock)
    os.environ.update(
        HF_ENDPOINT=f"http://127.0.0.1:{port}",
        HF_HUB_DISABLE_XET="1",
        HF_HOME=os.path.join(tmp, "hf_home"),
        HF_HUB_CACHE=os.path.join(tmp, "hf_home", "hub"),
        HF_DATASETS_CACHE=os.path.join(tmp, "hf_home", "datasets"),
        HF_TOKEN=TEST_WRITE_TOKEN,
        # Eval answers are cached per user; tests must neither read nor fill that cache.
        UPSKILL_HUB_CACHE=os.path.join(tmp, "upskill-cache"),
        # Likewise the copies of Hub tables push keeps (hub/table_cache.py).
        UPSKILL_HUB_TABLE_CACHE=os.path.join(tmp, "upskill-table-cache"),
        # And the wheels Jobs carry (jobs/wheel.py): never the user's ~/.cache.
        UPSKILL_WHEEL_CACHE=os.path.join(tmp, "upskill-wheels"),
    )
    for name in (
        "HF_HUB_OFFLINE",
        "HF_HUB_DISABLE_TELEMETRY",
        "HF_DATASETS_OFFLINE",
        "TRANSFORMERS_OFFLINE",
        "HUGGING_FACE_HUB_TOKEN",
    ):
        os.environ.pop(name, None)
    if "huggingface_hub.constants" in sys.modules:  # imported early by a plugin: point it here too
        from huggingface_hub import constants

        constants.ENDPOINT = os.environ["HF_ENDPOINT"]
        constants.HUGGINGFACE_CO_URL_TEMPLATE = (
            constants.ENDPOINT + "/{repo_id}/resolve/{revision}/{filename}"
        )
        constants.HF_HUB_DISABLE_XET = True


def pytest_unconfigure(config: pytest.Config) -> None:
    sock = _STATE.get("sock")
    if sock is not None:
        sock.close()  # already closed if the Hub ran on it; a no-op then
    tmp = _STATE.get("tmp")
    if tmp:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="session")
def hub_server() -> Iterator[Any]:
    """The local Hub on ``HF_ENDPOINT``'s port, with its state in a temporary root."""
    from upskill_hub.localhub.testing import (
        TEST_READ_TOKEN,
        TEST_TRUSTED_ORG,
        TEST_WRITE_TOKEN,
        running_server,
    )

    root = os.path.join(_STATE["tmp"], "hub-root")
    with running_server(
        root,
        sock=_STATE["sock"],
        write_tokens=(TEST_WRITE_TOKEN,),
        read_tokens=(TEST_READ_TOKEN,),
        trusted_publishers=(TEST_TRUSTED_ORG,),
        user="user",
    ) as handle:
        yield handle


@pytest.fixture(autouse=True)
def _clear_hub_faults(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if "hub_server" in request.fixturenames:
        request.getfixturevalue("hub_server").clear_faults()


@pytest.fixture
def hub_repo_id() -> str:
    """A fresh repo id in the server user's namespace (the repo is not created)."""
    return f"user/test-{uuid.uuid4().hex[:8]}"
