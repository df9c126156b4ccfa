"""One switch for the progress bars of the libraries the CLI drives.

``huggingface_hub`` ("Upload 3 LFS files: 100%|██…", "Fetching 7 files"), ``datasets``
("Generating train split") and ``transformers`` (which follows ``huggingface_hub``) draw
tqdm bars on stderr. In a terminal they show something moving; piped to a file or a CI log
they are carriage-return noise between the lines a user reads. The switch is
``huggingface_hub``'s own ``HF_HUB_DISABLE_PROGRESS_BARS``: unset, it defaults to ``1``
(bars off) when stderr is not a terminal; ``HF_HUB_DISABLE_PROGRESS_BARS=0`` keeps them.
``datasets`` gets the same value unless ``HF_DATASETS_DISABLE_PROGRESS_BARS`` is set too.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping
from typing import TextIO

HUB_SWITCH = "HF_HUB_DISABLE_PROGRESS_BARS"
DATASETS_SWITCH = "HF_DATASETS_DISABLE_PROGRESS_BARS"
_TRUE = {"1", "ON", "YES", "TRUE"}


def _interactive(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream: not a terminal
        return False


def quiet_library_progress(
    environ: MutableMapping[str, str] | None = None, stream: TextIO | None = None
) -> bool:
    """Settle the libraries' progress-bar switch for this process; True when bars are off.

    Sets the variables (not only the libraries' in-memory flags) so that the processes the
    CLI starts (the local model's worker, ``space run``'s loaders) follow the same choice.
    A value the user set is never changed. Call it once, at process start.
    """
    environ = os.environ if environ is None else environ
    stream = sys.stderr if stream is None else stream
    chosen = environ.get(HUB_SWITCH)
    if chosen is None:
        if _interactive(stream):
            return False
        chosen = environ[HUB_SWITCH] = "1"
    environ.setdefault(DATASETS_SWITCH, chosen)
    off = chosen.strip().upper() in _TRUE
    if off and environ is os.environ:
        _apply_to_imported_libraries()
    return off


def _apply_to_imported_libraries() -> None:
    """Libraries read their variable once, at import: turn off the ones already imported."""
    if "huggingface_hub.utils" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    if "datasets" in sys.modules:
        from datasets.utils.logging import disable_progress_bar

        disable_progress_bar()
