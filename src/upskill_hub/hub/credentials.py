"""Which Hugging Face token we use, and the one-line message when there is none.

We never read token files ourselves: ``huggingface_hub.get_token()`` already resolves
``HF_TOKEN`` (and its older aliases) first and the token stored by ``hf auth login``
second, exactly as every other Hub tool does. The token value itself is never printed,
logged or put in an error message.
"""

from __future__ import annotations

from upskill_hub.errors import UpskillError

LOGIN_HINT = "run `hf auth login` or set the HF_TOKEN environment variable to a write token"


def find_token() -> str | None:
    """The token ``huggingface_hub`` would send, or ``None`` when the user is anonymous."""
    from huggingface_hub import get_token

    token = get_token()
    return token or None


def require_token(action: str = "push to the Hub") -> str:
    """A token for a write, or an :class:`UpskillError` telling the user how to log in."""
    token = find_token()
    if token is None:
        raise UpskillError(f"no Hugging Face token found: to {action}, {LOGIN_HINT}")
    return token
