"""How Gradio serves the Space here: no usage reports unless asked, no run history (its
inputs hold API keys), the charts' CSS at launch, sign-in only where it can work, read-only
events served concurrently, and a bounded number of sessions kept in memory."""

import contextlib
import os
import warnings
from collections.abc import Iterator

from upskill_hub._util.limits import env_int

#: Gradio's own switch for its usage reports; here they are off unless it says otherwise.
ANALYTICS_ENV = "GRADIO_ANALYTICS_ENABLED"
#: Gradio's warning when sign-in is mocked locally (the page already says how sign-in works).
_MOCKED_OAUTH_WARNING = r"Gradio does not support OAuth features outside of a Space"

#: How many read-only events (browse, open a skill, leaderboard, files...) run at once, all together.
READ_CONCURRENCY_ENV = "UPSKILL_SPACE_READ_CONCURRENCY"
#: The concurrency group those events share: one pool, whichever of them a visitor triggers.
READ_GROUP = "read"
#: Sessions whose Gradio state the Space keeps in memory (least recently used dropped first).
SESSIONS_ENV = "UPSKILL_SPACE_SESSIONS"
DEFAULT_SESSIONS = 32
#: Gradio's own setting: after how many events its monitoring summary is recomputed.
SUMMARY_EVERY_ENV = "GRADIO_ANALYTICS_CACHE_FREQUENCY"
SUMMARY_EVERY = 200


def read_concurrency() -> int:
    """Read-only events in flight at once: ``UPSKILL_SPACE_READ_CONCURRENCY``, else twice the cores (4 to 32).

    Gradio runs each event one call at a time unless told otherwise, so every visitor of the
    skill page waited behind every other one, including behind a page whose files were
    still coming from the Hub. The handlers only read the shared library, so several can
    run; a page that is pure computation does not get faster under the interpreter lock
    (measured in benchmarks/space.py), so the pool stays small. The cap leaves room in
    Gradio's thread pool (40) for evaluations.
    """
    from upskill_hub.models.local_backends import usable_cores

    return env_int(READ_CONCURRENCY_ENV, max(4, min(2 * usable_cores(), 32)))


def session_capacity() -> int:
    """Sessions Gradio keeps state for: ``UPSKILL_SPACE_SESSIONS``, else 32.

    Gradio keeps a copy of the page's component configuration and last values for every
    session hash it sees, 10,000 of them by default (about 180 kB each here). An API caller
    or a crawler gets a fresh session per call, so the process grew by that much per call and
    never gave it back. The Space keeps nothing a handler needs in that state (every input
    comes with the request; the dropdowns whose choices a handler updates accept any value
    and the handlers check it), so dropping an idle session costs its visitor nothing.
    """
    return env_int(SESSIONS_ENV, DEFAULT_SESSIONS)


def analytics_enabled() -> bool:
    """Whether the Space may send Gradio's usage reports: only when GRADIO_ANALYTICS_ENABLED says so.

    Gradio reports usage (and checks for a newer version) over the network unless that
    variable is ``False``. upskill-hub promises to work offline, so its Space sends
    nothing by default; ``GRADIO_ANALYTICS_ENABLED=True`` (or 1, yes) turns it back on.
    """
    return os.environ.get(ANALYTICS_ENV, "").strip().lower() in {"true", "1", "yes", "on"}


@contextlib.contextmanager
def quiet_mocked_sign_in() -> Iterator[None]:
    """Gradio's warning that local sign-in is mocked, silenced while it builds the server app.

    Run locally with a Hub login, the sign-in button is Gradio's mock of a Space's OAuth
    (the machine's own login). Gradio warns about that each time it builds the app (when
    the Blocks closes and again at launch); the warning asks nothing of a ``space run``
    user, and the page itself says how sign-in works. Other warnings pass.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_MOCKED_OAUTH_WARNING)
        yield


def sign_in_available() -> bool:
    """Whether Gradio's sign-in can work here.

    On a Space it is real OAuth. Locally Gradio mocks it with the machine's own Hub login
    and fails to start without one, so the button is only shown when that login works.
    """
    if os.environ.get("SPACE_ID"):
        return True
    try:
        from huggingface_hub import get_token, whoami

        return get_token() is not None and whoami().get("type") == "user"
    except Exception:  # offline, bad token, ...: browsing and evaluating still work
        return False


def _summary_now_and_then(demo) -> None:
    """Gradio's monitoring summary every ``SUMMARY_EVERY`` events instead of after each one.

    Gradio rebuilds a pandas table of its last 10,000 events after every event (about 8 ms
    of the interpreter's time once the table is full), only for its ``/monitoring`` page: on
    a busy Space that is as much as serving a skill page. ``GRADIO_ANALYTICS_CACHE_FREQUENCY``,
    when set, still decides; a Gradio without this attribute is left as it is.
    """
    queue = getattr(demo, "_queue", None)
    if os.environ.get(SUMMARY_EVERY_ENV) is None and hasattr(queue, "ANAYLTICS_CACHE_FREQUENCY"):
        queue.ANAYLTICS_CACHE_FREQUENCY = SUMMARY_EVERY  # (sic: Gradio's spelling)


def launch_defaults(demo) -> None:
    """Turn off Gradio's run history for this app, however it is launched; add the page's CSS;
    bound the sessions kept in memory (:func:`session_capacity`).

    Gradio 6 saves each call's inputs in the visitor's browser (and optionally a Hub
    bucket) to replay later; here those inputs include API keys, which must not be
    stored anywhere. ``launch()`` reads the flag, so it is forced there as well. Gradio 6
    also takes custom CSS only in ``launch()``, so the charts' styles are added there.
    """
    import functools

    from upskill_hub.space.charts import CSS

    demo.run_history = False
    # Read when the server app is built: by launch() (which is given it below) or when mounted.
    demo.state_session_capacity = session_capacity()
    _summary_now_and_then(demo)
    original = demo.launch

    @functools.wraps(original)
    def launch(*args, **kwargs):
        kwargs["run_history"] = False
        kwargs.setdefault("state_session_capacity", demo.state_session_capacity)
        kwargs["css"] = CSS + (kwargs.get("css") or "")
        with quiet_mocked_sign_in():
            return original(*args, **kwargs)

    demo.launch = launch
