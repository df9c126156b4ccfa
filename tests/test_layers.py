"""The package's floors, enforced: ``.importlinter`` holds the contracts, this test runs them.

No upward import, no client-side import in the local Hub, and the run folder's types below
its I/O below the runner. A new import that breaks a floor fails here, naming the chain.
"""

from __future__ import annotations

import sys
from pathlib import Path

from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[1]


def test_the_import_contracts_are_kept(monkeypatch, tmp_path):
    monkeypatch.chdir(ROOT)
    assert lint_imports(config_filename=str(ROOT / ".importlinter"), no_cache=True, no_logo=True) == 0


def test_an_upward_import_breaks_a_layers_contract(monkeypatch, tmp_path):
    """The same kind of contract on a two-floor package with an upward import is reported broken."""
    pkg = tmp_path / "floors_demo"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "top.py").write_text("from floors_demo import bottom\n")
    (pkg / "bottom.py").write_text("from floors_demo import top\n")
    config = tmp_path / ".importlinter"
    config.write_text(
        "[importlinter]\nroot_package = floors_demo\n\n"
        "[importlinter:contract:one]\nname = demo\ntype = layers\nlayers =\n    floors_demo.top\n    floors_demo.bottom\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    assert lint_imports(config_filename=str(config), no_cache=True, no_logo=True) == 1
