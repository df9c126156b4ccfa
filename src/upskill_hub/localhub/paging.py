"""The opaque ``cursor`` of paged listings (repo trees, Jobs), as the Hub hands it out.

Clients only echo it back in the ``Link: <...>; rel="next"`` URL, so it is simply the
offset of the next page, base64-encoded; a cursor someone made up is a 400, not a 500.
"""

from __future__ import annotations

import base64
import binascii

from upskill_hub.localhub.storage import StoreError


def encode_cursor(offset: int) -> str:
    """The cursor that resumes a listing at ``offset``."""
    return base64.urlsafe_b64encode(str(offset).encode()).decode()


def decode_cursor(cursor: str | None) -> int:
    """The offset a cursor stands for (0 for none); ``StoreError`` 400 for a forged one."""
    if not cursor:
        return 0
    try:
        return max(int(base64.urlsafe_b64decode(cursor.encode()).decode()), 0)
    except (ValueError, binascii.Error):
        raise StoreError(400, "Invalid cursor", "BadRequest") from None
