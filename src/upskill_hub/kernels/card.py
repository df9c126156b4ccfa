"""The README.md (model card) of a Hub kernel repo.

The card is what a person sees before loading a kernel: which functions it exports,
which build variants exist (so they know whether it loads on their machine), the
license, and the one line that loads it. ``library_name: kernels`` in the YAML header is
what makes the Hub treat the repo as a kernel. Exported functions are read from the
package source with ``ast`` rather than by importing it, so building the card never
runs kernel code.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import yaml

from upskill_hub.kernels.buildtoml import BuildConfig
from upskill_hub.kernels.variants import parse_variant_name


@dataclass
class ExportedFunction:
    name: str
    signature: str
    summary: str
    example: str  # a call with the required arguments, e.g. ``rms_norm(x, weight)``


def _signature(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    args = ast.unparse(fn.args)
    return f"{fn.name}({args})"


def exported_functions(package_init: Path) -> list[ExportedFunction]:
    """Public functions of the package: ``__all__`` if it is a literal, else public defs."""
    try:
        tree = ast.parse(package_init.read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return []
    defs = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}
    names: list[str] | None = None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                break
            if isinstance(value, list | tuple):
                names = [str(v) for v in value]
    if names is None:
        names = [n for n in defs if not n.startswith("_")]
    out = []
    for name in names:
        fn = defs.get(name)
        if fn is None:
            continue  # re-exported submodules and constants are not functions
        doc = ast.get_docstring(fn) or ""
        positional = fn.args.posonlyargs + fn.args.args
        required = positional[: len(positional) - len(fn.args.defaults)]
        example = f"{name}({', '.join(a.arg for a in required)})"
        out.append(
            ExportedFunction(name, _signature(fn), doc.strip().splitlines()[0] if doc else "", example)
        )
    return out


def hub_license(spdx: str) -> dict[str, str]:
    """Hub card ``license`` fields for an SPDX id (the Hub uses lower-case ids)."""
    known = {
        "apache-2.0",
        "mit",
        "bsd-3-clause",
        "bsd-2-clause",
        "gpl-3.0",
        "lgpl-3.0",
        "mpl-2.0",
        "cc-by-4.0",
    }
    lowered = spdx.lower()
    if lowered in known:
        return {"license": lowered}
    return {"license": "other", "license_name": lowered.replace(" ", "-")}


def load_call(repo_id: str, version: int, *, module: str = "") -> str:
    """The ``get_kernel`` call that loads the pushed kernel, as the user can paste it.

    ``trust_remote_code=True``: unless the Hub marks the owner as a trusted kernel
    publisher, ``kernels`` refuses the repo without it ("not from a trusted publisher"),
    and a freshly pushed repo is almost always someone's own. ``module`` prefixes the
    call (``"kernels."``) where ``get_kernel`` was not imported by name. The CLI's
    ``load it:`` line and the card's example both come from here.
    """
    return f'{module}get_kernel("{repo_id}", version={version}, trust_remote_code=True)'


def render_card(
    cfg: BuildConfig,
    *,
    repo_id: str,
    version: int,
    variants: dict[str, dict],
    benchmarks: list[str],
) -> str:
    """README.md for ``repo_id`` on branch ``v<version>``; ``variants`` maps name -> metadata."""
    header = {
        "library_name": "kernels",
        **hub_license(cfg.license),
        "tags": [
            "kernels",
            "kernel-builder",
            *sorted({m.get("backend", {}).get("type", "") for m in variants.values()} - {""}),
        ],
    }
    functions = exported_functions(cfg.package_dir / "__init__.py")
    lines = ["---", yaml.safe_dump(header, sort_keys=False).strip(), "---", "", f"# {cfg.name}", ""]
    lines += [
        f"A compute kernel for PyTorch, built in [kernel-builder](https://github.com/huggingface/kernels) "
        f"layout and published with upskill-hub. License: `{cfg.license}`.",
        "",
        "## How to use",
        "",
        "```python",
        "import torch",
        "from kernels import get_kernel",
        "",
        f"# trust_remote_code=True runs this repo's code; it may be left out once the Hub marks "
        f"{repo_id.split('/')[0]} as a trusted kernel publisher",
        f"kernel = {load_call(repo_id, version)}",
    ]
    if functions:
        lines.append(f"y = kernel.{functions[0].example}")
    lines += [
        "```",
        "",
        "`get_kernel` picks the variant built for your torch version, backend, CPU and OS.",
        "",
    ]
    lines += ["## Functions", ""]
    if functions:
        for fn in functions:
            lines.append(f"- `{fn.signature}`" + (f": {fn.summary}" if fn.summary else ""))
    else:
        lines.append("The package exports no functions (see its `__init__.py`).")
    lines += ["", "## Build variants", "", "| variant | backend | archs | built by |", "|---|---|---|---|"]
    for name in sorted(variants):
        meta = variants[name]
        info = parse_variant_name(name)
        backend = meta.get("backend", {})
        archs = ", ".join(backend.get("archs", []) or []) or "-"
        builder = (meta.get("provenance") or {}).get("kernel-builder", {}).get("version", "kernel-builder")
        kind = f"{backend.get('type', '?')}{' (noarch)' if info and info.noarch else ''}"
        lines.append(f"| `{name}` | {kind} | {archs} | {builder} |")
    local = sorted(
        f"`{n}` needs glibc >= {m['upskill-hub-build']['manylinux'].removeprefix('manylinux_').replace('_', '.')}"
        for n, m in variants.items()
        if isinstance(m.get("upskill-hub-build"), dict) and m["upskill-hub-build"].get("manylinux")
    )
    if local:
        lines += ["", "Built locally (not in Nix): " + "; ".join(local) + "."]
    if benchmarks:
        lines += ["", "## Benchmarks", ""]
        lines += [f"- [`{b}`]({b})" for b in benchmarks]
    lines.append("")
    return "\n".join(lines)
