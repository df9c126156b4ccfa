"""Run the local Hub in a background thread: for tests, the demo and the Space.

```python
from upskill_hub.localhub.testing import running_server

with running_server(tmp_path / "hub", write_tokens=("hf_secret",)) as hub:
    os.environ["HF_ENDPOINT"] = hub.url        # before importing huggingface_hub!
    hub.inject_faults(method="POST", path_regex=r"/commit/", status=500, count=1)
    os.killpg(hub.job_pid(job_id), signal.SIGKILL)   # a Job's machine dies mid-way
```

``huggingface_hub`` reads ``HF_ENDPOINT`` when it is imported; pass ``port=`` to start on a
port chosen earlier (that is what ``tests/conftest.py`` does), or give clients
``HfApi(endpoint=hub.url)``.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from upskill_hub.localhub.faults import FaultInjector, FaultRule, RequestRecord

if TYPE_CHECKING:
    from upskill_hub.localhub.app import ServerConfig, TmpSweeper
    from upskill_hub.localhub.jobs import JobLimits, JobManager

#: Tokens the test suite's server accepts (shaped like HF tokens, so ``redact()`` masks them).
TEST_WRITE_TOKEN = "hf_" "upskillTestWriteToken000000000001"  # fmt: skip
TEST_READ_TOKEN = "hf_" "upskillTestReadOnlyToken00000000002"  # fmt: skip
#: An organization the test server reports as a trusted kernel publisher.
TEST_TRUSTED_ORG = "trusted-kernels"


@dataclass
class ServerHandle:
    """A running local Hub: its URL and root, fault injection and the request log."""

    url: str
    root: Path
    port: int
    config: ServerConfig
    faults: FaultInjector = field(repr=False)
    jobs: JobManager = field(repr=False)
    #: The sweeper of abandoned partial uploads in ``root/tmp`` (``sweeper.sweep()`` runs one now).
    sweeper: TmpSweeper = field(repr=False)

    @property
    def inject_faults(self) -> Callable[..., FaultRule]:
        """This server's :meth:`FaultInjector.add` (see there for the arguments)."""
        return self.faults.add

    def clear_faults(self) -> None:
        self.faults.clear()

    @property
    def requests(self) -> list[RequestRecord]:
        """Requests answered so far (method, path, status, bytes received)."""
        return self.faults.snapshot()

    def clear_requests(self) -> None:
        with self.faults._lock:
            self.faults.records.clear()

    def job_pid(self, job_id: str) -> int | None:
        """The pid of a Job's process while it runs (it leads its own process group), else None.

        For tests that kill a Job from outside (``os.killpg(pid, SIGKILL)``), as a machine
        failure would on Hugging Face Jobs.
        """
        return self.jobs.pid(job_id)


def bound_socket(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A TCP socket bound to ``host:port`` (0: a free port), not listening yet, for ``running_server(sock=)``.

    ``SO_REUSEADDR`` as uvicorn would set it: on Linux a later server can bind the same port
    only if this socket (whose closed connections linger in TIME_WAIT) had it too. It never
    lets two servers listen on one port.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


@contextlib.contextmanager
def running_server(
    root: Path | str,
    *,
    write_tokens: tuple[str, ...] | list[str] = (),
    read_tokens: tuple[str, ...] | list[str] = (),
    trusted_publishers: tuple[str, ...] | list[str] = (),
    user: str = "user",
    port: int | None = None,
    host: str = "127.0.0.1",
    sock: socket.socket | None = None,
    tree_page_size: int = 1000,
    commits_page_size: int = 50,
    max_json_bytes: int | None = None,
    max_commit_bytes: int | None = None,
    job_limits: JobLimits | None = None,
    jobs_enabled: bool = True,
) -> Iterator[ServerHandle]:
    """Start the local Hub on ``host`` (a free port unless ``port``), yield its handle, stop it.

    ``sock``: a socket already bound (not yet listening) to serve on. A caller that must
    publish the URL long before the server starts (the test session's ``HF_ENDPOINT``) binds
    it first, so no other program can take the port in between. Without ``port`` or
    ``sock`` the free port is bound here and handed over the same way.
    Jobs are enabled here (``jobs_enabled``), unlike ``hub serve``: tests run them.
    """
    import uvicorn

    from upskill_hub.localhub.app import ServerConfig, create_app

    config = ServerConfig(
        root=Path(root),
        write_tokens=tuple(write_tokens),
        read_tokens=tuple(read_tokens),
        trusted_publishers=tuple(trusted_publishers),
        user=user,
        tree_page_size=tree_page_size,
        commits_page_size=commits_page_size,
        jobs_enabled=jobs_enabled,
        **{
            k: v
            for k, v in (
                ("max_json_bytes", max_json_bytes),
                ("max_commit_bytes", max_commit_bytes),
                ("job_limits", job_limits),
            )
            if v
        },
    )
    app = create_app(config)
    if sock is None and port is None:
        sock = bound_socket(host)
    if sock is not None:
        host, port = sock.getsockname()[:2]
    assert port is not None
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            access_log=False,
            lifespan="off",
            date_header=False,
        )
    )
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock] if sock is not None else None},
        name=f"local-hub-{port}", daemon=True,
    )  # fmt: skip
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            thread.join(5)
            raise RuntimeError(f"local Hub did not start on {host}:{port}")
        time.sleep(0.02)
    handle = ServerHandle(
        url=f"http://{host}:{port}",
        root=Path(root).resolve(),
        port=port,
        config=config,
        faults=app.state.faults,
        jobs=app.state.hub.jobs,
        sweeper=app.state.hub.sweeper,
    )
    handle.sweeper.start()  # what the lifespan would do (it is off here)
    try:
        yield handle
    finally:
        handle.sweeper.stop()
        # Jobs first (lifespan is off here): their log streams then end and the server stops at once.
        handle.jobs.shutdown()
        server.should_exit = True
        thread.join(10)
