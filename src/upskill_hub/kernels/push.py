"""``kernels push``: publish built variants as a Hub kernel repo, in one commit.

Layout (what ``kernels.get_kernel(repo, version=N)`` reads): repo type ``kernel``, branch
``v<N>``, ``build/<variant>/…`` per variant, plus ``README.md`` (the card),
``benchmarks/`` and ``tests/`` (so ``kernels verify`` can run the project's tests against
the published kernel). Everything is validated before the first Hub call, and all
changes, including deleting stale files of the variants being replaced, go into a single
``HfApi.create_commit``: a bad push uploads nothing and a good one is atomic.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass, field
from pathlib import Path

from upskill_hub._util.boundedread import read_json_file
from upskill_hub._util.fsutil import require_clean_tree
from upskill_hub.errors import UpskillError
from upskill_hub.hub.client import check_repo_id, hub_errors
from upskill_hub.kernels import layout
from upskill_hub.kernels.buildtoml import BuildConfig, load_build
from upskill_hub.kernels.card import render_card
from upskill_hub.kernels.check import check_variant
from upskill_hub.kernels.variants import explain_bad_variant, parse_variant_name

REPO_TYPE = "kernel"
#: How a failed request is described: "cannot push kernels to ORG/NAME: ...".
ACTION = "push kernels to"
_SKIP_PARTS = {"__pycache__", ".pytest_cache"}


@dataclass
class PushPlan:
    """What a push will do, computed before touching the Hub."""

    cfg: BuildConfig
    repo_id: str
    version: int
    variants: dict[str, Path]
    metadata: dict[str, dict]
    files: dict[str, Path] = field(default_factory=dict)  # path in repo -> local file
    card: str = ""

    @property
    def branch(self) -> str:
        return f"v{self.version}"


@dataclass
class PushResult:
    repo_id: str
    branch: str
    commit_oid: str | None
    commit_url: str | None
    pr_url: str | None
    added: list[str]
    deleted: list[str]
    variants: list[str]


def _walk(base: Path) -> list[Path]:
    """The files of one built variant: an lstat walk, so a FIFO, a device, a symlink loop or
    leaving the folder, or an odd name is a one-line refusal (compiled objects may be large:
    no size cap here, the build made them)."""
    entries = require_clean_tree(base, ignore=_SKIP_PARTS, max_file_bytes=sys.maxsize)
    return [base / e.rel for e in entries if not e.rel.endswith((".pyc", ".pyo"))]


def plan_push(root: Path, repo_id: str | None, version: int | None = None) -> PushPlan:
    """Validate the project's ``build/`` and list what to upload; raise on any bad input.

    ``repo_id`` defaults to ``general.hub.repo-id`` in build.toml, as in kernel-builder.
    """
    cfg = load_build(root)
    repo_id = repo_id or cfg.repo_id
    if not repo_id:
        raise UpskillError(
            "no --repo given and build.toml has no general.hub.repo-id: pass --repo OWNER/NAME"
        )
    check_repo_id(repo_id)
    build_dir = cfg.root / "build"
    entries = (
        sorted(p for p in build_dir.iterdir() if not p.name.startswith(".")) if build_dir.is_dir() else []
    )
    dirs = [p for p in entries if p.is_dir()]
    if not dirs:
        raise UpskillError(
            f"{build_dir}: no build variants to push (empty or missing); run `upskill-hub kernels build {root}` first"
        )
    variants: dict[str, Path] = {}
    metadata: dict[str, dict] = {}
    for vdir in dirs:
        rel = f"build/{vdir.name}"
        if parse_variant_name(vdir.name) is None:
            raise UpskillError(f"{rel}: {explain_bad_variant(vdir.name)}; nothing was uploaded")
        if not (vdir / layout.METADATA).is_file():
            raise UpskillError(
                f"{rel}: metadata.json is missing, so kernels cannot load it; nothing was uploaded"
            )
        errors = [p for p in check_variant(vdir, cfg, None) if p.severity == "error"]
        if errors:
            more = f" (+{len(errors) - 1} more; run `upskill-hub kernels check`)" if len(errors) > 1 else ""
            raise UpskillError(f"{errors[0]}{more}; nothing was uploaded")
        variants[vdir.name] = vdir
        metadata[vdir.name] = read_json_file(vdir / layout.METADATA)
    versions = {m.get("version") for m in metadata.values()}
    target = cfg.version if version is None else version
    if versions != {target}:
        found = ", ".join(str(v) for v in sorted(versions, key=str))
        raise UpskillError(
            f"the variants in build/ are version {found} but the push targets v{target}: "
            "set general.version in build.toml and rebuild; nothing was uploaded"
        )
    plan = PushPlan(cfg=cfg, repo_id=repo_id, version=target, variants=variants, metadata=metadata)
    for name, vdir in variants.items():
        for path in _walk(vdir):
            plan.files[f"build/{name}/{path.relative_to(vdir).as_posix()}"] = path
    benchmarks = []
    for extra in ("benchmarks", "tests"):
        base = cfg.root / extra
        if base.is_dir():
            for path in _walk(base):
                rel = f"{extra}/{path.relative_to(base).as_posix()}"
                plan.files[rel] = path
                if extra == "benchmarks":
                    benchmarks.append(rel)
    plan.card = render_card(cfg, repo_id=repo_id, version=target, variants=metadata, benchmarks=benchmarks)
    return plan


def push_kernel(
    root: Path,
    repo_id: str | None,
    *,
    version: int | None = None,
    private: bool = False,
    create_pr: bool = False,
    token: str | None = None,
) -> PushResult:
    """Upload ``root/build`` to ``repo_id`` on branch ``v<N>`` in one commit."""
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi

    plan = plan_push(root, repo_id, version)
    repo_id = plan.repo_id
    api = HfApi(token=token)
    branch = plan.branch
    with hub_errors(repo_id, action=ACTION, kind="kernel repo"):
        if not create_pr:
            api.create_repo(repo_id, repo_type=REPO_TYPE, private=private, exist_ok=True)
        refs = api.list_repo_refs(repo_id, repo_type=REPO_TYPE)
        is_new_branch = branch not in {b.name for b in refs.branches}
        if is_new_branch:
            if create_pr:
                raise UpskillError(
                    f"{repo_id} has no branch {branch}: a pull request needs an existing branch "
                    "(push without --create-pr first, or ask a maintainer to create it)"
                )
            existing: list[str] = []
        else:
            existing = api.list_repo_files(repo_id, repo_type=REPO_TYPE, revision=branch)

    uploads = dict(plan.files)
    # Replace the variants being pushed wholesale; keep other variants already on the branch.
    prefixes = [f"build/{name}/" for name in plan.variants] + ["benchmarks/", "tests/"]
    deletes = sorted(f for f in existing if any(f.startswith(p) for p in prefixes) and f not in uploads)
    ops: list = [CommitOperationDelete(path_in_repo=f) for f in deletes]
    ops += [
        CommitOperationAdd(path_in_repo=rel, path_or_fileobj=str(path))
        for rel, path in sorted(uploads.items())
    ]
    ops.append(CommitOperationAdd(path_in_repo="README.md", path_or_fileobj=plan.card.encode("utf-8")))
    message = f"Upload {plan.cfg.name} v{plan.version}: {', '.join(sorted(plan.variants))}"
    with hub_errors(repo_id, action=ACTION, kind="kernel repo", prefix="upload failed, nothing was committed: "):
        try:
            if is_new_branch:
                api.create_branch(repo_id, branch=branch, repo_type=REPO_TYPE, exist_ok=True)
            info = api.create_commit(
                repo_id,
                operations=ops,
                commit_message=message,
                commit_description="Uploaded with `upskill-hub kernels push`.",
                revision=branch,
                repo_type=REPO_TYPE,
                create_pr=create_pr,
            )
        except Exception:  # an HTTP error, or an LFS upload's failure wrapped in a RuntimeError
            if is_new_branch:  # leave no empty v<N> branch behind: get_kernel would find it
                with contextlib.suppress(Exception):  # the failure above is the one to report
                    api.delete_branch(repo_id, branch=branch, repo_type=REPO_TYPE)
            raise
    return PushResult(
        repo_id=repo_id,
        branch=branch,
        commit_oid=getattr(info, "oid", None),
        commit_url=getattr(info, "commit_url", None),
        pr_url=getattr(info, "pr_url", None),
        added=sorted(uploads) + ["README.md"],
        deleted=deletes,
        variants=sorted(plan.variants),
    )
