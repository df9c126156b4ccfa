"""What a Space visitor may point an evaluation at.

A public Space runs on someone else's machine. A visitor must not be able to:

* make the evaluation use the Space's own secrets: every client is built with the key the
  visitor typed for this session (see :mod:`upskill_hub.space.session`), never with
  ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY`` / ``HF_TOKEN`` from the Space's environment;
* use the Space as a proxy into the network it runs in: a base URL whose host resolves to
  a loopback, private, link-local (cloud metadata ``169.254.169.254``), multicast or
  reserved address is refused.

The operator can allow internal addresses (a Space next to its own model server, local
use, tests) with ``UPSKILL_SPACE_ALLOW_PRIVATE_URLS=1`` or ``upskill-hub space run
--allow-private-urls``. The check resolves the host when the evaluation starts; a DNS
name that later changes its answer (DNS rebinding) is not caught, which is why the
default is to refuse rather than to trust names.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from urllib.parse import urlparse

from upskill_hub.errors import UpskillError

ALLOW_PRIVATE_ENV = "UPSKILL_SPACE_ALLOW_PRIVATE_URLS"


def private_urls_allowed() -> bool:
    """The operator's choice (environment), read at call time so tests can flip it."""
    return os.environ.get(ALLOW_PRIVATE_ENV, "").strip().lower() in ("1", "true", "yes")


def _is_public(addr: str) -> bool:
    ip = ipaddress.ip_address(addr.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def check_base_url(url: str, *, allow_private: bool | None = None) -> str:
    """Return ``url`` (trailing ``/`` removed) if a visitor may use it, else ``UpskillError``."""
    url = (url or "").strip()
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise UpskillError(f"base URL {url!r} is not an http(s) URL (e.g. https://example.com/v1)")
    if parsed.username or parsed.password:
        raise UpskillError("base URL must not contain a user name or password; use the key field")
    if allow_private is None:
        allow_private = private_urls_allowed()
    if allow_private:
        return url.rstrip("/")
    host = parsed.hostname
    try:
        infos = socket.getaddrinfo(host, parsed.port or (443 if parsed.scheme == "https" else 80))
    except (socket.gaierror, UnicodeError):
        raise UpskillError(f"base URL host {host!r} does not resolve") from None
    addrs = {info[4][0] for info in infos}
    if not addrs or not all(_is_public(a) for a in addrs):
        raise UpskillError(
            f"base URL host {host!r} is an internal address; this Space only calls public endpoints "
            f"(the operator can allow internal ones with {ALLOW_PRIVATE_ENV}=1)"
        )
    return url.rstrip("/")
