"""Network helpers shared by the demo, the local Hub's test harness and the tests."""

from __future__ import annotations

import socket


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago (the OS picks it).

    Another process may take it before it is used: callers bind it at once, or (for a
    port known to be closed) rely on nobody listening there.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]
