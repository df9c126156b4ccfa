"""CLI command group ``hub``: run the local Hub-compatible server."""

from __future__ import annotations

from pathlib import Path

import typer

app = typer.Typer(
    help="A local Hugging Face Hub-compatible server, for offline work, air-gapped teams and tests.",
    no_args_is_help=True,
)

_SERVE_HELP = """Serve a local Hugging Face Hub-compatible API with its state on disk (--root).

For offline work, air-gapped teams and tests. The unmodified huggingface_hub, datasets and
kernels clients (and `upskill-hub push` / `pull`) talk to it when you point them at it:

\b
    export HF_ENDPOINT=http://127.0.0.1:8765
    export HF_HUB_DISABLE_XET=1   # LFS through the Git LFS API, not Xet
    export HF_TOKEN=<a token given with --token>

Set HF_ENDPOINT before the clients start (they read it at import). Repo types: model,
dataset, space, kernel. State (repos, commits, files) survives a restart.

Tokens: set UPSKILL_HUB_WRITE_TOKENS / UPSKILL_HUB_READ_TOKENS (comma-separated) or pass
--token-file FILE (lines 'write <token>' / 'read <token>', mode 600). --token T and
--read-token T also work but show the token to anyone running `ps`. Without any write
token, ANY bearer token may write (local development only). Writes without an accepted
token are refused; private repos are invisible without one. Tokens are never logged.

Jobs (--jobs; HfApi.run_job, `upskill-hub eval --jobs`): each Job's command runs here as a
local process, as the user running the server, in its own folder under --root (the image is
recorded, not pulled; `python` and `upskill-hub` are this install), with the Job's env and
secrets. Anyone holding a write token can then run commands on this machine, so --jobs needs
write tokens and is off by default. Secrets stay in memory and are masked in logs. At most
--max-jobs run at once; the rest wait in SCHEDULING. Jobs still running when the server
stops are killed and end as ERROR.

--root must be a new or empty folder, or one a local Hub made before (it carries a
.upskill-hub-store marker): any other folder is refused, so the server never writes into,
or sweeps, files of yours.

Example: upskill-hub hub serve --root ./hub --port 8765 --token-file tokens.txt
"""


@app.command("serve", help=_SERVE_HELP)
def serve(
    root: Path = typer.Option(
        None,
        "--root",
        metavar="DIR",
        help="Folder for the server's state: new, empty or a local Hub's (default: user data dir).",
    ),
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on (0.0.0.0 for a LAN)."),
    port: int = typer.Option(
        8765, "--port", help="TCP port; 0 picks a free one (the URL printed says which)."
    ),
    token: list[str] = typer.Option(
        [],
        "--token",
        metavar="TOKEN",
        help="Token allowed to write (repeatable). None: any bearer token may write.",
    ),
    read_token: list[str] = typer.Option(
        [], "--read-token", metavar="TOKEN", help="Read-only token (repeatable)."
    ),
    token_file: Path = typer.Option(
        None, "--token-file", metavar="FILE", help="Tokens, one 'write <token>' or 'read <token>' per line."
    ),
    trusted_publisher: list[str] = typer.Option(
        [],
        "--trusted-publisher",
        metavar="ORG",
        help="Organization reported as a trusted kernel publisher (kernels.get_kernel checks it).",
    ),
    user: str = typer.Option(
        "user", "--user", help="User name reported by whoami and used as default namespace."
    ),
    jobs: bool = typer.Option(
        False,
        "--jobs",
        help="Let write-token holders run Jobs: commands on this machine (needs write tokens).",
    ),
    max_jobs: int = typer.Option(
        8, "--max-jobs", metavar="N", help="Jobs running at once (more wait in SCHEDULING)."
    ),
) -> None:
    """Thin wrapper: build the config, print where to point clients, run uvicorn."""
    import logging

    import uvicorn
    from platformdirs import user_data_path

    from upskill_hub.cli._output import make_console
    from upskill_hub.errors import UpskillError
    from upskill_hub.localhub.app import ServerConfig, create_app

    # Scripts read the `export HF_ENDPOINT=…` line from a pipe: it must stay one line.
    err = make_console(stderr=True, highlight=False)
    if not 1 <= max_jobs <= 256:
        raise UpskillError(f"--max-jobs must be between 1 and 256, got {max_jobs}")
    root = (root or user_data_path("upskill-hub") / "hub-server").expanduser()
    # Before anything is written: a folder of the user's own is refused, never swept.
    from upskill_hub.localhub.storage import claim_root

    claim_root(root)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UpskillError(f"cannot use --root {root}: {exc.strerror}") from None
    if not 0 <= port < 65536:
        raise UpskillError(f"--port must be between 0 and 65535, got {port}")
    from upskill_hub.localhub.jobs import JobLimits
    from upskill_hub.localhub.tokens import collect

    if token or read_token:
        err.print("[yellow]Tokens on the command line are visible in `ps`: prefer --token-file or "
                  "UPSKILL_HUB_WRITE_TOKENS / UPSKILL_HUB_READ_TOKENS.[/]")  # fmt: skip
    write_tokens, read_tokens = collect(list(token), list(read_token), token_file)
    if jobs and not write_tokens:
        raise UpskillError(
            "--jobs lets write-token holders run commands on this machine: give write tokens "
            "(UPSKILL_HUB_WRITE_TOKENS or --token-file) so that not every caller can"
        )
    config = ServerConfig(
        root=root,
        write_tokens=write_tokens,
        read_tokens=read_tokens,
        trusted_publishers=tuple(trusted_publisher),
        user=user,
        jobs_enabled=jobs,
        job_limits=JobLimits(max_running=max_jobs),
    )
    # Bind before saying "serving": a busy port is one line, not "serving…" then uvicorn's
    # Errno 98. The same socket is then served, so nothing can take the port in between, and
    # --port 0 prints the port the OS picked.
    sock = _listen(host, port)
    port = sock.getsockname()[1]
    url = f"http://{host}:{port}"
    err.print(f"[bold]Local Hub[/] serving [cyan]{root}[/] at [cyan]{url}[/]")
    err.print(f"Point clients at it: [green]export HF_ENDPOINT={url} HF_HUB_DISABLE_XET=1[/]")
    if not write_tokens:
        err.print("[yellow]No write token given: any bearer token may write (local development only).[/]")
    else:
        err.print(f"{len(write_tokens)} write token(s), {len(read_tokens)} read-only token(s) accepted.")
    if jobs:
        err.print(
            f"[yellow]Jobs enabled: write-token holders run commands on this machine "
            f"(at most {max_jobs} at once).[/]"
        )
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    # Our middleware logs method, path and status only; uvicorn's access log is off.
    # Followed Job logs keep connections open: after 3s of graceful shutdown they are cut, then
    # the app's lifespan stops the Jobs. Date headers come from the app (exact, see app.py).
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(config),
            host=host,
            port=port,
            access_log=False,
            log_level="warning",
            date_header=False,
            timeout_graceful_shutdown=3,
        )
    )
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()


def _listen(host: str, port: int):
    """A listening socket on ``host:port``, or one ``UpskillError`` line saying why not."""
    import errno
    import socket

    from upskill_hub.errors import UpskillError

    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise UpskillError(f"cannot listen on {host}:{port}: unknown host ({exc.strerror})") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(1)
    except OSError as exc:
        sock.close()
        hint = (
            "another program is using that port: stop it or pick another --port"
            if exc.errno == errno.EADDRINUSE
            else (exc.strerror or str(exc))
        )
        raise UpskillError(f"cannot listen on {host}:{port}: {hint}") from None
    return sock


def register(root: typer.Typer) -> None:
    """Add the ``hub`` command group to the root app."""
    root.add_typer(app, name="hub")
