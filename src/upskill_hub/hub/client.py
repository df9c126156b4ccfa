"""Small helpers around ``huggingface_hub`` shared by push and pull.

The Hub client raises many exception types with multi-line messages (and sometimes the
request URL). Users of ``push``/``pull`` should see one readable line instead, so every
Hub call of ours runs inside :func:`hub_errors`, which turns those exceptions into an
:class:`UpskillError` (after passing the text through :func:`redact`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from upskill_hub._util.redact import redact
from upskill_hub.errors import HubError, UpskillError

REPO_TYPE = "dataset"
_REPO_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.\-]{0,95}$")


def check_repo_id(repo_id: str) -> str:
    """Return ``repo_id`` when it is ``OWNER/NAME`` as the Hub accepts it, else raise."""
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    bad = f"invalid repo id {repo_id!r}: expected OWNER/NAME (letters, digits, '-', '_', '.')"
    if not isinstance(repo_id, str) or not _REPO_ID_RE.match(repo_id):
        raise UpskillError(bad)
    try:
        validate_repo_id(repo_id)
    except HFValidationError:
        raise UpskillError(bad) from None
    return repo_id


def make_api(token: str | None):  # -> huggingface_hub.HfApi
    """An ``HfApi`` for the configured endpoint (``HF_ENDPOINT``), using ``token``."""
    from huggingface_hub import HfApi

    # token=False tells huggingface_hub not to look one up on its own (anonymous reads).
    return HfApi(token=token if token else False)


def repo_url(endpoint: str, repo_id: str) -> str:
    """Browser address of a dataset repo on ``endpoint``."""
    return f"{endpoint.rstrip('/')}/datasets/{repo_id}"


def http_status(exc: BaseException) -> int | None:
    """The HTTP status of a Hub client error, when it carries a response."""
    response = getattr(exc, "response", None)
    return getattr(response, "status_code", None)


def _first_line(exc: BaseException) -> str:
    """The error's first line, with the server's reason when the line only announces one.

    ``huggingface_hub`` words a 400 as "Bad request for commit endpoint:" and puts what the
    server said on the lines below; a first line alone would drop the only useful part.
    """
    text = [ln.strip() for ln in str(exc).strip().splitlines() if ln.strip()]
    first = text[0] if text else type(exc).__name__
    reason = getattr(exc, "server_message", None)
    if isinstance(reason, str) and reason.strip():
        reason = " ".join(reason.split())
        if reason not in first:
            first = f"{first.rstrip(':').rstrip()}: {reason}"
    elif first.endswith(":") and len(text) > 1:
        first = f"{first[:-1]}: {text[1]}"
    return first


#: ``Server error '507 Insufficient Storage' for url 'https://…'``: the words httpx puts first.
_STATUS_LINE_RE = re.compile(r"(?:Client|Server) error '(\d{3}[^']*)' for url '[^']*'")
#: The query of a URL in a message: a signed LFS or CDN address carries its signature there.
_URL_QUERY_RE = re.compile(r"(https?://[^\s'\"?]*)\?[^\s'\"]*")
#: What ``huggingface_hub`` says when it wraps a failed LFS upload.
_UPLOAD_RE = re.compile(r"^Error while uploading '(.*)' to the Hub\.?$")


def _server_text(exc: BaseException) -> str:
    """``HTTP 507 Insufficient Storage: <what the server said>``, redacted, without URLs' queries."""
    line = _STATUS_LINE_RE.sub(lambda m: f"HTTP {m.group(1)}", _first_line(exc))
    return redact(_URL_QUERY_RE.sub(r"\1", line))


def _hint(status: int | None) -> str:
    """What the user can do after the Hub answered ``status`` (empty when we cannot say)."""
    if status == 507:
        return "the Hub's disk is full and nothing was stored: free space on the Hub or ask its operator, then run the command again"
    if status in (409, 412):
        return "the branch moved while pushing: run the command again"
    if status == 429 or (status is not None and 500 <= status <= 599):
        return "the Hub is busy or failing: retry later"
    return ""


def _is_hub_failure(exc: BaseException) -> bool:
    """An HTTP error of the Hub client, or the connection to the Hub failing."""
    from huggingface_hub.errors import HfHubHTTPError

    return isinstance(exc, (HfHubHTTPError, ConnectionError, TimeoutError)) or is_transport_error(exc)


def is_transport_error(exc: BaseException) -> bool:
    """An httpx/httpcore exception (``huggingface_hub`` vendors httpx as ``httpx2``)."""
    return type(exc).__module__.split(".")[0] in ("httpx2", "httpx", "httpcore")


def hub_cause(exc: BaseException) -> BaseException | None:
    """The Hub client's HTTP or connection error that ``exc`` is or wraps; ``None`` for anything else.

    ``huggingface_hub`` raises ``RuntimeError("Error while uploading …")`` from a failed LFS
    upload and ``LocalEntryNotFoundError`` from a download the Hub failed (a 5xx, a dropped
    connection); the error with the server's message is their cause. Only those wrappers
    are looked through, link by link: a ``RuntimeError`` of our own stays a bug.
    """
    from huggingface_hub.errors import LocalEntryNotFoundError

    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if _is_hub_failure(current):
            return current
        if not isinstance(current, (RuntimeError, LocalEntryNotFoundError)):
            return None
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _what_failed(exc: BaseException) -> str:
    """``uploading 'data/x.parquet': `` when ``exc`` wraps a failed LFS upload, else nothing."""
    found = _UPLOAD_RE.match(str(exc).strip()) if isinstance(exc, RuntimeError) else None
    return f"uploading '{found.group(1)}': " if found else ""


def describe_failure(exc: BaseException, *, kind: str = "dataset repo") -> tuple[str, int | None]:
    """The problem (one line, redacted) and HTTP status of a Hub failure :func:`hub_cause` found.

    The server's own words come first, then what to do about them (see :func:`_hint`).
    """
    from huggingface_hub import constants
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        OfflineModeIsEnabled,
        RemoteEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    if isinstance(exc, OfflineModeIsEnabled):
        return "HF_HUB_OFFLINE is set", None
    if not isinstance(exc, HfHubHTTPError):  # the connection, not the server
        endpoint = redact(_URL_QUERY_RE.sub(r"\1", re.sub(r"//[^/@]*@", "//", constants.ENDPOINT)))
        why = f"cannot reach the Hub ({_server_text(exc).rstrip(' .')})"
        return f"{why}; check HF_ENDPOINT ({endpoint}) and your network, then run the command again", None
    status = http_status(exc)
    if isinstance(exc, GatedRepoError):
        return "it is gated and your token has no access", status
    if isinstance(exc, RepositoryNotFoundError):
        return f"{kind} not found (or it is private and your token cannot see it)", status
    if isinstance(exc, RevisionNotFoundError):
        return "revision not found", status
    if isinstance(exc, RemoteEntryNotFoundError):
        return f"a file is missing ({_server_text(exc)})", status
    if status in (401, 403):
        return (
            f"the Hub refused your token (HTTP {status}); "
            "check that it is a write token with access to this namespace",
            status,
        )
    text, hint = _server_text(exc), _hint(status)
    return (f"{text.rstrip(' .;')}; {hint}" if hint else text), status


@contextmanager
def hub_errors(repo_id: str, *, action: str, kind: str = "dataset repo", prefix: str = "") -> Iterator[None]:
    """Turn Hub client exceptions raised inside the block into :class:`HubError` s (one line each).

    The one mapper of Hub failures: dataset repos, Jobs and kernel repos (``kind``) alike.
    ``prefix`` says what the failure left behind (``"upload failed, nothing was committed: "``).
    A failure ``huggingface_hub`` wrapped (an LFS upload's ``RuntimeError``, a download's
    ``LocalEntryNotFoundError``) is mapped like the error it wraps (:func:`hub_cause`);
    any other exception propagates unchanged.
    """
    try:
        yield
    except UpskillError:
        raise
    except Exception as exc:
        cause = hub_cause(exc)
        if cause is None:
            raise
        problem, status = describe_failure(cause, kind=kind)
        raise HubError(repo_id, prefix + _what_failed(exc) + problem, action=action, status=status) from None


@contextmanager
def quiet_progress() -> Iterator[None]:
    """Hide ``huggingface_hub``'s progress bars inside the block; the CLI shows its own status.

    Its tqdm bars write to stderr and end without a newline, so the one-line error printed
    after a failed upload would be glued to a half-drawn bar. The previous setting is restored.
    ``HF_HUB_DISABLE_PROGRESS_BARS=0`` (the user keeps the bars, see
    :mod:`upskill_hub._util.progress`) wins: the block then changes nothing.
    """
    from huggingface_hub import constants
    from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    if constants.HF_HUB_DISABLE_PROGRESS_BARS is False:  # the user's explicit choice
        yield
        return
    was_disabled = are_progress_bars_disabled()
    disable_progress_bars()
    try:
        yield
    finally:
        if not was_disabled:
            enable_progress_bars()
