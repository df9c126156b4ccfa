"""How Gradio serves the Space here: no usage reports unless asked, no run history (its
inputs hold API keys), the charts' CSS at launch, and sign-in only where it can work."""

import contextlib
import os
import warnings
from collections.abc import Iterator

#: Gradio's own switch for its usage reports; here they are off unless it says otherwise.
ANALYTICS_ENV = "GRADIO_ANALYTICS_ENABLED"
#: Gradio's warning when sign-in is mocked locally (the page already says how sign-in works).
_MOCKED_OAUTH_WARNING = r"Gradio does not support OAuth features outside of a Space"


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


def launch_defaults(demo) -> None:
    """Turn off Gradio's run history for this app, however it is launched; add the page's CSS.

    Gradio 6 saves each call's inputs in the visitor's browser (and optionally a Hub
    bucket) to replay later; here those inputs include API keys, which must not be
    stored anywhere. ``launch()`` reads the flag, so it is forced there as well. Gradio 6
    also takes custom CSS only in ``launch()``, so the charts' styles are added there.
    """
    import functools

    from upskill_hub.space.charts import CSS

    demo.run_history = False
    original = demo.launch

    @functools.wraps(original)
    def launch(*args, **kwargs):
        kwargs["run_history"] = False
        kwargs["css"] = CSS + (kwargs.get("css") or "")
        with quiet_mocked_sign_in():
            return original(*args, **kwargs)

    demo.launch = launch
