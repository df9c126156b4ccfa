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


@contextmanager
def hub_errors(repo_id: str, *, action: str, kind: str = "dataset repo", prefix: str = "") -> Iterator[None]:
    """Turn Hub client exceptions raised inside the block into :class:`HubError` s (one line each).

    The one mapper of Hub failures: dataset repos, Jobs and kernel repos (``kind``) alike.
    ``prefix`` says what the failure left behind (``"upload failed, nothing was committed: "``).
    """
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        OfflineModeIsEnabled,
        RemoteEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    def fail(problem: str, status: int | None = None) -> HubError:
        return HubError(repo_id, prefix + problem, action=action, status=status)

    try:
        yield
    except UpskillError:
        raise
    except GatedRepoError as exc:
        raise fail("it is gated and your token has no access", http_status(exc)) from None
    except RepositoryNotFoundError as exc:
        raise fail(
            f"{kind} not found (or it is private and your token cannot see it)", http_status(exc)
        ) from None
    except RevisionNotFoundError as exc:
        raise fail("revision not found", http_status(exc)) from None
    except RemoteEntryNotFoundError as exc:
        raise fail(f"a file is missing ({redact(_first_line(exc))})", http_status(exc)) from None
    except HfHubHTTPError as exc:
        status = http_status(exc)
        if status in (401, 403):
            raise fail(
                f"the Hub refused your token (HTTP {status}); "
                "check that it is a write token with access to this namespace",
                status,
            ) from None
        raise fail(redact(_first_line(exc)), status) from None
    except OfflineModeIsEnabled:
        raise fail("HF_HUB_OFFLINE is set") from None
    except (ConnectionError, TimeoutError) as exc:  # socket-level failures
        raise fail(f"cannot reach the Hub ({redact(_first_line(exc))})") from None
    except Exception as exc:
        if type(exc).__module__.split(".")[0] in ("httpx2", "httpx", "httpcore"):
            raise fail(f"cannot reach the Hub ({redact(_first_line(exc))})") from None
        raise
