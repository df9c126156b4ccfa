"""Turn the app into a Space repo that runs from exactly what was uploaded.

A Space installs ``requirements.txt`` and runs ``app.py``. We upload:

* ``app.py``: three lines that build the app from the library;
* ``upskill_hub/``: the library's own source, vendored next to ``app.py`` (importable
  from the working directory), so the Space runs the code that was deployed, not
  whatever version of the package an index has;
* ``requirements.txt``: the library's runtime dependencies plus the ``space`` extra
  (without the vendored source, ``--no-vendor``, upskill-hub itself: :func:`self_requirement`),
  read from the installed package metadata (so it never drifts from ``pyproject.toml``);
  ``gradio[oauth]`` pinned to the card's ``sdk_version`` (the OAuth extra is what the
  sign-in button needs);
* ``README.md``: the Space card (``sdk: gradio``, the installed Gradio version pinned as
  ``sdk_version``, ``app_file``, ``python_version``, ``hf_oauth`` with the scopes that
  pushing results and calling Inference Providers need);
* ``upskill_space.json``: the default skills repo (a Space variable would need an API
  the local Hub does not have; ``SKILLS_REPO`` set on the Space still wins).

The same functions write the checked-in ``space/`` folder, so it cannot drift either.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from upskill_hub._util.fsutil import claim_folder, read_capped
from upskill_hub.errors import UpskillError

APP_FILE = "app.py"
PYTHON_VERSION = "3.11"
#: Extras of upskill-hub whose requirements a Space needs besides the core ones.
SPACE_EXTRAS = ("space",)
#: Installed with gradio itself.
SKIP_REQUIREMENTS = {"gradio-client", "gradio_client"}

APP_SOURCE = '''"""upskill-hub Space: browse skills, compare their lift per model, run evaluations.

Everything comes from the upskill_hub library (vendored next to this file by
`upskill-hub space deploy`, or listed in requirements.txt by `--no-vendor`); this file
only launches it. Gradio reads
GRADIO_SERVER_NAME / GRADIO_SERVER_PORT; SKILLS_REPO picks the dataset.
"""

from upskill_hub.space.ui import build_app

demo = build_app()

if __name__ == "__main__":
    demo.launch()
'''


def gradio_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gradio")
    except PackageNotFoundError:
        raise UpskillError("gradio is not installed: pip install 'upskill-hub[space]'") from None


def requirements() -> list[str]:
    """Runtime requirements of upskill-hub (core + the space extra), from its metadata."""
    from importlib.metadata import PackageNotFoundError, requires

    from packaging.requirements import Requirement
    from packaging.specifiers import SpecifierSet

    try:
        raw = requires("upskill-hub") or []
    except PackageNotFoundError:
        raise UpskillError("upskill-hub is not installed as a package; pip install -e '.[space]'") from None
    out: list[str] = []
    for line in raw:
        req = Requirement(line)
        if req.marker is not None:
            if not any(req.marker.evaluate({"extra": e}) for e in SPACE_EXTRAS):
                continue
            req.marker = None
        if req.name.lower() in SKIP_REQUIREMENTS:
            continue
        if req.name.lower() == "gradio":
            # Pinned to the card's sdk_version, so the Space and a fresh venv get the same Gradio.
            req.specifier = SpecifierSet(f"=={gradio_version()}")
        text = str(req)
        if text not in out:
            out.append(text)
    return sorted(out, key=str.lower)


#: A requirement line for upskill-hub itself that the user chooses (``--no-vendor``).
SELF_REQUIREMENT_ENV = "UPSKILL_SPACE_REQUIREMENT"


def self_requirement() -> str:
    """The requirement line that installs this upskill-hub where the Space runs (``--no-vendor``).

    Without the vendored source, ``app.py``'s ``import upskill_hub`` needs the package from
    ``requirements.txt``. Installed from git, the same commit (``upskill-hub @
    git+URL@COMMIT``, PEP 610's record of the install); otherwise the released version
    (``upskill-hub==X.Y.Z``, from the index a Space installs from). A local checkout or
    wheel is no URL a Space can reach: ``UPSKILL_SPACE_REQUIREMENT`` names one instead.
    """
    import os
    from importlib.metadata import PackageNotFoundError, distribution

    chosen = os.environ.get(SELF_REQUIREMENT_ENV, "").strip()
    if chosen:
        from packaging.requirements import InvalidRequirement, Requirement

        try:
            Requirement(chosen)
        except InvalidRequirement as exc:
            raise UpskillError(
                f"{SELF_REQUIREMENT_ENV}={chosen!r} is not a requirement line: {exc}"
            ) from None
        return chosen
    try:
        dist = distribution("upskill-hub")
    except PackageNotFoundError:
        raise UpskillError("upskill-hub is not installed as a package; pip install -e '.[space]'") from None
    try:
        origin = json.loads(dist.read_text("direct_url.json") or "{}")
    except ValueError:
        origin = {}
    vcs = origin.get("vcs_info") if isinstance(origin, dict) else None
    if isinstance(vcs, dict) and vcs.get("vcs") == "git" and vcs.get("commit_id") and origin.get("url"):
        return f"upskill-hub @ git+{origin['url']}@{vcs['commit_id']}"
    return f"upskill-hub=={dist.version}"


def card(*, title: str = "upskill-hub", skills_repo: str | None = None) -> str:
    """The Space README: YAML config the Hub reads, then a short description."""
    import yaml

    meta = {
        "title": title,
        "emoji": "🧰",
        "colorFrom": "yellow",
        "colorTo": "gray",
        "sdk": "gradio",
        "sdk_version": gradio_version(),
        "python_version": PYTHON_VERSION,
        "app_file": APP_FILE,
        "pinned": False,
        "hf_oauth": True,
        "hf_oauth_scopes": ["write-repos", "inference-api"],
        "license": "apache-2.0",
        "short_description": "Agent skills: browse, compare lift, run evals",
    }
    head = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)
    source = f"`{skills_repo}`" if skills_repo else "the dataset set by the `SKILLS_REPO` variable"
    return (
        f"---\n{head}---\n\n# upskill-hub\n\n"
        f"Browse agent skills and their measured lift (from {source}), compare models on the "
        "leaderboard, and run an evaluation with your own model keys (used for that run only).\n\n"
        "Deployed with `upskill-hub space deploy`. Settings: `SKILLS_REPO` (dataset repo), "
        "`UPSKILL_SPACE_ALLOW_PRIVATE_URLS=1` to let visitors call internal endpoints (off by default).\n"
    )


def _package_root() -> Path:
    import upskill_hub

    return Path(upskill_hub.__file__).resolve().parent


#: First line of the ``requirements.txt`` we write: how a folder of Space files made here is known.
REQUIREMENTS_HEADER = "# Runtime requirements of upskill-hub (written by `upskill-hub space deploy`)"


def _is_space_folder(folder: Path) -> bool:
    """True when ``folder`` holds Space files written here before (our ``requirements.txt`` header).

    That folder (the checked-in ``space/`` one included) is rewritten in place; any other
    non-empty folder is refused, so ``--out`` never overwrites a user's README.md or app.py.
    """
    try:  # regular files only, never blocking; ours is a few hundred bytes
        head = read_capped(folder / "requirements.txt", 64_000, follow_symlinks=False)
    except UpskillError:  # absent, a symlink, a FIFO or a huge file: not ours
        return False
    return head.decode("utf-8", "replace").splitlines()[:1] == [REQUIREMENTS_HEADER]


def write_space_files(dest: str | Path, *, skills_repo: str | None = None, vendor: bool = True) -> Path:
    """Write the Space's files into ``dest`` (created if needed); returns ``dest``.

    ``dest`` must be new, empty, or a folder of Space files written here before: it is
    checked before anything is written, so a user's folder is never overwritten.
    """
    lines = requirements()
    if not vendor:  # app.py imports upskill_hub: the Space must install it (checked before writing)
        lines = [self_requirement(), *lines]
    dest = Path(dest)
    claim_folder(dest, option="--out", maker="space deploy", ours=_is_space_folder)
    dest.mkdir(parents=True, exist_ok=True)
    (dest / APP_FILE).write_text(APP_SOURCE, encoding="utf-8")
    (dest / "README.md").write_text(card(skills_repo=skills_repo), encoding="utf-8")
    (dest / "requirements.txt").write_text(
        REQUIREMENTS_HEADER + "\n" + "\n".join(lines) + "\n",
        encoding="utf-8",
    )
    if skills_repo:
        (dest / "upskill_space.json").write_text(
            json.dumps({"skills_repo": skills_repo}, indent=2) + "\n", encoding="utf-8"
        )
    if vendor:
        shutil.copytree(
            _package_root(),
            dest / "upskill_hub",
            # _shipped/ (skills, kernel example; present in a wheel install) is the CLI's, not the app's
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo", ".*", "_shipped"),
            dirs_exist_ok=True,
        )
    return dest


def deploy(
    repo_id: str,
    *,
    skills_repo: str | None = None,
    token: str | None = None,
    private: bool = False,
    message: str | None = None,
) -> str:
    """Create (or update) the Space ``repo_id`` with the app; one commit. Returns its URL."""
    from huggingface_hub import HfApi

    from upskill_hub.hub.client import check_repo_id, hub_errors
    from upskill_hub.hub.credentials import require_token

    check_repo_id(repo_id)
    if skills_repo:
        check_repo_id(skills_repo)
    token = token or require_token("deploy a Space")
    api = HfApi(token=token)
    with tempfile.TemporaryDirectory(prefix="upskill-space-deploy-") as tmp:
        folder = write_space_files(Path(tmp) / "space", skills_repo=skills_repo)
        with hub_errors(repo_id, action="deploy the Space to"):
            url = api.create_repo(
                repo_id, repo_type="space", space_sdk="gradio", private=private, exist_ok=True
            )
            api.upload_folder(
                repo_id=repo_id,
                repo_type="space",
                folder_path=str(folder),
                commit_message=message or "Deploy upskill-hub Space",
                delete_patterns=["upskill_hub/**"],  # files of removed modules go away
            )
    return str(url)
