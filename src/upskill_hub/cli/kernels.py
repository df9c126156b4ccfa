"""``upskill-hub kernels``: init, check, build, push and verify Hub kernels.

Thin front end over :mod:`upskill_hub.kernels`: parse options, call the library, render.
Progress and compiler errors go to stderr; results to stdout.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from upskill_hub.cli._formats import OutputFormat, format_option, json_option, printer
from upskill_hub.cli._output import make_console
from upskill_hub.errors import UpskillError

app = typer.Typer(
    help="Build kernels in kernel-builder layout, check them, publish them as Hub kernel repos and verify "
    "that `kernels.get_kernel` loads them.",
    no_args_is_help=True,
)
console = make_console()
err_console = make_console(stderr=True)


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


@app.command("init")
def init(
    name: str = typer.Argument(..., help="Kernel name: lowercase letters, digits and dashes (e.g. my-relu)."),
    backends: str = typer.Option(
        "cpu", "--backends", "-b", help="Comma-separated: cpu, cuda (or noarch for a pure-PyTorch kernel)."
    ),
    output: Path | None = typer.Option(
        None, "--output", "-o", help="Project folder, new or empty (default: ./NAME)."
    ),
    license: str = typer.Option("Apache-2.0", "--license", help="SPDX license id written to build.toml."),
    repo_id: str | None = typer.Option(
        None, "--repo-id", help="Hub repo (OWNER/NAME) to record in build.toml."
    ),
    fmt: OutputFormat = format_option(),
    as_json: bool = json_option(),
) -> None:
    """Create a kernel project (build.toml, torch binding, kernel sources, tests, flake.nix).

    Example: upskill-hub kernels init my-relu --backends cuda
    """
    from upskill_hub.kernels.scaffold import init_project

    out = printer(fmt, as_json)
    dest = output or Path(name)
    files = init_project(name, dest, backends=_split(backends), license=license, repo_id=repo_id)
    if not out.human:
        out.result(
            str(dest), json_data={"path": str(dest), "files": list(files)}, path=str(dest), files=len(files)
        )
        return
    console.print(f"[green]✓[/] created {dest} ({len(files)} files)")
    for rel in files:
        console.print(f"  {rel}", markup=False)
    console.print(
        f"next: upskill-hub kernels build {dest} --builder local && pytest {dest}/tests", markup=False
    )


@app.command("check")
def check(
    path: Path = typer.Argument(Path("."), help="Kernel project folder (with build.toml)."),
    manylinux: str | None = typer.Option(
        None,
        "--manylinux",
        help="ABI policy for .so files (default: manylinux_2_28; local builds: their glibc).",
    ),
    nvcc: str | None = typer.Option(
        None,
        "--nvcc",
        help="Also compile the CUDA sources with nvcc for these capabilities (e.g. 9.0 or 8.0,9.0); no GPU needed.",
    ),
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="Name each locally built variant that needs this machine's glibc."
    ),
    fmt: OutputFormat = format_option(),
    as_json: bool = json_option(),
) -> None:
    """Check build.toml, the layout and the built variants (and, with --nvcc, compile); exit 1 on problems.

    The last line is the one verdict: a ✓ line when everything passed, an Error line otherwise.

    Example: upskill-hub kernels check kernels_examples/rmsnorm
    """
    from upskill_hub._util.problems import Problem
    from upskill_hub.kernels.check import check_project, has_errors

    out = printer(fmt, as_json)
    as_json = not out.human  # agent and quiet are for programs too: no compiler chatter
    problems = check_project(path, manylinux=manylinux)
    compiled: list[str] = []
    failure: Exception | None = None
    if nvcc and not has_errors(problems):
        compiled, failure = _nvcc_check(path, _split(nvcc), quiet=as_json)
    if as_json:
        if failure is not None:
            problems.append(Problem("nvcc", nvcc or "", str(failure)))
        rows = [p.to_dict() for p in problems]
        if out.mode is OutputFormat.quiet:  # quiet: only the verdict (the exit code) and errors
            for p in problems:
                if p.severity == "error":
                    err_console.print(str(p), markup=False, soft_wrap=True)
        else:
            out.table(rows, ["severity", "path", "field", "message"], json_data=rows)
        raise typer.Exit(1 if has_errors(problems) else 0)
    local_glibc = [p for p in problems if _is_local_glibc_note(p)]
    for p in problems:
        if p.severity == "error":
            err_console.print(str(p), markup=False, soft_wrap=True)
        elif verbose or p not in local_glibc:
            err_console.print(f"warning: {p}", markup=False, soft_wrap=True, style="yellow")
    if local_glibc and not verbose:
        err_console.print(LOCAL_GLIBC_NOTE, markup=False, soft_wrap=True, style="yellow")
    if has_errors(problems):
        n = sum(p.severity == "error" for p in problems)
        raise UpskillError(f"{path}: {n} problem(s), listed above")
    if failure is not None:
        raise failure
    built = path / "build"
    count = (
        len([d for d in built.iterdir() if d.is_dir() and not d.name.startswith(".")])
        if built.is_dir()
        else 0
    )
    line = f"[green]✓[/] {path}: build.toml and {count} built variant(s) OK"
    if nvcc:
        line += f"; nvcc compiled {len(compiled)} source(s) for {', '.join(_split(nvcc))}"
    console.print(line, soft_wrap=True)


#: Said once, instead of one "abi" warning per variant after every local build: what a
#: local build means for where the kernel loads is not a problem to fix in the project.
LOCAL_GLIBC_NOTE = (
    "note: built with the local builder, so it needs this machine's glibc or newer to load "
    "(fine here); for a kernel that loads on any manylinux_2_28 machine, build with --builder nix "
    "(--verbose names each variant)"
)


def _is_local_glibc_note(problem) -> bool:
    """The check's warning that a local build targets this machine's glibc, not manylinux_2_28.

    It is the check's only ABI finding that is a warning (symbol and stable-ABI findings
    are errors).
    """
    return problem.field == "abi" and problem.severity == "warning"


def _nvcc_check(path: Path, caps: list[str], *, quiet: bool) -> tuple[list[str], Exception | None]:
    """Compile the CUDA sources; return (compiled sources, the one-line error or None).

    The compiler's error lines are printed here, once; the returned error only names the
    step that failed so the final line does not repeat them.
    """
    from upskill_hub.kernels.builders.local import BuildError, compile_cuda_check

    try:
        with err_console.status(f"compiling CUDA sources for {', '.join(caps)}…") as status:
            return compile_cuda_check(path, caps, progress=status.update), None
    except BuildError as exc:
        if not quiet:
            for line in exc.details:
                err_console.print(line, markup=False, soft_wrap=True, style="red")
        return [], UpskillError(f"nvcc ({', '.join(caps)}): {exc.summary() if not quiet else exc}")
    except UpskillError as exc:
        return [], exc


@app.command("update")
def update(
    path: Path = typer.Argument(Path("."), help="Kernel project folder whose build.toml has no edition."),
    fmt: OutputFormat = format_option(),
    as_json: bool = json_option(),
) -> None:
    """Rewrite a legacy build.toml (no edition) as edition 5, keeping its comments and layout.

    Example: upskill-hub kernels update my-relu
    """
    from upskill_hub.kernels.buildtoml import validate_build_toml
    from upskill_hub.kernels.legacy import update_project

    out = printer(fmt, as_json)
    changes = update_project(path)
    if not out.human:
        errors = (
            [p.to_dict() for p in validate_build_toml(path)[0] if p.severity == "error"] if changes else []
        )
        data = {"path": f"{path}/build.toml", "changed": bool(changes), "changes": changes, "errors": errors}
        out.result(
            data["path"],
            json_data=data,
            path=data["path"],
            changed=bool(changes),
            changes="; ".join(changes) or None,
            errors=len(errors),
        )
        return
    if not changes:
        console.print(
            f"{path}/build.toml is already edition 5: nothing changed", markup=False, soft_wrap=True
        )
        return
    errors = [p for p in validate_build_toml(path)[0] if p.severity == "error"]
    console.print(
        f"[green]✓[/] {path}/build.toml upgraded to edition 5: {'; '.join(changes)}", soft_wrap=True
    )
    if errors:
        console.print(
            f"note: {len(errors)} other problem(s) remain; run upskill-hub kernels check {path}",
            markup=False,
            soft_wrap=True,
        )


@app.command("build")
def build(
    path: Path = typer.Argument(Path("."), help="Kernel project folder (with build.toml)."),
    builder: str = typer.Option(
        "local",
        "--builder",
        help="local: this machine's variant(s) with torch's compiler flags; nix: all variants.",
    ),
    variant: str | None = typer.Option(None, "--variant", help="Build only this variant."),
    jobs: int | None = typer.Option(None, "--jobs", "-j", help="Parallel compile jobs (local builder)."),
    fmt: OutputFormat = format_option(),
    as_json: bool = json_option(),
) -> None:
    """Build variants into PATH/build/<variant>/ (a failed build keeps the previous build/).

    Example: upskill-hub kernels build kernels_examples/rmsnorm --builder local
    """
    out = printer(fmt, as_json)
    if builder not in ("local", "nix"):
        raise UpskillError(f"unknown --builder {builder!r}: use local or nix")
    if builder == "nix":
        from upskill_hub.kernels.builders.nix import build_nix

        names = build_nix(path, variant=variant, progress=lambda line: err_console.print(line, markup=False))
        if not out.human:
            out.table([{"variant": n} for n in names], ["variant"])
            return
        console.print(f"[green]✓[/] build/ now holds: {', '.join(names) or 'nothing'}")
        return

    from upskill_hub.kernels.builders.local import BuildError, build_local

    with err_console.status("building…") as status:

        def progress(msg: str) -> None:
            status.update(msg)
            if not msg.startswith("compiling "):
                err_console.print(f"  {msg}", markup=False, style="dim")

        try:
            built = build_local(path, variant=variant, progress=progress, jobs=jobs)
        except BuildError as exc:
            for line in exc.details:
                err_console.print(line, markup=False, soft_wrap=True, style="red")
            raise UpskillError(exc.summary()) from None
    if not out.human:
        rows = [
            {"variant": b.variant, "path": str(b.path), "seconds": round(b.seconds, 2), "files": b.files}
            for b in built
        ]
        out.table(rows, ["variant", "path", "seconds"], json_data=rows)
        return
    table = Table(title="built variants")
    table.add_column("variant")
    table.add_column("path")
    table.add_column("seconds", justify="right")
    for b in built:
        table.add_row(b.variant, str(b.path), f"{b.seconds:.1f}")
    console.print(table)


@app.command("push")
def push(
    path: Path = typer.Argument(Path("."), help="Kernel project folder with a built build/."),
    repo: str | None = typer.Option(
        None,
        "--repo",
        help="Hub kernel repo OWNER/NAME, created if missing (default: build.toml general.hub.repo-id).",
    ),
    version: int | None = typer.Option(
        None, "--version", help="Branch v<N> (default: build.toml general.version)."
    ),
    private: bool = typer.Option(False, "--private", help="Create the repo as private."),
    create_pr: bool = typer.Option(False, "--create-pr", help="Open a pull request instead of committing."),
    fmt: OutputFormat = format_option(),
    as_json: bool = json_option(),
) -> None:
    """Upload build/ to a Hub kernel repo on branch v<N> in one commit, with a card and benchmarks.

    Example: upskill-hub kernels push kernels_examples/rmsnorm --repo OWNER/rmsnorm
    """
    from upskill_hub.hub.client import quiet_progress
    from upskill_hub.kernels.card import load_call
    from upskill_hub.kernels.push import push_kernel

    out = printer(fmt, as_json)
    # huggingface_hub's upload bars would glue themselves to the one-line error of a failed push.
    with err_console.status(f"pushing to {repo or 'the repo in build.toml'}…"), quiet_progress():
        res = push_kernel(path, repo, version=version, private=private, create_pr=create_pr)
    if not out.human:
        data = {
            "repo": res.repo_id,
            "branch": res.branch,
            "variants": list(res.variants),
            "added": len(res.added),
            "deleted": len(res.deleted),
            "commit_url": res.commit_url,
            "pr_url": res.pr_url,
        }
        out.result(
            res.repo_id,
            json_data=data,
            **{k: v for k, v in data.items() if k != "variants"},
            variants=",".join(res.variants),
        )
        return
    console.print(
        f"[green]✓[/] {res.repo_id}@{res.branch}: {len(res.variants)} variant(s), "
        f"{len(res.added)} file(s) uploaded, {len(res.deleted)} stale file(s) removed"
    )
    for v in res.variants:
        console.print(f"  {v}", markup=False)
    if res.pr_url:
        console.print(f"pull request: {res.pr_url}", markup=False)
    elif res.commit_url:
        console.print(f"commit: {res.commit_url}", markup=False)
    console.print(f"load it: {load_call(res.repo_id, int(res.branch[1:]), module='kernels.')}", markup=False)


@app.command("verify")
def verify(
    repo_id: str = typer.Argument(..., help="Hub kernel repo OWNER/NAME."),
    version: int | None = typer.Option(None, "--version", help="Kernel version (branch v<N>); default 1."),
    revision: str | None = typer.Option(
        None, "--revision", help="A branch, tag or commit instead of --version."
    ),
    trust_remote_code: bool = typer.Option(
        False, "--trust-remote-code", help="Load even if the publisher is not a trusted kernel publisher."
    ),
    project: Path | None = typer.Option(
        None, "--project", help="Run this project's tests/ (default: the tests/ pushed to the repo)."
    ),
    no_tests: bool = typer.Option(False, "--no-tests", help="Only load the kernel and check its ops."),
    fmt: OutputFormat = format_option(),
    as_json: bool = json_option(),
) -> None:
    """Load the kernel with kernels.get_kernel in a fresh process and run the project's tests on it.

    Example: upskill-hub kernels verify OWNER/rmsnorm --trust-remote-code
    """
    from upskill_hub.kernels.verify import verify_kernel

    out = printer(fmt, as_json)

    with err_console.status(f"loading {repo_id} in a fresh process…"):
        res = verify_kernel(
            repo_id,
            version=version,
            revision=revision,
            trust_remote_code=trust_remote_code,
            project=project,
            tests=not no_tests,
        )
    if not out.human:
        data = {
            "repo": repo_id,
            "variant": res.variant,
            "backend": res.backend,
            "op_namespace": res.op_namespace,
            "functions": list(res.functions),
            "ops": list(res.ops),
            "tests_source": res.tests_source,
            "tests": dict(res.tests),
            "tests_ok": None if no_tests or res.tests_source is None else res.ok,
        }
        flat = {k: v for k, v in data.items() if k not in ("functions", "ops", "tests")}
        flat["tests"] = ",".join(f"{k}:{n}" for k, n in res.tests.items()) or None
        out.result(repo_id, json_data=data, **flat)
        if data["tests_ok"] is False:
            raise UpskillError(f"{repo_id}: the kernel's tests failed")
        return
    console.print(
        f"[green]✓[/] loaded {repo_id}: variant {res.variant} ({res.backend}), ops in {res.op_namespace}"
    )
    console.print(f"  functions: {', '.join(res.functions) or '-'}", markup=False)
    console.print(f"  ops: {', '.join(res.ops) or '-'}", markup=False)
    if no_tests:
        return
    if res.tests_source is None:
        console.print("[yellow]no tests found[/] (push a tests/ folder or pass --project)")
        return
    summary = ", ".join(f"{n} {k}" for k, n in res.tests.items()) or "no tests ran"
    if res.ok:
        console.print(f"[green]✓[/] tests ({res.tests_source}): {summary}")
        return
    err_console.print(res.test_output, markup=False)
    raise UpskillError(f"{repo_id}: the kernel's tests failed ({summary})")


def register(root: typer.Typer) -> None:
    """Add the ``kernels`` command group to the root app."""
    root.add_typer(app, name="kernels")
