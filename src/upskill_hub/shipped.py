"""Files the tool ships besides its modules: the maintained skills and the demo's kernel example.

Why one place: the same files must be found whether upskill-hub runs from a clone (editable
install: they sit at the top of the repository, ``skills/`` and ``kernels_examples/``) or
from a wheel installed anywhere (``pipx``, ``uvx``, a Job), where the build maps them to
package data under ``upskill_hub/_shipped/`` (``[tool.hatch.build.targets.wheel.sources]``
in ``pyproject.toml``). Callers get a folder on disk; they copy what they will write into.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from upskill_hub.errors import UpskillError

#: Package data folder inside the installed package.
PACKAGE_DATA = "_shipped"
#: What the wheel carries, as paths relative to the repository root (and to ``_shipped/``).
SHIPPED = ("skills", "kernels_examples/rmsnorm")


def _clone_root() -> Path:
    """The repository root when the package is imported from ``<root>/src/upskill_hub``."""
    return Path(__file__).resolve().parent.parent.parent


def shipped_path(rel: str) -> Path:
    """The folder ``rel`` (one of :data:`SHIPPED`, or inside one) on disk; one-line error when absent."""
    if ".." in rel.split("/") or not any(rel == top or rel.startswith(top + "/") for top in SHIPPED):
        raise UpskillError(f"{rel!r} is not among the files upskill-hub ships ({', '.join(SHIPPED)})")
    packaged = resources.files("upskill_hub").joinpath(PACKAGE_DATA, *rel.split("/"))
    if isinstance(packaged, Path) and packaged.exists():
        return packaged
    root = _clone_root()
    if (root / "pyproject.toml").is_file() and (root / rel).exists():
        return root / rel
    raise UpskillError(
        f"upskill-hub's shipped {rel} is missing from this install; reinstall it (pip install --force-reinstall upskill-hub)"
    )


def shipped_skill(name: str) -> Path:
    """The folder of the shipped skill ``name``."""
    return shipped_path(f"skills/{name}")
