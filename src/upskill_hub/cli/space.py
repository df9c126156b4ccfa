"""``upskill-hub space``: run the Gradio Space locally, or deploy it as a Space repo.

Thin commands over :mod:`upskill_hub.space` (Gradio is imported only inside them).
"""

from __future__ import annotations

import os
from pathlib import Path

import typer

from upskill_hub.cli._output import make_console
from upskill_hub.errors import UpskillError

app = typer.Typer(
    help="Browse skills and results, and run evaluations, in a Gradio app (local or as a Space).",
    no_args_is_help=True,
)
console = make_console()
err_console = make_console(stderr=True)


@app.command("run")
def run_cmd(
    repo: str | None = typer.Option(
        None,
        "--repo",
        "-r",
        help="Skills dataset: Hub repo OWNER/NAME or a local folder (default: $SKILLS_REPO).",
    ),
    port: int | None = typer.Option(
        None, "--port", "-p", help="Port (default: $GRADIO_SERVER_PORT or 7860)."
    ),
    host: str | None = typer.Option(
        None, "--host", help="Address to bind (default: $GRADIO_SERVER_NAME or 127.0.0.1)."
    ),
    allow_private_urls: bool = typer.Option(
        False,
        "--allow-private-urls",
        help="Let evaluations call endpoints on internal addresses (localhost, LAN). Off by default.",
    ),
) -> None:
    """Launch the Space on this machine.

    Example: upskill-hub space run --repo me/my-skills --port 7860
    """
    if port is not None and not 0 < port < 65536:
        raise UpskillError(f"--port must be between 1 and 65535, got {port}")
    if allow_private_urls:
        from upskill_hub.space.safety import ALLOW_PRIVATE_ENV

        os.environ[ALLOW_PRIVATE_ENV] = "1"
    from upskill_hub.space.ui import default_repo, launch

    chosen = repo or default_repo()
    if chosen:
        from upskill_hub.space.data import check_source

        check_source(chosen)
    else:
        err_console.print(
            "[yellow]No skills repo set: pass --repo OWNER/NAME or set SKILLS_REPO (you can type one in the app).[/]"
        )
    launch(
        chosen or None,
        host=host,
        port=port,
        echo=lambda line: console.print(line, markup=False, highlight=False),
    )


@app.command("deploy")
def deploy_cmd(
    repo: str | None = typer.Option(
        None, "--repo", "-r", help="Space repo to create or update, OWNER/SPACE."
    ),
    skills_repo: str | None = typer.Option(
        None,
        "--skills-repo",
        help="Dataset the Space shows by default, OWNER/NAME (else set SKILLS_REPO there).",
    ),
    private: bool = typer.Option(False, "--private", help="Create the Space as private."),
    out: Path | None = typer.Option(
        None,
        "--out",
        help="Only write the Space's files into this folder (new, empty, or one it wrote before); upload nothing.",
    ),
    vendor: bool = typer.Option(
        True, "--vendor/--no-vendor", help="With --out: include the upskill_hub source."
    ),
) -> None:
    """Push the app as a Gradio Space that runs from the uploaded files (one commit).

    Uploads app.py, README.md (Space config), requirements.txt and the upskill_hub
    source. Uses HF_TOKEN or your `hf auth login` token.

    Example: upskill-hub space deploy --repo me/upskill-space --skills-repo me/my-skills
    """
    from upskill_hub.space.deploy import deploy, write_space_files

    if out is not None:
        write_space_files(out, skills_repo=skills_repo, vendor=vendor)
        console.print(f"[green]✓[/] Wrote the Space files to {out}")
        return
    if not repo:
        raise UpskillError("pass --repo OWNER/SPACE (or --out FOLDER to only write the files)")
    with err_console.status(f"Deploying {repo}..."):
        url = deploy(repo, skills_repo=skills_repo, private=private)
    console.print(f"[green]✓[/] Deployed {repo}: {url}")


def register(root: typer.Typer) -> None:
    """Add the ``space`` command group to the root app."""
    root.add_typer(app, name="space")
